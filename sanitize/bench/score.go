package bench

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// Channel is a path a text takes through sanitize.
type Channel int

// The channels Score measures, in the order of the tables.
const (
	ChannelText        Channel = iota // a tool result's text content
	ChannelStructured                 // a string inside a tool result's structuredContent
	ChannelDescription                // a tool's description, as a catalog is ingested
	numChannels
)

var channelNames = [numChannels]string{"text", "structuredContent", "tool description"}

func (c Channel) String() string { return channelNames[c] }

// Count counts the samples of one label on one channel.
type Count struct {
	Samples  int
	Flagged  int // any finding
	Withheld int // what block mode withholds
}

// Figures are one channel's counts, by label.
type Figures struct {
	Injection, Benign Count
}

// Recall is the share of injections flagged; ok is false with no injection.
func (f Figures) Recall() (r float64, ok bool) {
	return ratio(f.Injection.Flagged, f.Injection.Samples)
}

// FalsePositives is the share of benign samples flagged; ok is false with
// no benign sample.
func (f Figures) FalsePositives() (r float64, ok bool) {
	return ratio(f.Benign.Flagged, f.Benign.Samples)
}

func ratio(a, b int) (float64, bool) {
	if b == 0 {
		return 0, false
	}
	return float64(a) / float64(b), true
}

// Family counts the samples of one family and label.
type Family struct {
	Name, Label string
	Samples     int
	Flagged     [numChannels]int
}

// Miss is a wrong verdict: an injection not flagged, or a benign sample
// flagged. It names the sample by line, never by content.
type Miss struct {
	Line     int
	Channel  Channel
	Label    string
	Withheld bool // a benign sample that block mode withholds
}

func (m Miss) String() string {
	if m.Label == LabelInjection {
		return fmt.Sprintf("line %d: %s: injection not flagged", m.Line, m.Channel)
	}
	if m.Withheld {
		return fmt.Sprintf("line %d: %s: benign sample flagged and withheld in block mode", m.Line, m.Channel)
	}
	return fmt.Sprintf("line %d: %s: benign sample flagged", m.Line, m.Channel)
}

// Result is what Score measures on one labelled set.
type Result struct {
	Channels [numChannels]Figures
	Families []Family // sorted by label, then name
	Misses   []Miss   // by line, then channel
}

// Score runs every sample through each channel and counts the verdicts.
func Score(samples []Sample) (Result, error) {
	var r Result
	families := map[[2]string]*Family{}
	for _, s := range samples {
		key := [2]string{s.Label, s.Family}
		fam := families[key]
		if fam == nil {
			fam = &Family{Name: s.Family, Label: s.Label}
			families[key] = fam
		}
		fam.Samples++
		for ch := range numChannels {
			flagged, withheld, err := verdictOf(s.Text, ch)
			if err != nil {
				return Result{}, fmt.Errorf("line %d: %s: %w", s.Line, ch, err)
			}
			c := &r.Channels[ch].Benign
			if s.Injection() {
				c = &r.Channels[ch].Injection
			}
			c.Samples++
			if flagged {
				c.Flagged++
				fam.Flagged[ch]++
			}
			if withheld {
				c.Withheld++
			}
			if flagged != s.Injection() || !s.Injection() && withheld {
				r.Misses = append(r.Misses, Miss{Line: s.Line, Channel: ch, Label: s.Label, Withheld: withheld})
			}
		}
	}
	for _, f := range families {
		r.Families = append(r.Families, *f)
	}
	slices.SortFunc(r.Families, func(a, b Family) int {
		if a.Label != b.Label {
			return cmpLabel(a.Label, b.Label)
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return r, nil
}

// cmpLabel orders injections before benign samples.
func cmpLabel(a, b string) int {
	if a == LabelInjection {
		return -1
	}
	if b == LabelInjection {
		return 1
	}
	return 0
}

// source names the tool whose result or description a sample stands in for.
var source = sanitize.Source{Server: "bench", Tool: "fetch"}

// verdictOf is verdict; a test of the counting replaces it.
var verdictOf = verdict

// verdict passes text through channel ch and reports whether anything was
// found and whether block mode withholds it.
func verdict(text string, ch Channel) (flagged, withheld bool, err error) {
	if ch == ChannelDescription {
		tool := &mcp.Tool{Name: source.Tool, Description: text, InputSchema: map[string]any{"type": "object"}}
		_, fs := sanitize.Tool(tool, source.Server, sanitize.DefOptions{})
		return len(fs) > 0, sanitize.Withholds(fs), nil
	}
	res := func() *mcp.CallToolResult {
		if ch == ChannelText {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		}
		return &mcp.CallToolResult{StructuredContent: map[string]any{
			"items": []any{map[string]any{"id": 7, "title": "result", "body": text}},
			"total": 1,
		}}
	}
	_, rep, err := sanitize.ToolResult(res(), source, sanitize.Options{Wrap: true})
	if err != nil {
		return false, false, err
	}
	_, brep, err := sanitize.ToolResult(res(), source, sanitize.Options{Wrap: true, OnSuspicious: sanitize.ModeBlock})
	if err != nil {
		return false, false, err
	}
	return len(rep.Findings) > 0, brep.Blocked, nil
}
