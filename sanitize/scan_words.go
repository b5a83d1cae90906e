package sanitize

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
