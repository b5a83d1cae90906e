package bench

import (
	"slices"
	"strings"
	"testing"
)

// TestScoreCounts checks the counting against a verdict that differs by
// channel: text flags "T", structuredContent "S", the description "D";
// a lower-case letter flags without withholding.
func TestScoreCounts(t *testing.T) {
	defer func(v func(string, Channel) (bool, bool, error)) { verdictOf = v }(verdictOf)
	verdictOf = func(text string, ch Channel) (bool, bool, error) {
		c := "TSD"[ch : ch+1]
		strong := strings.Contains(text, c)
		return strong || strings.Contains(text, strings.ToLower(c)), strong, nil
	}
	samples := []Sample{
		{Text: "T S D", Label: LabelInjection, Family: "all", Line: 1},
		{Text: "t", Label: LabelInjection, Family: "all", Line: 2},
		{Text: "none", Label: LabelInjection, Family: "quiet", Line: 3},
		{Text: "D", Label: LabelInjection, Line: 4},
		{Text: "s", Label: LabelBenign, Family: "mail", Line: 5},
		{Text: "T", Label: LabelBenign, Family: "mail", Line: 6},
		{Text: "none", Label: LabelBenign, Family: "code", Line: 7},
	}
	r, err := Score(samples)
	if err != nil {
		t.Fatal(err)
	}
	want := [numChannels]Figures{
		ChannelText:        {Injection: Count{4, 2, 1}, Benign: Count{3, 1, 1}},
		ChannelStructured:  {Injection: Count{4, 1, 1}, Benign: Count{3, 1, 0}},
		ChannelDescription: {Injection: Count{4, 2, 2}, Benign: Count{3, 0, 0}},
	}
	if r.Channels != want {
		t.Errorf("channels = %+v\nwant       %+v", r.Channels, want)
	}
	if rec, ok := r.Channels[ChannelDescription].Recall(); !ok || rec != 0.5 {
		t.Errorf("description recall = %v, %v; want 0.5", rec, ok)
	}
	if fp, ok := r.Channels[ChannelText].FalsePositives(); !ok || fp != 1.0/3 {
		t.Errorf("text false positives = %v, %v; want 1/3", fp, ok)
	}
	wantFam := []Family{
		{Name: "", Label: LabelInjection, Samples: 1, Flagged: [numChannels]int{0, 0, 1}},
		{Name: "all", Label: LabelInjection, Samples: 2, Flagged: [numChannels]int{2, 1, 1}},
		{Name: "quiet", Label: LabelInjection, Samples: 1},
		{Name: "code", Label: LabelBenign, Samples: 1},
		{Name: "mail", Label: LabelBenign, Samples: 2, Flagged: [numChannels]int{1, 1, 0}},
	}
	if !slices.Equal(r.Families, wantFam) {
		t.Errorf("families = %+v\nwant       %+v", r.Families, wantFam)
	}
	var misses []string
	for _, m := range r.Misses {
		misses = append(misses, m.String())
	}
	wantMiss := []string{
		"line 2: structuredContent: injection not flagged",
		"line 2: tool description: injection not flagged",
		"line 3: text: injection not flagged",
		"line 3: structuredContent: injection not flagged",
		"line 3: tool description: injection not flagged",
		"line 4: text: injection not flagged",
		"line 4: structuredContent: injection not flagged",
		"line 5: structuredContent: benign sample flagged",
		"line 6: text: benign sample flagged and withheld in block mode",
	}
	if !slices.Equal(misses, wantMiss) {
		t.Errorf("misses:\n%s\nwant:\n%s", strings.Join(misses, "\n"), strings.Join(wantMiss, "\n"))
	}
	var empty Figures
	if _, ok := empty.Recall(); ok {
		t.Error("Recall of no injection is ok")
	}
}
