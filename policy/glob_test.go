package policy_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-switchboard/switchboard/policy"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		in      string
		want    bool
	}{
		{name: "exact", pattern: "github_create_issue", in: "github_create_issue", want: true},
		{name: "exact mismatch", pattern: "github_create_issue", in: "github_create_issues", want: false},
		{name: "exact is whole name", pattern: "create", in: "github_create_issue", want: false},
		{name: "star alone matches empty", pattern: "*", in: "", want: true},
		{name: "star alone matches anything", pattern: "*", in: "anything at all", want: true},
		{name: "stars collapse", pattern: "***", in: "x", want: true},
		{name: "prefix", pattern: "github_*", in: "github_list", want: true},
		{name: "prefix empty rest", pattern: "github_*", in: "github_", want: true},
		{name: "prefix mismatch", pattern: "github_*", in: "gitlab_list", want: false},
		{name: "suffix", pattern: "*_delete", in: "fs_delete", want: true},
		{name: "suffix mismatch", pattern: "*_delete", in: "fs_delete_all", want: false},
		{name: "contains", pattern: "*secret*", in: "read_secret_value", want: true},
		{name: "contains at edges", pattern: "*secret*", in: "secret", want: true},
		{name: "contains mismatch", pattern: "*secret*", in: "read_secre", want: false},
		{name: "prefix and suffix", pattern: "a*b", in: "ab", want: true},
		{name: "prefix and suffix overlap", pattern: "ab*ba", in: "aba", want: false},
		{name: "prefix and suffix middle", pattern: "ab*ba", in: "abxba", want: true},
		{name: "middle segments in order", pattern: "*a*b*c*", in: "xaybzc", want: true},
		{name: "middle segments out of order", pattern: "*a*b*c*", in: "cba", want: false},
		{name: "leftmost greedy is enough", pattern: "a*ab*b", in: "aabab", want: true},
		{name: "question one char", pattern: "fs_?ead", in: "fs_read", want: true},
		{name: "question not zero chars", pattern: "fs_?ead", in: "fs_ead", want: false},
		{name: "question not two chars", pattern: "fs_?ead", in: "fs_rread", want: false},
		{name: "question is one rune", pattern: "?", in: "é", want: true},
		{name: "question is one rune not two", pattern: "?", in: "éé", want: false},
		{name: "question matches four byte rune", pattern: "a?b", in: "a😀b", want: true},
		{name: "question matches invalid byte", pattern: "a?b", in: "a\xffb", want: true},
		{name: "questions in suffix", pattern: "*_??", in: "tool_é1", want: true},
		{name: "questions in suffix too short", pattern: "*_??", in: "tool_1", want: false},
		{name: "question in middle", pattern: "*a?c*", in: "xxabcxx", want: true},
		{name: "question leading middle", pattern: "x*?b*", in: "xéb", want: true},
		{name: "question with star empty", pattern: "?*", in: "", want: false},
		{name: "literal unicode", pattern: "café_*", in: "café_menu", want: true},
		{name: "brackets are literal", pattern: "[a]*", in: "[a]x", want: true},
		{name: "brackets are not classes", pattern: "[a]*", in: "ax", want: false},
		{name: "backslash is literal", pattern: `a\*`, in: `a\bc`, want: true},
		{name: "backslash does not escape", pattern: `a\*`, in: `a*`, want: false},
		{name: "case sensitive", pattern: "GitHub_*", in: "github_x", want: false},
		{name: "invalid pattern never matches", pattern: "", in: "", want: false},
		{name: "pathological backtracking", pattern: "a*a*a*a*a*a*a*a*b", in: strings.Repeat("a", 4096), want: false},
		{name: "pathological question", pattern: "*?a?a?a?a?b", in: strings.Repeat("a", 4096), want: false},
		{name: "pathological middle", pattern: "a*a*a*a*a*a*a*a*b*", in: strings.Repeat("a", 4096), want: false},
		{name: "pathological question middle", pattern: "*?a?a?a?a?b*", in: strings.Repeat("a", 4096), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.Match(tt.pattern, tt.in); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.in, got, tt.want)
			}
			if tt.pattern != "" && len(tt.in) <= 64 {
				if ref := naiveMatch(tt.pattern, tt.in); ref != tt.want {
					t.Errorf("reference disagrees with the table: %v", ref)
				}
			}
		})
	}
}

func TestValidatePattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		wantErr string // substring; empty means valid
	}{
		{name: "plain", pattern: "github_create_issue"},
		{name: "wildcards", pattern: "*_?ead*"},
		{name: "unicode", pattern: "café"},
		{name: "max length", pattern: strings.Repeat("a", policy.MaxPatternLen)},
		{name: "empty", pattern: "", wantErr: "invalid pattern: empty"},
		{name: "too long", pattern: strings.Repeat("a", policy.MaxPatternLen+1), wantErr: "257 bytes, limit 256"},
		{name: "nul", pattern: "a\x00", wantErr: "control character U+0000 at byte 1"},
		{name: "newline", pattern: "a\nb", wantErr: "control character U+000A"},
		{name: "escape", pattern: "\x1b[31m", wantErr: "control character U+001B at byte 0"},
		{name: "delete", pattern: "a\x7f", wantErr: "control character U+007F"},
		{name: "c1 control", pattern: "a\u0085", wantErr: "control character U+0085"},
		{name: "bidi override", pattern: "a\u202eb", wantErr: "bidirectional formatting character U+202E"},
		{name: "bidi isolate", pattern: "\u2067x", wantErr: "bidirectional formatting character U+2067"},
		{name: "invalid utf8", pattern: "ab\xff", wantErr: "invalid UTF-8 at byte 2"},
		{name: "encoded replacement char is fine", pattern: "a\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policy.ValidatePattern(tt.pattern)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePattern(%q) = %v, want nil", tt.pattern, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidatePattern(%q) = %v, want error containing %q", tt.pattern, err, tt.wantErr)
			}
			if !errors.Is(err, policy.ErrInvalidPattern) {
				t.Errorf("error %v does not wrap ErrInvalidPattern", err)
			}
		})
	}
}

// naiveMatch is the reference matcher for FuzzPattern: a direct recursive
// reading of the glob definition over runes ('*' tries every rune boundary,
// '?' takes one decoded rune, anything else must match byte for byte),
// memoized so that star-heavy inputs stay fast.
func naiveMatch(p, s string) bool {
	memo := map[[2]int]bool{}
	var rec func(p, s string) bool
	rec = func(p, s string) bool {
		key := [2]int{len(p), len(s)}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case p == "":
			r = s == ""
		case p[0] == '*':
			for i := 0; ; {
				if rec(p[1:], s[i:]) {
					r = true
					break
				}
				if i == len(s) {
					break
				}
				_, w := utf8.DecodeRuneInString(s[i:])
				i += w
			}
		case p[0] == '?':
			if s != "" {
				_, w := utf8.DecodeRuneInString(s)
				r = rec(p[1:], s[w:])
			}
		default:
			_, w := utf8.DecodeRuneInString(p)
			r = strings.HasPrefix(s, p[:w]) && rec(p[w:], s[w:])
		}
		memo[key] = r
		return r
	}
	return rec(p, s)
}

func FuzzPattern(f *testing.F) {
	seeds := [][2]string{
		{"*", ""},
		{"github_*", "github_list"},
		{"*_delete", "fs_delete"},
		{"*secret*", "read_secret"},
		{"a*ab*b", "aabab"},
		{"*a?c*", "xxabcxx"},
		{"x*?b*", "xéb"},
		{"*_??", "tool_é1"},
		{"a?b", "a\xffb"},
		{"?\u00e9", "\xc3\xc3\xa9"},
		{"*?*", "\xe2\x82"},
		{"a*a*a*b", "aaaaaaaaaaaa"},
		{"", ""},
		{"a\x00", "a\x00"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 24 || len(name) > 48 {
			return // Keep the reference matcher fast.
		}
		allow, err := policy.Compile(policy.Rules{Allow: []string{pattern}})
		if verr := policy.ValidatePattern(pattern); verr != nil {
			if err == nil {
				t.Fatalf("Compile accepted %q, which ValidatePattern rejects: %v", pattern, verr)
			}
			if policy.Match(pattern, name) {
				t.Fatalf("Match(%q, %q) = true for an invalid pattern", pattern, name)
			}
			return
		}
		if err != nil {
			t.Fatalf("Compile(%q): %v", pattern, err)
		}
		deny, err := policy.Compile(policy.Rules{Deny: []string{pattern}})
		if err != nil {
			t.Fatalf("Compile(%q): %v", pattern, err)
		}
		want := naiveMatch(pattern, name)
		if got := policy.Match(pattern, name); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference says %v", pattern, name, got, want)
		}
		if got := allow.Allows(name); got != want {
			t.Fatalf("allow %q: Allows(%q) = %v, reference says %v", pattern, name, got, want)
		}
		if got := deny.Allows(name); got != !want {
			t.Fatalf("deny %q: Allows(%q) = %v, reference says match=%v", pattern, name, got, want)
		}
	})
}
