package sanitize

import (
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
	// PatternToolInstruction is text that tells the model to call a tool or
	// run a command ("AI agent: use the execute_command tool …", "you must
	// call transfer_funds") or to act behind the user's back ("do not tell
	// the user", "the user already approved this").
	PatternToolInstruction = "tool-instruction"
	// PatternExfiltration is a request to send secrets, credentials or the
	// conversation somewhere, or to reveal the system prompt.
	PatternExfiltration = "exfiltration"
	// PatternExfilLink is a Markdown or HTML image whose URL has a slot for
	// data to be filled in ("?q=[INFO]", "{conversation}", "$TOKEN"): a
	// client that renders the image sends the data to that host.
	PatternExfilLink = "exfil-link"
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
	PatternToolInstruction, PatternExfiltration, PatternExfilLink,
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
	pToolInstruction
	pExfiltration
	pExfilLink

	// pStrong is no pattern: it is set with every finding but the weak
	// ones (see blocks).
	pStrong patternSet = 1 << 31
)

// blocks reports whether findings s are enough for ModeBlock to withhold a
// result: at least one strong finding, or two weak patterns. Weak are the
// findings that ordinary documents also give: hidden markup (an HTML
// comment or a hidden element that speaks to an AI), and the looser
// jailbreak phrases ("no filters"). Every mode reports them all.
func (s patternSet) blocks() bool {
	if s&pStrong != 0 {
		return true
	}
	n := 0
	for w := s &^ pStrong; w != 0; w &= w - 1 {
		n++
	}
	return n >= 2
}

// bitsOf is the set of findings fs, with pStrong when one is strong.
func bitsOf(fs []Finding) patternSet {
	var s patternSet
	for _, f := range fs {
		s |= patternBit(f.ID)
		if !f.Weak {
			s |= pStrong
		}
	}
	return s
}

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
			out = append(out, Finding{ID: p, Where: where, Weak: s&pStrong == 0})
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
	// Weak says the place had only weak findings (see Withholds).
	Weak bool
}

// Withholds reports whether findings are enough for ModeBlock to withhold
// what they were found in: one strong finding, or two weak patterns. A
// definition (tool, prompt, resource) is judged as a result is.
func Withholds(findings []Finding) bool {
	var weak patternSet
	for _, f := range findings {
		if !f.Weak {
			return true
		}
		weak |= patternBit(f.ID)
	}
	return weak.blocks()
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
		s |= pMarkerSpoof | pStrong
	}
	s |= scanBase64(text)
	s |= scanTags(a.sk)
	s |= scanStyles(a.sk)
	s |= scanWords(a.sk)
	if a.st.nonASCII {
		s |= scanForeign(text)
	}
	return s
}

// bits returns the hidden-Unicode patterns the statistics show.
func (st *foldStats) bits() patternSet {
	var s patternSet
	if st.tagChars > 0 {
		s |= pTagChars | pHiddenUnicode | pStrong
	}
	if st.bidi() {
		s |= pBidi | pHiddenUnicode | pStrong
	}
	if st.zwRun >= MinZeroWidthRun {
		s |= pZeroWidth | pHiddenUnicode | pStrong
	}
	return s
}
