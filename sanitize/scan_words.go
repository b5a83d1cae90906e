package sanitize

import "math/bits"

// Word patterns.
//
// The skeleton is read as a stream of tokens (see scanWords). A pattern is a
// sequence of steps; each step is a token class and the greatest distance,
// in tokens, from the token that matched the step before. Matching keeps,
// for each step, the index of the latest token that completed the pattern
// up to that step, which is enough to decide whether any bounded-gap
// occurrence exists: time is linear in the number of tokens.

// feature names a match that counts only together with another one: the
// parts of an instruction to call a tool or to leak data (see combine).
type feature uint16

const (
	fToolCall  feature = 1 << iota // call the send_message tool; run `cmd`
	fAddress                       // "AI agent:", "Assistant,", whoever …
	fUrgent                        // must, immediately, silently; your next …
	fBeforeAns                     // before answering, before you reply
	fSecrecy                       // don't tell the user; the user already approved
	fLeak                          // send … password; cookies … post
	fDest                          // a URL, "to …@…"
	fReplyTo                       // … your reply
	fMust                          // must
)

type step struct {
	class tokClass
	gap   int
}

// wordPattern reports set (and, unless weak, pStrong) or records feat when
// its steps match. A pattern marked unlessNeg does not start on a word
// right after a negation ("never send your password").
type wordPattern struct {
	set       patternSet
	feat      feature
	weak      bool
	unlessNeg bool
	steps     []step
}

// sysCue is what makes a "System:" line an instruction rather than a log
// line: it addresses the model or speaks of instructions.
const sysCue = cYou | cYour | cAddressee | cVerb | cInstr | cStrongNoun | cUrgent | cMust | cApproved

var wordPatterns = [...]wordPattern{
	// ignore (all) previous instructions; forget your instructions. With a
	// weaker noun than instructions or prompt ("ignore the previous lint
	// rule", "disregard the above text") the finding is weak.
	{set: pIgnorePrevious, steps: []step{{cVerb, 0}, {cQual, 4}, {cStrongNoun, 3}}},
	{set: pIgnorePrevious, weak: true, steps: []step{{cVerb, 0}, {cQual, 4}, {cNoun, 3}}},
	// ignore all instructions; forget your programming.
	{set: pIgnorePrevious, steps: []step{{cVerb, 0}, {cWeakQual, 2}, {cStrongNoun, 2}}},
	// ignore the instructions above; ignora las instrucciones anteriores;
	// forget the rules you were given earlier.
	{set: pIgnorePrevious, steps: []step{{cVerb, 0}, {cStrongNoun, 3}, {cQual, 2}}},
	{set: pIgnorePrevious, weak: true, steps: []step{{cVerb, 0}, {cNoun, 3}, {cQual, 4}}},
	// do not follow the previous instructions; do not follow the
	// instructions (weak: "do not follow the instructions below on macOS").
	{set: pIgnorePrevious, steps: []step{{cNeg, 0}, {cObey, 2}, {cQual, 4}, {cNoun, 3}}},
	{set: pIgnorePrevious, weak: true, steps: []step{{cNeg, 0}, {cObey, 2}, {cStrongNoun, 3}}},
	// ignore everything above / before.
	{set: pIgnorePrevious, steps: []step{{cVerb, 0}, {cEverything, 2}, {cBefore, 2}}},
	// Human: / Assistant: at the start of a line.
	{set: pRoleTag, steps: []step{{cNL, 0}, {cRole, 1}, {cColon, 1}}},
	// SYSTEM: you … at the start of a line (a bare "System:" is a log line).
	{set: pRoleTag | pFakeSystem, steps: []step{{cNL, 0}, {cSys, 1}, {cColon, 1}, {sysCue, 6}}},
	// [SYSTEM NOTICE], [ADMIN MESSAGE].
	{set: pFakeSystem, steps: []step{{cLBrack, 0}, {cSys, 1}, {cSysNoun, 1}, {cRBrack, 2}}},
	// SYSTEM NOTICE: / System override: at the start of a line.
	{set: pFakeSystem, steps: []step{{cNL, 0}, {cSys, 1}, {cSysNoun, 1}, {cColon, 1}}},
	// Your real task is …; your actual instructions are …; the operator has
	// changed your instructions.
	{set: pFakeSystem, steps: []step{{cYour, 0}, {cNew, 1}, {cInstr, 1}}},
	{set: pFakeSystem, steps: []step{{cChanged, 0}, {cYour, 1}, {cStrongNoun, 1}}},
	// IMPORTANT: new instructions.
	{set: pFakeSystem, steps: []step{{cAttn, 0}, {cNew, 3}, {cInstr, 1}}},
	// New instructions: at the start of a line.
	{set: pFakeSystem, steps: []step{{cNL, 0}, {cNew, 1}, {cInstr, 1}, {cColon, 1}}},
	// You are now DAN / in developer mode / an unrestricted AI.
	{set: pFakeSystem, steps: []step{{cYou, 0}, {cAre, 1}, {cNow, 1}, {cPersona, 3}}},
	// God mode enabled.
	{set: pFakeSystem, steps: []step{{cModeWord, 0}, {cMode, 1}, {cEnabled, 2}}},
	// Developer Mode … policies / output / ChatGPT (a browser's developer
	// mode has none of these nearby).
	{set: pFakeSystem, steps: []step{{cDev, 0}, {cMode, 1}, {cAddressee | cLimits | cEverything | cReply, 8}}},
	{set: pFakeSystem, steps: []step{{cAddressee, 0}, {cDev, 3}, {cMode, 1}}},
	// Do Anything Now; stay in character.
	{set: pFakeSystem, steps: []step{{cDo, 0}, {cEverything, 1}, {cNow, 1}}},
	{set: pFakeSystem, steps: []step{{cStay, 0}, {cCharacter, 2}}},
	// without any restrictions; no filters.
	{set: pFakeSystem, weak: true, steps: []step{{cWithout, 0}, {cLimits, 4}}},
	// System prompt override / updated.
	{set: pFakeSystem, steps: []step{{cSys, 0}, {cPrompt, 1}, {cChanged, 2}}},
	// END OF SYSTEM PROMPT.
	{set: pFakeSystem, steps: []step{{cEnd, 0}, {cSys, 2}, {cPrompt, 1}}},
	// Repeat your system prompt; print all your instructions (not "send
	// one as the prompt": the qualifiers of other languages are no cue).
	{set: pExfiltration, steps: []step{{cLeak, 0}, {cYour | cEverything, 2}, {cPrompt | cSys, 2}}},
	// The parts of tool and leak instructions.
	{feat: fToolCall, steps: []step{{cInvoke, 0}, {cSnake | cToolNoun | cTick, 3}}},
	{feat: fAddress, steps: []step{{cAddrVoc, 0}}},
	{feat: fUrgent, steps: []step{{cUrgent, 0}}},
	{feat: fUrgent, steps: []step{{cYour, 0}, {cNext, 1}}},
	{feat: fMust, steps: []step{{cMust, 0}}},
	{feat: fBeforeAns, steps: []step{{cBefore, 0}, {cReply, 2}}},
	{feat: fSecrecy, steps: []step{{cNeg | cWithout, 0}, {cTell, 2}, {cUser | cReply, 4}}},
	{feat: fSecrecy, steps: []step{{cNeg | cWithout, 0}, {cAsk | cTell, 2}, {cConsent, 4}}},
	{feat: fSecrecy, steps: []step{{cNeg | cWithout, 0}, {cConsent, 2}, {cUser, 3}}},
	{feat: fSecrecy, steps: []step{{cUser, 0}, {cAlready, 2}, {cApproved, 1}}},
	{feat: fLeak, unlessNeg: true, steps: []step{{cLeak, 0}, {cSensitive, 5}}},
	{feat: fLeak, unlessNeg: true, steps: []step{{cSensitive, 0}, {cLeak, 3}}},
	{feat: fDest, steps: []step{{cDest, 0}}},
	{feat: fDest, steps: []step{{cTo, 0}, {cAt, 3}}},
	// to this URL, to the endpoint; a URL mentioned otherwise ("navigate
	// by URL") is no destination.
	{feat: fDest, steps: []step{{cTo, 0}, {cDestNoun, 3}}},
	{feat: fReplyTo, steps: []step{{cYour, 0}, {cReply, 2}}},
}

// combine turns the features of a text into patterns: a tool call or a
// leak is an instruction to the model when something else in the text
// addresses, hurries or hides it, or says where the data goes. When only
// "must" goes with it the finding is weak: tool descriptions and error
// messages say "you must call X first" (issue 37).
func combine(f feature) patternSet {
	var s patternSet
	switch {
	case f&fToolCall != 0 && f&(fAddress|fUrgent|fBeforeAns) != 0 || f&fSecrecy != 0:
		s |= pToolInstruction | pStrong
	case f&fToolCall != 0 && f&fMust != 0:
		s |= pToolInstruction
	}
	switch {
	case f&fLeak != 0 && f&(fDest|fReplyTo|fAddress|fSecrecy|fBeforeAns|fUrgent) != 0:
		s |= pExfiltration | pStrong
	case f&fLeak != 0 && f&fMust != 0:
		s |= pExfiltration
	}
	return s
}

const maxPatternSteps = 4

// patternsOfClass[b] has bit p set when a step of wordPatterns[p] matches
// token class 1<<b, so that a token is fed only to the patterns it can
// advance.
var patternsOfClass = func() (t [64]uint64) {
	for p, wp := range wordPatterns {
		for _, st := range wp.steps {
			for b := uint64(st.class); b != 0; b &= b - 1 {
				t[bits.TrailingZeros64(b)] |= 1 << p
			}
		}
	}
	return t
}()

// The pattern masks are 64 bits wide.
var _ [64 - len(wordPatterns)]struct{}

// vocabShapes[26*a+b] has bit n set when some word of wordClasses has n
// letters and starts with the letters 'a'+a, 'a'+b: most words are
// rejected without hashing. Every word in wordClasses has two letters or
// more.
var vocabShapes = func() (t [26 * 26]uint16) {
	for w := range wordClasses {
		t[int(w[0]-'a')*26+int(w[1]-'a')] |= 1 << len(w)
	}
	return t
}()

// matcher runs the word patterns over a stream of token classes.
type matcher struct {
	last      [len(wordPatterns)][maxPatternSteps]int
	idx       int
	lastNeg   int
	lastQuote int
	found     patternSet
	feats     feature
	quoted    patternSet // a strong match that started right after a '"'
	quotedEnd int        // the index of its last token
	doneMask  uint64     // the patterns that can add nothing new
}

func newMatcher() *matcher {
	m := &matcher{lastNeg: -1 << 30, lastQuote: -1 << 30}
	for p := range m.last {
		for k := range m.last[p] {
			m.last[p][k] = -1 << 30
		}
	}
	return m
}

// updateDone works out doneMask again after a match.
func (m *matcher) updateDone() {
	for p := range wordPatterns {
		if m.done(&wordPatterns[p]) {
			m.doneMask |= 1 << p
		}
	}
}

// done reports whether pattern p can add nothing new.
func (m *matcher) done(wp *wordPattern) bool {
	if wp.feat != 0 {
		return m.feats&wp.feat != 0
	}
	return m.found&wp.set == wp.set && (wp.weak || m.found&pStrong != 0)
}

func (m *matcher) feed(c tokClass) {
	if m.quoted != 0 {
		m.endQuote(c&cQuote != 0)
	}
	var pats uint64
	for b := uint64(c); b != 0; b &= b - 1 {
		pats |= patternsOfClass[bits.TrailingZeros64(b)]
	}
	before, beforeFeats := m.found, m.feats
	for pats &^= m.doneMask; pats != 0; pats &= pats - 1 {
		p := bits.TrailingZeros64(pats)
		wp := &wordPatterns[p]
		for k := len(wp.steps) - 1; k >= 0; k-- {
			st := wp.steps[k]
			if c&st.class == 0 {
				continue
			}
			switch {
			case k > 0 && m.idx-m.last[p][k-1] > st.gap:
			case k < len(wp.steps)-1:
				m.last[p][k] = m.idx
			case k == 0 && wp.unlessNeg && m.idx-m.lastNeg <= 3:
			case wp.feat != 0:
				m.feats |= wp.feat
			case wp.weak:
				m.found |= wp.set
			case wp.set == pIgnorePrevious && m.last[p][0] == m.lastQuote+1:
				m.quoted, m.quotedEnd = wp.set, m.idx
			default:
				m.found |= wp.set | pStrong
			}
		}
	}
	if m.found != before || m.feats != beforeFeats {
		m.updateDone()
	}
	if c&(cNeg|cWithout) != 0 {
		m.lastNeg = m.idx
	}
	if c&cQuote != 0 {
		m.lastQuote = m.idx
	}
	m.idx++
}

// endQuote settles a match that started right after a '"': if a '"' ends
// it too, the phrase is quoted, a mention (an article on prompt injection),
// and the finding is weak.
func (m *matcher) endQuote(closing bool) {
	if closing && m.idx == m.quotedEnd+1 {
		m.found |= m.quoted
	} else {
		m.found |= m.quoted | pStrong
	}
	m.quoted = 0
	m.updateDone()
}

// vocabTails is vocabShapes for the last two letters.
var vocabTails = func() (t [26 * 26]uint16) {
	for w := range wordClasses {
		t[int(w[len(w)-2]-'a')*26+int(w[len(w)-1]-'a')] |= 1 << len(w)
	}
	return t
}()

// scanWords runs the word patterns over the skeleton's token stream: words
// (runs of a–z, or a leetspeak spelling of a known word such as "1gn0r3"),
// and the punctuation tokens newline, ':', '[', ']', '@', '`' and '"' (start of
// text counts as a newline). A word followed by '_' and a letter also
// counts as an identifier (cSnake), an addressee followed by ':' or ','
// as one spoken to (cAddrVoc).
func scanWords(sk []byte) patternSet {
	m := newMatcher()
	m.feed(cNL)
	for i := 0; i < len(sk); {
		c := sk[i]
		if 'a' <= c && c <= 'z' || leetOf[c] != 0 {
			i = m.word(sk, i)
			continue
		}
		switch c {
		case '\n':
			m.endLine()
			m.feed(cNL)
		case ':':
			m.feed(cColon)
		case '[':
			m.feed(cLBrack)
		case ']':
			m.feed(cRBrack)
		case '@':
			m.feed(cAt)
		case '`':
			m.feed(cTick)
		case '"':
			// No pattern has a quote step: only the position matters.
			if m.quoted != 0 {
				m.endQuote(true)
			}
			m.lastQuote = m.idx
			m.idx++
		}
		i++
	}
	if m.quoted != 0 {
		m.endQuote(false)
	}
	return m.found | combine(m.feats)
}

// endLine combines the features of the line that ends and forgets them:
// the parts of a tool or leak instruction count together within one line.
// A long tool description that says "use the list_projects tool" in one
// paragraph and "you must" in another is no instruction to the model.
func (m *matcher) endLine() {
	if m.feats == 0 {
		return
	}
	m.found |= combine(m.feats)
	m.feats = 0
	m.doneMask = 0
	m.updateDone()
}

// word feeds the word or leetspeak word at sk[i:] and returns where the
// next token starts.
func (m *matcher) word(sk []byte, i int) int {
	j := i
	for j < len(sk) && 'a' <= sk[j] && sk[j] <= 'z' {
		j++
	}
	if j > i && (j == len(sk) || leetOf[sk[j]] == 0) {
		if cl := lookupWord(sk[i:j]); cl != 0 {
			m.feed(m.extra(sk, j, cl))
		} else if j+1 < len(sk) && sk[j] == '_' && 'a' <= sk[j+1] && sk[j+1] <= 'z' {
			m.feed(cSnake)
		} else {
			m.idx++
		}
		return j
	}
	return m.leetWord(sk, i)
}

// leetWord is word for a run of letters, digits and signs.
func (m *matcher) leetWord(sk []byte, i int) int {
	j, letters := i, 0
	for j < len(sk) && ('a' <= sk[j] && sk[j] <= 'z' || leetOf[sk[j]] != 0) {
		if 'a' <= sk[j] && sk[j] <= 'z' {
			letters++
		}
		j++
	}
	if letters > 0 && letters < j-i && j-i < 24 {
		if cl := leetClass(sk[i:j]); cl != 0 {
			m.feed(m.extra(sk, j, cl))
			return j
		}
	}
	// Not leetspeak: only runs of letters are words; '@' stays a token.
	for i < j {
		c := sk[i]
		if c < 'a' || c > 'z' {
			if c == '@' {
				m.feed(cAt)
			}
			i++
			continue
		}
		k := i + 1
		for k < j && 'a' <= sk[k] && sk[k] <= 'z' {
			k++
		}
		if cl := lookupWord(sk[i:k]); cl != 0 {
			m.feed(m.extra(sk, k, cl))
		} else if k+1 < len(sk) && sk[k] == '_' && 'a' <= sk[k+1] && sk[k+1] <= 'z' {
			m.feed(cSnake)
		} else {
			m.idx++
		}
		i = k
	}
	return j
}

// extra adds the classes that depend on what follows a known word at
// sk[end:]: cSnake before "_x", cAddrVoc for an addressee before ':' or ','.
func (m *matcher) extra(sk []byte, end int, cl tokClass) tokClass {
	if end+1 < len(sk) && sk[end] == '_' && 'a' <= sk[end+1] && sk[end+1] <= 'z' {
		cl |= cSnake
	}
	if cl&cAddressee != 0 {
		for end < len(sk) && sk[end] == ' ' {
			end++
		}
		if end < len(sk) && (sk[end] == ':' || sk[end] == ',') {
			cl |= cAddrVoc
		}
	}
	return cl
}

// lookupWord returns the classes of word w (lower-case letters). Words of
// two and three letters, the most frequent ones, are looked up in direct
// tables.
func lookupWord(w []byte) tokClass {
	n := len(w)
	if n < 2 || n > 15 {
		return 0
	}
	k := int(w[0]-'a')*26 + int(w[1]-'a')
	if vocabShapes[k]&(1<<n) == 0 {
		return 0
	}
	switch {
	case n == 2:
		return shortClasses[shortWords.two[k]]
	case n == 3:
		return shortClasses[shortWords.three[k*26+int(w[2]-'a')]]
	case vocabTails[int(w[n-2]-'a')*26+int(w[n-1]-'a')]&(1<<n) != 0:
		for h := vocabHash(w); ; h++ {
			e := &vocabTable[h&vocabMask]
			if e.word == "" || e.word == string(w) {
				return e.class
			}
		}
	}
	return 0
}

// vocabTable holds the words of wordClasses by vocabHash, with linear
// probing; it is faster than a map for the few words per line that pass
// the shape filters.
var vocabTable = func() (t [vocabSize]struct {
	word  string
	class tokClass
}) {
	for w, c := range wordClasses {
		h := vocabHash([]byte(w))
		for t[h&vocabMask].word != "" {
			h++
		}
		t[h&vocabMask].word, t[h&vocabMask].class = w, c
	}
	return t
}()

const (
	vocabSize = 1024
	vocabMask = uint32(vocabSize - 1)
)

// The table must stay at most half full.
var _ [vocabSize/2 - 400]struct{}

// vocabHash is FNV-1a.
func vocabHash(w []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range w {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// shortWords indexes shortClasses by the letters of a two- or three-letter
// word; index 0 is no class.
var shortClasses, shortWords = func() ([]tokClass, *struct {
	two   [26 * 26]uint8
	three [26 * 26 * 26]uint8
}) {
	t := new(struct {
		two   [26 * 26]uint8
		three [26 * 26 * 26]uint8
	})
	classes := []tokClass{0}
	index := map[tokClass]uint8{0: 0}
	for w, c := range wordClasses {
		if len(w) != 2 && len(w) != 3 {
			continue
		}
		i, ok := index[c]
		if !ok {
			i = uint8(len(classes))
			index[c] = i
			classes = append(classes, c)
		}
		k := int(w[0]-'a')*26 + int(w[1]-'a')
		if len(w) == 2 {
			t.two[k] = i
		} else {
			t.three[k*26+int(w[2]-'a')] = i
		}
	}
	return classes, t
}()

// leetOf maps the digits and signs of leetspeak to the letter they stand
// for; '1' and '|' are 'i' here and 'l' in leetAlt.
var leetOf = func() (t [256]byte) {
	for from, to := range map[byte]byte{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't',
		'8': 'b', '9': 'g', '@': 'a', '$': 's', '!': 'i', '|': 'i'} {
		t[from] = to
	}
	return t
}()

// leetClass returns the classes of a word spelled with leetspeak digits and
// signs, trying '1' and '|' as 'i' and then as 'l'.
func leetClass(run []byte) tokClass {
	var buf [24]byte
	w := buf[:len(run)]
	for alt := range 2 {
		for k, c := range run {
			switch {
			case 'a' <= c && c <= 'z':
				w[k] = c
			case alt == 1 && (c == '1' || c == '|'):
				w[k] = 'l'
			default:
				w[k] = leetOf[c]
			}
		}
		if cl := lookupWord(w); cl != 0 {
			return cl
		}
	}
	return 0
}
