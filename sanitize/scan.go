package sanitize

import (
	"bytes"
	"strings"
	"sync"
)

// Pattern IDs name what Scan (and, for PatternHiddenInIdentifier, the
// boundary functions) detects. They are stable: metrics, logs and
// block messages use them.
const (
	// PatternMarkerSpoof is a boundary-marker look-alike in content.
	PatternMarkerSpoof = "marker-spoof"
	// PatternRoleTag is a conversation role label: "Human:", "Assistant:" or
	// "System:" at the start of a line, or a tag such as <system>.
	PatternRoleTag = "role-tag"
	// PatternChatTemplate is a chat-template control token: <|im_start|>,
	// <|eot_id|>, [INST], <<SYS>>, </s>, <start_of_turn> and the like.
	PatternChatTemplate = "chat-template"
	// PatternIgnorePrevious is an "ignore all previous instructions" phrase
	// or one of its relatives.
	PatternIgnorePrevious = "ignore-previous"
	// PatternFakeSystem is text posing as a system or operator notice:
	// "[SYSTEM NOTICE]", "SYSTEM:", "IMPORTANT: new instructions", "you are
	// now in developer mode".
	PatternFakeSystem = "fake-system"
	// PatternHiddenUnicode is reported with each of the three below.
	PatternHiddenUnicode = "hidden-unicode"
	// PatternBidiOverride is a bidi embedding, override or isolate.
	PatternBidiOverride = "bidi-override"
	// PatternZeroWidthRun is a run of at least MinZeroWidthRun invisible
	// characters (zero-width spaces and joiners, variation selectors, …).
	PatternZeroWidthRun = "zero-width-run"
	// PatternTagChars is a character of the Unicode tag block, which can
	// spell invisible ASCII.
	PatternTagChars = "tag-chars"
	// PatternBase64Run is a run of at least MinBase64Run base64 characters.
	PatternBase64Run = "base64-run"
	// PatternHiddenMarkup is HTML or Markdown that hides text from a human
	// reader: comments, display:none, zero font size, white text, zero-size
	// images with alt text, the hidden attribute.
	PatternHiddenMarkup = "hidden-markup"
	// PatternHiddenInIdentifier is an invisible or control character (one
	// that Text would remove) in a value the boundary keeps as it is
	// because it must match elsewhere: a tool, prompt or argument name, a
	// URI, a schema property name or pattern. Scan never reports it; the
	// boundary functions do (see boundary.go).
	PatternHiddenInIdentifier = "hidden-in-identifier"
)

const (
	// MinBase64Run is the length from which a run of base64 characters
	// (standard or URL-safe alphabet, line breaks allowed after lines of 60
	// or more) mixing upper case, lower case and digits is reported.
	MinBase64Run = 512
	// MinZeroWidthRun is the length from which a run of zero-width
	// characters is reported.
	MinZeroWidthRun = 3
)

// patternSet is a set of patterns, one bit each, in the order of
// patternIDs.
type patternSet uint32

var patternIDs = [...]string{
	PatternMarkerSpoof, PatternRoleTag, PatternChatTemplate, PatternIgnorePrevious,
	PatternFakeSystem, PatternHiddenUnicode, PatternBidiOverride, PatternZeroWidthRun,
	PatternTagChars, PatternBase64Run, PatternHiddenMarkup, PatternHiddenInIdentifier,
}

const (
	pMarkerSpoof patternSet = 1 << iota
	pRoleTag
	pChatTemplate
	pIgnorePrevious
	pFakeSystem
	pHiddenUnicode
	pBidi
	pZeroWidth
	pTagChars
	pBase64
	pHiddenMarkup
	pHiddenInIdentifier
)

func patternBit(id string) patternSet {
	for i, p := range patternIDs {
		if p == id {
			return 1 << i
		}
	}
	return 0
}

func (s patternSet) ids() []string {
	var out []string
	for i, p := range patternIDs {
		if s&(1<<i) != 0 {
			out = append(out, p)
		}
	}
	return out
}

func (s patternSet) findings(where string) []Finding {
	var out []Finding
	for i, p := range patternIDs {
		if s&(1<<i) != 0 {
			out = append(out, Finding{ID: p, Where: where})
		}
	}
	return out
}

// Finding is one suspicious pattern found in one place. It never holds
// content.
type Finding struct {
	// ID is one of the Pattern constants.
	ID string
	// Where locates the text: "content[2]", "contents[0]",
	// "messages[1].content", "description". Scan leaves it empty.
	Where string
}

// Scan reports which suspicious patterns text contains, each once, in the
// order of the Pattern constants. It runs in time linear in len(text),
// matches on the skeleton (so case, look-alikes, invisible characters and
// escapes do not hide a pattern) and returns no part of the text.
func Scan(text string) []Finding {
	a := analyze(text)
	defer a.release()
	return a.scan(text).findings("")
}

// analysis is the skeleton of one text with its statistics. The skeleton
// buffer comes from a pool; call release when done.
type analysis struct {
	sk     []byte
	st     foldStats
	marker bool
}

var skeletonPool = sync.Pool{New: func() any { return new([]byte) }}

func analyze(text string) analysis {
	p := skeletonPool.Get().(*[]byte)
	f := folder{keep: true, out: (*p)[:0]}
	if cap(f.out) < len(text) {
		f.out = make([]byte, 0, len(text)+len(text)/8)
	}
	f.fold(text)
	return analysis{sk: f.out, st: f.st, marker: f.m.found}
}

func (a *analysis) release() {
	if a.sk == nil || cap(a.sk) > 4<<20 {
		return // do not pin large buffers
	}
	b := a.sk[:0]
	skeletonPool.Put(&b)
	a.sk = nil
}

// scan runs every detector. text is the raw text a was made from.
func (a *analysis) scan(text string) patternSet {
	s := a.st.bits()
	if a.marker {
		s |= pMarkerSpoof
	}
	if hasBase64Run(text) {
		s |= pBase64
	}
	s |= scanTags(a.sk)
	s |= scanStyles(a.sk)
	s |= scanWords(a.sk)
	return s
}

// bits returns the hidden-Unicode patterns the statistics show.
func (st *foldStats) bits() patternSet {
	var s patternSet
	if st.tagChars > 0 {
		s |= pTagChars | pHiddenUnicode
	}
	if st.bidi > 0 {
		s |= pBidi | pHiddenUnicode
	}
	if st.zwRun >= MinZeroWidthRun {
		s |= pZeroWidth | pHiddenUnicode
	}
	return s
}

// hasBase64Run looks for MinBase64Run or more base64 characters in a row.
// Line breaks may continue a run after a line of at least 60 characters, as
// in MIME and PEM. A run must mix upper case, lower case and digits, which
// rules out hex dumps and rows of '='.
func hasBase64Run(text string) bool {
	if len(text) < MinBase64Run {
		return false
	}
	run, line := 0, 0
	var mix byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		k := base64Class[c]
		switch {
		case k != 0:
			mix |= k
			run++
			line++
			if run >= MinBase64Run && mix&7 == 7 {
				return true
			}
		case (c == '\n' || c == '\r') && line >= 60:
			if c == '\n' {
				line = 0
			}
		default:
			run, line, mix = 0, 0, 0
		}
	}
	return false
}

// base64Class is 1, 2 or 4 for upper case, lower case and digits, 8 for the
// other characters of the two base64 alphabets, and 0 outside them.
var base64Class = func() (t [256]byte) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = 1
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 2
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 4
	}
	for _, c := range "+/=-_" {
		t[c] = 8
	}
	return t
}()

// Chat-template tokens and role tags.

var (
	// templateTokens holds control tokens by their second byte.
	templateTokens = func() (t [256][][]byte) {
		for _, tok := range []string{
			"<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>", "[inst]", "[/inst]",
			"[system_prompt]", "[/system_prompt]", "[available_tools]", "[tool_calls]",
			"[tool_results]", "<im_start>", "<im_end>", "<eos>", "<bos>",
		} {
			t[tok[1]] = append(t[tok[1]], []byte(tok))
		}
		return t
	}()
	roleTagNames = map[string]bool{
		"system": true, "user": true, "assistant": true, "human": true, "sys": true,
		"system-reminder": true, "system_reminder": true, "system-prompt": true,
		"system_prompt": true, "system-message": true, "system_message": true,
	}
)

// scanTags looks at every '<' and '[' of the skeleton for control tokens,
// role tags, HTML comments with text, zero-size images with alt text and
// the hidden attribute.
func scanTags(sk []byte) patternSet {
	var s patternSet
	for i := 0; i < len(sk); i++ {
		c := sk[i]
		if c != '<' && c != '[' {
			continue
		}
		rest := sk[i:]
		if len(rest) > 1 {
			for _, t := range templateTokens[rest[1]] {
				if bytes.HasPrefix(rest, t) {
					s |= pChatTemplate
				}
			}
		}
		if eosToken(rest) {
			s |= pChatTemplate
		}
		if c == '[' {
			// Markdown comments: [//]: # (text) and [comment]: <> (text).
			for _, p := range [...]string{"[//]:", "[comment]:"} {
				if bytes.HasPrefix(rest, []byte(p)) && hasLetter(lineOf(rest[len(p):])) {
					s |= pHiddenMarkup
				}
			}
			continue
		}
		if len(rest) < 2 {
			continue
		}
		switch {
		case rest[1] == '|':
			// <|name|> with a short name: ChatML, Llama 3, Phi, Harmony,
			// DeepSeek (whose full-width bars fold to '|').
			j := 2
			for j < len(rest) && j < 48 && (letterOf[rest[j]] != 0 || rest[j] == '_' || rest[j] == ' ' ||
				rest[j] == '-' || rest[j] == '.' || rest[j] == otherByte || '0' <= rest[j] && rest[j] <= '9') {
				j++
			}
			if j > 2 && j+1 < len(rest) && rest[j] == '|' && rest[j+1] == '>' {
				s |= pChatTemplate
				if roleTagNames[string(bytes.TrimSpace(rest[2:j]))] {
					s |= pRoleTag
				}
			}
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("-->"))
			body := rest[4:]
			if end >= 0 {
				body = rest[4 : 4+end]
			}
			if hasLetter(body) {
				s |= pHiddenMarkup
			}
			i += 3 + len(body)
		default:
			j := 1
			if rest[1] == '/' {
				j = 2
			}
			k := j
			for k < len(rest) && k < 40 && ('a' <= rest[k] && rest[k] <= 'z' || rest[k] == '_' || rest[k] == '-') {
				k++
			}
			if k == j || k >= len(rest) {
				continue
			}
			name := rest[j:k]
			if (rest[k] == '>' || rest[k] == ' ' || rest[k] == '\n' || rest[k] == '/') && roleTagNames[string(name)] {
				s |= pRoleTag
			}
			if rest[k] != ' ' || j == 2 {
				continue
			}
			// Attributes up to '>' (or the next '<').
			end := k
			for end < len(rest) && rest[end] != '>' && rest[end] != '<' {
				end++
			}
			attrs := rest[k:end]
			if string(name) == "img" && hasAttr(attrs, "alt") && (zeroAttr(attrs, "width") || zeroAttr(attrs, "height")) {
				s |= pHiddenMarkup
			}
			if hasBareAttr(attrs, "hidden") {
				s |= pHiddenMarkup
			}
			if v, _ := attrValueAt(attrs, "type"); string(name) == "input" && string(v) == "hidden" && hasAttr(attrs, "value") {
				s |= pHiddenMarkup
			}
			i += end - 1
		}
	}
	return s
}

// eosToken recognises the Llama sequence tokens: "</s>" at the end of the
// text or followed by "<s>", "[INST]" or "<|", and "<s>" followed by
// "[INST]". A "<s>…</s>" pair elsewhere is HTML strike-through.
func eosToken(b []byte) bool {
	var rest []byte
	switch {
	case bytes.HasPrefix(b, []byte("</s>")):
		rest = bytes.TrimLeft(b[4:], " \n")
		if len(rest) == 0 || bytes.HasPrefix(rest, []byte("<s>")) || bytes.HasPrefix(rest, []byte("<|")) {
			return true
		}
	case bytes.HasPrefix(b, []byte("<s>")):
		rest = bytes.TrimLeft(b[3:], " \n")
	default:
		return false
	}
	return bytes.HasPrefix(rest, []byte("[inst]"))
}

func hasLetter(b []byte) bool {
	for _, c := range b {
		if 'a' <= c && c <= 'z' {
			return true
		}
	}
	return false
}

// lineOf returns the rest of the line b starts, up to 256 bytes (so that
// many openers on one long line cost linear time).
func lineOf(b []byte) []byte {
	b = b[:min(len(b), 256)]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// attrValueAt returns the value of attribute name in attrs (quoted or not)
// and whether the attribute is present.
func attrValueAt(attrs []byte, name string) ([]byte, bool) {
	for i := 0; i+len(name) <= len(attrs); i++ {
		if attrs[i] != ' ' || !bytes.HasPrefix(attrs[i+1:], []byte(name)) {
			continue
		}
		j := i + 1 + len(name)
		for j < len(attrs) && attrs[j] == ' ' {
			j++
		}
		if j >= len(attrs) || attrs[j] != '=' {
			if j >= len(attrs) || attrs[j-1] == ' ' || attrs[j] == '/' {
				return nil, true // bare attribute
			}
			continue
		}
		j++
		for j < len(attrs) && attrs[j] == ' ' {
			j++
		}
		if j < len(attrs) && (attrs[j] == '"' || attrs[j] == '\'') {
			q := attrs[j]
			end := bytes.IndexByte(attrs[j+1:], q)
			if end < 0 {
				return attrs[j+1:], true
			}
			return attrs[j+1 : j+1+end], true
		}
		end := j
		for end < len(attrs) && attrs[end] != ' ' {
			end++
		}
		return attrs[j:end], true
	}
	return nil, false
}

func hasAttr(attrs []byte, name string) bool {
	v, ok := attrValueAt(attrs, name)
	return ok && len(bytes.TrimSpace(v)) > 0
}

func hasBareAttr(attrs []byte, name string) bool {
	_, ok := attrValueAt(attrs, name)
	return ok
}

func zeroAttr(attrs []byte, name string) bool {
	v, ok := attrValueAt(attrs, name)
	if !ok {
		return false
	}
	v = bytes.TrimSuffix(bytes.TrimSpace(v), []byte("px"))
	return len(v) > 0 && len(bytes.Trim(v, "0")) == 0 || string(v) == "1"
}

// CSS that hides text.

type cssRule struct {
	prop   string
	values []string // the value must start with one of these
	zero   bool     // or be a zero length
}

var cssRules = []cssRule{
	{prop: "display", values: []string{"none"}},
	{prop: "visibility", values: []string{"hidden", "collapse"}},
	{prop: "font-size", zero: true},
	{prop: "opacity", zero: true},
	{prop: "color", values: []string{"white", "#fff", "#ffffff", "transparent", "rgba(255,255,255,0)", "rgb(255,255,255)", "rgb(255, 255, 255)"}},
}

// scanStyles finds CSS declarations that hide text. A property must not be
// the tail of a longer one ("background-color").
func scanStyles(sk []byte) patternSet {
	if bytes.IndexByte(sk, ':') < 0 {
		return 0
	}
	for _, r := range cssRules {
		p := []byte(r.prop)
		for off := 0; ; {
			i := bytes.Index(sk[off:], p)
			if i < 0 {
				break
			}
			i += off
			off = i + len(p)
			if !declStart(sk[:i]) {
				continue
			}
			v := skipSpaces(sk[off:])
			if len(v) == 0 || v[0] != ':' {
				continue
			}
			v = skipSpaces(v[1:])
			if r.zero && isZeroLength(v) {
				return pHiddenMarkup
			}
			for _, want := range r.values {
				if bytes.HasPrefix(v, []byte(want)) {
					if rest := v[len(want):]; len(rest) == 0 || digitVal(rest[0]) >= 16 && letterOf[rest[0]] == 0 {
						return pHiddenMarkup
					}
				}
			}
		}
	}
	return 0
}

// declStart reports whether a CSS property may start right after before:
// after a quote (style="…"), '{' or ';', spaces allowed. This keeps prose
// such as "Color: white" and longer properties such as background-color out.
func declStart(before []byte) bool {
	i := len(before)
	for i > 0 && before[i-1] == ' ' {
		i--
	}
	return i > 0 && strings.IndexByte("\"'{;", before[i-1]) >= 0
}

func skipSpaces(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return b
}

// isZeroLength reports whether b starts with a CSS zero: 0, 0.0, 0px, 0em…
func isZeroLength(b []byte) bool {
	if len(b) == 0 || b[0] != '0' && b[0] != '.' {
		return false
	}
	i := 0
	for i < len(b) && (b[i] == '0' || b[i] == '.') {
		i++
	}
	return i == len(b) || b[i] < '1' || b[i] > '9'
}

// Word patterns.
//
// The skeleton is read as a stream of tokens: words (runs of a–z), and the
// punctuation tokens newline, ':' '[' and ']' (start of text counts as a
// newline). A pattern is a sequence of steps; each step is a token class and
// the greatest distance, in tokens, from the token that matched the step
// before. Matching keeps, for each step, the index of the latest token that
// completed the pattern up to that step, which is enough to decide whether
// any bounded-gap occurrence exists: time is linear in the number of tokens.

type tokClass uint64

const (
	cNL tokClass = 1 << iota
	cColon
	cLBrack
	cRBrack
	cVerb       // ignore, disregard, forget …
	cQual       // previous, prior, above, earlier …
	cNoun       // instructions, prompt, rules …
	cWeakQual   // all, your, every
	cStrongNoun // instructions, prompts, programming …
	cNeg        // not, dont, never, stop …
	cObey       // follow, obey
	cEverything // everything, anything, all
	cBefore     // above, before, prior, earlier …
	cRole       // human, assistant, system
	cSys        // system, sys, admin, administrator
	cSysNoun    // notice, message, override …
	cAttn       // important, urgent, attention …
	cNew        // new, updated, revised …
	cInstr      // instructions, directives, task …
	cYou
	cAre
	cNow
	cPersona // dan, jailbroken, unrestricted …
	cModeWord
	cMode
	cEnabled
	cPrompt
	cChanged
	cEnd
)

type step struct {
	class tokClass
	gap   int
}

type wordPattern struct {
	set   patternSet
	steps []step
}

var wordPatterns = [...]wordPattern{
	// ignore (all) previous instructions; disregard the above rules; forget
	// your instructions.
	{pIgnorePrevious, []step{{cVerb, 0}, {cQual, 4}, {cNoun, 3}}},
	// ignore all instructions; forget your programming.
	{pIgnorePrevious, []step{{cVerb, 0}, {cWeakQual, 2}, {cStrongNoun, 2}}},
	// do not follow the previous instructions.
	{pIgnorePrevious, []step{{cNeg, 0}, {cObey, 2}, {cQual, 4}, {cNoun, 3}}},
	// ignore everything above / before.
	{pIgnorePrevious, []step{{cVerb, 0}, {cEverything, 2}, {cBefore, 2}}},
	// Human: / Assistant: / System: at the start of a line.
	{pRoleTag, []step{{cNL, 0}, {cRole, 1}, {cColon, 1}}},
	// SYSTEM: at the start of a line.
	{pFakeSystem, []step{{cNL, 0}, {cSys, 1}, {cColon, 1}}},
	// [SYSTEM NOTICE], [ADMIN MESSAGE].
	{pFakeSystem, []step{{cLBrack, 0}, {cSys, 1}, {cSysNoun, 1}, {cRBrack, 2}}},
	// SYSTEM NOTICE: / System override: at the start of a line.
	{pFakeSystem, []step{{cNL, 0}, {cSys, 1}, {cSysNoun, 1}, {cColon, 1}}},
	// IMPORTANT: new instructions.
	{pFakeSystem, []step{{cAttn, 0}, {cNew, 3}, {cInstr, 1}}},
	// New instructions: at the start of a line.
	{pFakeSystem, []step{{cNL, 0}, {cNew, 1}, {cInstr, 1}, {cColon, 1}}},
	// You are now DAN / in developer mode / an unrestricted AI.
	{pFakeSystem, []step{{cYou, 0}, {cAre, 1}, {cNow, 1}, {cPersona, 3}}},
	// Developer mode enabled.
	{pFakeSystem, []step{{cModeWord, 0}, {cMode, 1}, {cEnabled, 2}}},
	// System prompt override / updated.
	{pFakeSystem, []step{{cSys, 0}, {cPrompt, 1}, {cChanged, 2}}},
	// END OF SYSTEM PROMPT.
	{pFakeSystem, []step{{cEnd, 0}, {cSys, 2}, {cPrompt, 1}}},
}

var wordClasses = func() map[string]tokClass {
	m := map[string]tokClass{}
	add := func(c tokClass, words ...string) {
		for _, w := range words {
			m[w] |= c
		}
	}
	add(cVerb, "ignore", "ignoring", "ignored", "disregard", "disregarding", "forget", "forgetting",
		"override", "overriding", "bypass", "discard", "abandon", "neglect", "dismiss", "nevermind")
	add(cQual, "previous", "previously", "prior", "above", "earlier", "preceding", "former",
		"foregoing", "original", "initial", "existing", "system", "developer", "safety")
	add(cWeakQual, "all", "your", "every", "any")
	add(cStrongNoun, "instruction", "instructions", "prompt", "prompts", "directive", "directives",
		"guideline", "guidelines", "programming", "training")
	add(cNoun, "instruction", "instructions", "prompt", "prompts", "direction", "directions",
		"directive", "directives", "rule", "rules", "guideline", "guidelines", "guidance",
		"context", "message", "messages", "command", "commands", "order", "orders",
		"constraint", "constraints", "restriction", "restrictions", "policy", "policies", "text",
		"input", "conversation", "programming", "training")
	add(cNeg, "not", "dont", "don", "never", "stop", "longer", "cease")
	add(cObey, "follow", "following", "obey", "obeying", "heed")
	add(cEverything, "everything", "anything", "all")
	add(cBefore, "above", "before", "prior", "previously", "earlier", "said")
	add(cRole, "human", "assistant", "system")
	add(cSys, "system", "sys", "admin", "administrator")
	add(cSysNoun, "notice", "message", "alert", "update", "override", "instruction", "instructions",
		"prompt", "note", "announcement", "directive", "warning", "command")
	add(cAttn, "important", "urgent", "attention", "critical", "notice", "warning")
	add(cNew, "new", "updated", "revised", "additional", "changed", "real", "actual", "true", "secret")
	add(cInstr, "instruction", "instructions", "directive", "directives", "orders", "task", "objective",
		"mission", "prompt")
	add(cYou, "you")
	add(cAre, "are", "re")
	add(cNow, "now")
	add(cPersona, "dan", "jailbroken", "jailbreak", "unrestricted", "unfiltered", "uncensored", "evil",
		"developer", "god", "acting", "assistant", "ai", "chatbot", "persona", "roleplaying", "pretending")
	add(cModeWord, "god", "jailbreak", "jailbroken", "dan", "unrestricted", "unfiltered", "uncensored", "evil")
	add(cMode, "mode")
	add(cEnabled, "enabled", "activated", "engaged", "on", "unlocked", "active")
	add(cPrompt, "prompt", "prompts", "instructions", "message")
	add(cChanged, "override", "overridden", "overrides", "updated", "update", "changed", "replaced",
		"reset", "revoked", "disabled")
	add(cEnd, "end")
	return m
}()

const maxPatternSteps = 4

// patternClasses[p] is the union of the classes wordPatterns[p] uses.
var patternClasses = func() (t [len(wordPatterns)]tokClass) {
	for p, wp := range wordPatterns {
		for _, st := range wp.steps {
			t[p] |= st.class
		}
	}
	return t
}()

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

// scanWords runs the word patterns over the skeleton's token stream.
func scanWords(sk []byte) patternSet {
	var last [len(wordPatterns)][maxPatternSteps]int
	for p := range last {
		for k := range last[p] {
			last[p][k] = -1 << 30
		}
	}
	var found patternSet
	idx := 0
	feed := func(c tokClass) {
		for p := range wordPatterns {
			wp := &wordPatterns[p]
			if c&patternClasses[p] == 0 || found&wp.set != 0 {
				continue
			}
			for k := len(wp.steps) - 1; k >= 0; k-- {
				st := wp.steps[k]
				if c&st.class == 0 {
					continue
				}
				if k == 0 {
					last[p][0] = idx
				} else if idx-last[p][k-1] <= st.gap {
					if k == len(wp.steps)-1 {
						found |= wp.set
					} else {
						last[p][k] = idx
					}
				}
			}
		}
		idx++
	}
	feed(cNL)
	for i := 0; i < len(sk); {
		c := sk[i]
		if 'a' <= c && c <= 'z' {
			j := i + 1
			for j < len(sk) && 'a' <= sk[j] && sk[j] <= 'z' {
				j++
			}
			if n := j - i; n > 1 && n < 16 && vocabShapes[int(c-'a')*26+int(sk[i+1]-'a')]&(1<<n) != 0 {
				if cl := wordClasses[string(sk[i:j])]; cl != 0 {
					feed(cl)
				} else {
					idx++
				}
			} else {
				idx++
			}
			i = j
			continue
		}
		switch c {
		case '\n':
			feed(cNL)
		case ':':
			feed(cColon)
		case '[':
			feed(cLBrack)
		case ']':
			feed(cRBrack)
		}
		i++
	}
	return found
}
