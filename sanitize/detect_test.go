package sanitize_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// The detection corpus (issue 16, item 11) lives in testdata/detect: one
// txtar archive per family, under inject/ for prompt injections and
// benign/ for ordinary tool output. Each file of an archive is a sample,
// named "NAME" (or "NAME escaped"); the sample is the file's text without
// its final line break. In an escaped sample, \u{HEX} stands for that rune
// and \tags{ASCII} for the ASCII spelled in Unicode tag characters, so
// that invisible characters stay readable.
//
// TestDetectionCorpus measures Scan through ToolResult, once with each
// sample as a text content and once as a string inside structuredContent,
// prints the confusion matrix and fails below the thresholds. Run
//
//	go test ./sanitize -run TestDetectionCorpus -v -detect-report=out.md
//
// to also write the matrix as Markdown (docs/security.md quotes it).
var detectReport = flag.String("detect-report", "", "write the detection corpus matrix as Markdown to this file")

const (
	minDetection    = 0.90 // of injections flagged, per channel
	maxFalsePositiv = 0.03 // of benign samples flagged, per channel
)

type sample struct {
	id     string // family/name
	family string
	inject bool
	text   string
}

var (
	escRune = regexp.MustCompile(`\\u\{([0-9A-Fa-f]{1,6})\}`)
	escTags = regexp.MustCompile(`\\tags\{([^}]*)\}`)
)

// unescapeSample expands \u{HEX} and \tags{ASCII} in an escaped sample.
func unescapeSample(s string) string {
	s = escTags.ReplaceAllStringFunc(s, func(m string) string {
		var b strings.Builder
		for _, c := range escTags.FindStringSubmatch(m)[1] {
			b.WriteRune(0xE0000 + c)
		}
		return b.String()
	})
	return escRune.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := strconv.ParseUint(escRune.FindStringSubmatch(m)[1], 16, 32)
		return string(rune(v))
	})
}

func loadDetectCorpus(t testing.TB) []sample {
	t.Helper()
	var out []sample
	for _, label := range []string{"inject", "benign"} {
		files, err := filepath.Glob(filepath.Join("testdata", "detect", label, "*.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			family := strings.TrimSuffix(filepath.Base(f), ".txtar")
			out = append(out, samples(t, f, family, label == "inject", ar)...)
		}
	}
	return out
}

// samples returns the samples of one family's archive.
func samples(t testing.TB, file, family string, inject bool, ar *txtar.Archive) []sample {
	t.Helper()
	if len(ar.Comment) > 0 {
		t.Fatalf("%s: text before the first sample", file)
	}
	var out []sample
	seen := map[string]bool{}
	for _, f := range ar.Files {
		name, flags, _ := strings.Cut(f.Name, " ")
		if seen[name] {
			t.Fatalf("%s: sample %s twice", file, name)
		}
		seen[name] = true
		s := sample{id: family + "/" + name, family: family, inject: inject, text: strings.TrimSuffix(string(f.Data), "\n")}
		if flags == "escaped" {
			s.text = unescapeSample(s.text)
		}
		if strings.TrimSpace(s.text) == "" {
			t.Fatalf("%s: sample %s is empty", file, s.id)
		}
		out = append(out, s)
	}
	return out
}

// cell counts one channel of the confusion matrix; withheld and blocked
// count the benign samples and the injections block mode withholds.
type cell struct{ tp, fn, fp, tn, withheld, blocked int }

func (c *cell) add(inject, flagged, blocked bool) {
	switch {
	case inject && flagged:
		c.tp++
	case inject:
		c.fn++
	case flagged:
		c.fp++
	default:
		c.tn++
	}
	if !inject && blocked {
		c.withheld++
	}
	if inject && blocked {
		c.blocked++
	}
}

func (c cell) detection() float64     { return ratio(c.tp, c.tp+c.fn) }
func (c cell) falsePositive() float64 { return ratio(c.fp, c.fp+c.tn) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// matrix is the confusion matrix for the text and structuredContent
// channels, in all and by family.
type matrix struct {
	total    [2]cell
	families map[string]*[2]cell
	order    []string
	misses   [2][]string // ids of wrong verdicts, per channel
}

var channels = [2]string{"text", "structuredContent"}

// detectOne sanitises s as a text content (channel 0) or as a string in
// structuredContent (channel 1) and reports whether anything was found and
// whether block mode withheld it.
func detectOne(t testing.TB, text string, channel int) (flagged, blocked bool) {
	t.Helper()
	res := func() *mcp.CallToolResult {
		if channel == 0 {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		}
		return &mcp.CallToolResult{StructuredContent: map[string]any{
			"items": []any{map[string]any{"id": 7, "title": "result", "body": text}},
			"total": 1,
		}}
	}
	src := sanitize.Source{Server: "corpus", Tool: "fetch"}
	_, rep, err := sanitize.ToolResult(res(), src, sanitize.Options{Wrap: true})
	if err != nil {
		t.Fatal(err)
	}
	_, brep, err := sanitize.ToolResult(res(), src, sanitize.Options{Wrap: true, OnSuspicious: sanitize.ModeBlock})
	if err != nil {
		t.Fatal(err)
	}
	return len(rep.Findings) > 0, brep.Blocked
}

func measure(t testing.TB, corpus []sample) *matrix {
	m := &matrix{families: map[string]*[2]cell{}}
	for _, s := range corpus {
		key := label(s.inject) + " " + s.family
		if m.families[key] == nil {
			m.families[key] = new([2]cell)
			m.order = append(m.order, key)
		}
		for ch := range channels {
			flagged, blocked := detectOne(t, s.text, ch)
			m.total[ch].add(s.inject, flagged, blocked)
			m.families[key][ch].add(s.inject, flagged, blocked)
			if flagged != s.inject || !s.inject && blocked {
				m.misses[ch] = append(m.misses[ch], s.id)
			}
		}
	}
	slices.Sort(m.order)
	return m
}

func label(inject bool) string {
	if inject {
		return "injection"
	}
	return "benign"
}

// markdown renders the matrix: the totals, then one row per family.
func (m *matrix) markdown() string {
	var b strings.Builder
	b.WriteString("| Channel | Injections flagged | Benign flagged | Detection | False positives | Injections withheld in block mode | Benign withheld in block mode |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for ch, name := range channels {
		c := m.total[ch]
		fmt.Fprintf(&b, "| %s | %d / %d | %d / %d | %.1f %% | %.1f %% | %d / %d | %d / %d |\n", name, c.tp, c.tp+c.fn,
			c.fp, c.fp+c.tn, 100*c.detection(), 100*c.falsePositive(), c.blocked, c.tp+c.fn, c.withheld, c.fp+c.tn)
	}
	b.WriteString("\n| Family | Samples | Flagged (text) | Flagged (structuredContent) |\n|---|---:|---:|---:|\n")
	for _, key := range m.order {
		f := m.families[key]
		n := f[0].tp + f[0].fn + f[0].fp + f[0].tn
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", key, n, f[0].tp+f[0].fp, f[1].tp+f[1].fp)
	}
	return b.String()
}

func TestDetectionCorpus(t *testing.T) {
	corpus := loadDetectCorpus(t)
	var inj, ben int
	for _, s := range corpus {
		if s.inject {
			inj++
		} else {
			ben++
		}
	}
	if inj < 100 || ben < 100 {
		t.Fatalf("corpus has %d injections and %d benign samples, want at least 100 of each", inj, ben)
	}
	m := measure(t, corpus)
	md := m.markdown()
	t.Logf("detection corpus: %d injections, %d benign\n%s", inj, ben, md)
	for ch, name := range channels {
		t.Logf("%s: wrong verdicts: %s", name, strings.Join(m.misses[ch], " "))
	}
	if *detectReport != "" {
		if err := os.WriteFile(*detectReport, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for ch, name := range channels {
		c := m.total[ch]
		if c.detection() < minDetection {
			t.Errorf("%s: detection %.1f %% is below %.0f %%", name, 100*c.detection(), 100*minDetection)
		}
		if c.falsePositive() > maxFalsePositiv {
			t.Errorf("%s: false positives %.1f %% are above %.0f %%", name, 100*c.falsePositive(), 100*maxFalsePositiv)
		}
		if c.withheld > 0 {
			t.Errorf("%s: block mode withheld %d benign samples", name, c.withheld)
		}
	}
}
