package sanitize_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// corpusClasses maps the classes a payload header may name to the pattern
// Scan must report for it ("" for classes that are about the wrapper, not
// about detection).
var corpusClasses = map[string]string{
	"marker-spoof":    sanitize.PatternMarkerSpoof,
	"nested-wrapper":  sanitize.PatternMarkerSpoof,
	"role-tag":        sanitize.PatternRoleTag,
	"chat-template":   sanitize.PatternChatTemplate,
	"ignore-previous": sanitize.PatternIgnorePrevious,
	"fake-system":     sanitize.PatternFakeSystem,
	"hidden-unicode":  sanitize.PatternHiddenUnicode,
	"bidi":            sanitize.PatternBidiOverride,
	"zero-width":      sanitize.PatternZeroWidthRun,
	"tag-chars":       sanitize.PatternTagChars,
	"base64":          sanitize.PatternBase64Run,
	"hidden-markup":   sanitize.PatternHiddenMarkup,
	"long-line":       "",
}

type payload struct {
	name    string
	classes []string
	text    string
}

// loadCorpus reads testdata/injection: one payload per file, a header of
// "key: value" lines (classes, description), a line "---", then the
// payload, byte for byte. (Not txtar: txtar.Parse ends every file with a
// line break, and some payloads must end without one, right after a
// marker.)
func loadCorpus(t testing.TB) []payload {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "injection", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []payload
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head, text, ok := strings.Cut(string(data), "\n---\n")
		if !ok {
			t.Fatalf("%s: no --- line", f)
		}
		p := payload{name: strings.TrimSuffix(filepath.Base(f), ".txt"), text: text}
		for _, line := range strings.Split(head, "\n") {
			if v, ok := strings.CutPrefix(line, "classes:"); ok {
				for _, c := range strings.Split(v, ",") {
					p.classes = append(p.classes, strings.TrimSpace(c))
				}
			}
		}
		if len(p.classes) == 0 {
			t.Fatalf("%s: no classes in the header", f)
		}
		out = append(out, p)
	}
	return out
}

// TestInjectionCorpus runs every payload through ToolResult and checks the
// boundary: one opening and one closing marker carrying the result's nonce,
// the whole payload (neutralised) between them, no other marker phrase in
// the skeleton of the output; and that Scan reports the payload's classes.
func TestInjectionCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	if len(corpus) < 60 {
		t.Fatalf("corpus has %d payloads, want at least 60", len(corpus))
	}
	src := sanitize.Source{Server: "fixture", Tool: "injection"}
	seen := map[string]bool{}
	for _, p := range corpus {
		t.Run(p.name, func(t *testing.T) {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.text}}}
			out, rep, err := sanitize.ToolResult(res, src, sanitize.Options{Wrap: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Content) != 1 {
				t.Fatalf("got %d contents, want 1", len(out.Content))
			}
			text := out.Content[0].(*mcp.TextContent).Text
			_, body := checkWrapped(t, text, src)
			if text != p.text && body != sanitize.Neutralize(sanitize.Text(p.text)) {
				t.Errorf("body is not the cleaned, neutralised payload")
			}
			if text == p.text && !slices.Contains(p.classes, "nested-wrapper") {
				t.Errorf("payload passed as already wrapped")
			}
			// A payload that is exactly one wrapper of ours for this source
			// with a neutral body is kept (and only its body is scanned): it
			// is byte for byte what ToolResult could have produced.

			var got []string
			for _, f := range sanitize.Scan(p.text) {
				got = append(got, f.ID)
			}
			for _, c := range p.classes {
				want, ok := corpusClasses[c]
				if !ok {
					t.Fatalf("unknown class %q", c)
				}
				seen[c] = true
				if want != "" && !slices.Contains(got, want) {
					t.Errorf("Scan = %v, want it to include %s (class %s)", got, want, c)
				}
			}
			for _, f := range rep.Findings {
				if f.Where != "content[0]" {
					t.Errorf("finding %+v: want Where content[0]", f)
				}
			}
			if text != p.text && len(rep.Findings) != len(got) {
				t.Errorf("report has %d findings, Scan %d", len(rep.Findings), len(got))
			}
		})
	}
	for c := range corpusClasses {
		if !seen[c] {
			t.Errorf("no payload of class %s", c)
		}
	}
}
