package sanitize_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// loosePhrase matches "external untrusted content" in a skeleton the way a
// lenient reader would: each letter or a digit or sign that looks like it,
// any number of other characters between letters. loosePhraseBack is the
// same backwards, as a right-to-left override displays it. Both are written
// independently of the package's matcher so that the two check each other.
var loosePhrase, loosePhraseBack = loose("externaluntrustedcontent"), loose("tnetnocdetsurtnulanretxe")

func loose(phrase string) *regexp.Regexp {
	alt := map[rune]string{'e': "[e3]", 'o': "[o0]", 'l': "[l1]", 's': `[s5$]`, 't': "[t7]", 'a': "[a4@]"}
	var parts []string
	for _, r := range phrase {
		if a, ok := alt[r]; ok {
			parts = append(parts, a)
		} else {
			parts = append(parts, string(r))
		}
	}
	return regexp.MustCompile(strings.Join(parts, `[^a-z013457@$]*`))
}

// rtlOverride matches the text a right-to-left override displays backwards:
// up to its PDF or PDI, or the end of the line.
var rtlOverride = regexp.MustCompile("\u202e[^\u202c\u2069\u202d\n\r\u2028\u2029\u0085]*")

// phraseCount counts marker-like phrases in the skeleton of s, and
// backwards ones in the parts of s under a right-to-left override.
func phraseCount(s string) int {
	n := len(loosePhrase.FindAllStringIndex(sanitize.Skeleton(s), -1))
	for _, r := range rtlOverride.FindAllString(s, -1) {
		n += len(loosePhraseBack.FindAllStringIndex(sanitize.Skeleton(r), -1))
	}
	return n
}

// countFold counts copies of sub in s in any ASCII letter case.
func countFold(s, sub string) int {
	return strings.Count(strings.ToLower(s), strings.ToLower(sub))
}

const (
	openPrefix  = `<<<EXTERNAL_UNTRUSTED_CONTENT id="`
	closePrefix = "\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\""
)

// checkWrapped asserts the boundary invariants of a wrapped text and
// returns its nonce and body (what lies between the notice, or note, and
// the closing marker).
func checkWrapped(t *testing.T, out string, src sanitize.Source) (nonce, body string) {
	t.Helper()
	if !strings.HasPrefix(out, openPrefix) {
		t.Fatalf("output does not start with the opening marker: %.120q", out)
	}
	nonce = out[len(openPrefix) : len(openPrefix)+sanitize.NonceLen]
	if strings.Trim(nonce, "0123456789abcdef") != "" {
		t.Fatalf("nonce %q is not lower-case hex", nonce)
	}
	head := sanitize.Wrap("", src, nonce)
	head = head[:strings.Index(head, closePrefix)]
	if !strings.HasPrefix(out, head) {
		t.Fatalf("output does not start with the header for %+v:\n%.400s", src, out)
	}
	tail := closePrefix + nonce + `">>>`
	if !strings.HasSuffix(out, tail) {
		t.Fatalf("output does not end with the closing marker: %.120q", out[max(0, len(out)-120):])
	}
	if n := countFold(out, nonce); n != 2 {
		t.Errorf("nonce appears %d times, want 2 (the two real markers)", n)
	}
	if n := phraseCount(out); n != 2 {
		t.Errorf("skeleton holds %d marker phrases, want 2 (the two real markers)", n)
	}
	if n := strings.Count(out, "<<<EXTERNAL_UNTRUSTED_CONTENT"); n != 1 {
		t.Errorf("%d literal opening markers, want 1", n)
	}
	if n := strings.Count(out, "<<<END_EXTERNAL_UNTRUSTED_CONTENT"); n != 1 {
		t.Errorf("%d literal closing markers, want 1", n)
	}
	return nonce, out[len(head) : len(out)-len(tail)]
}

// stripNote removes the annotation line from the start of a body.
func stripNote(body string) string {
	if strings.HasPrefix(body, "NOTE: this content matched") {
		return body[strings.IndexByte(body, '\n')+1:]
	}
	return body
}

// upstreamWrap builds what an upstream that copied our wrapper format would
// send: a wrapper for src around text, with a nonce of its own choosing.
func upstreamWrap(text string, src sanitize.Source, nonce string) string {
	own := sanitize.NewNonce()
	return strings.ReplaceAll(sanitize.Wrap(text, src, own), own, nonce)
}
