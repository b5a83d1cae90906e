package bench

import (
	"fmt"
	"io"
	"strings"
)

// Row is one labelled file's result.
type Row struct {
	File string
	Result
}

// WriteTables writes rows as the two Markdown tables of docs/security.md:
// per channel, the flagged and withheld counts of each label with recall
// and false-positive rate; then per family, the samples flagged on each
// channel.
func WriteTables(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| file | channel | injections flagged | benign flagged | recall | false positives | injections withheld in block mode | benign withheld in block mode |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		for ch, f := range r.Channels {
			fmt.Fprintf(&b, "| %s | %s | %d / %d | %d / %d | %s | %s | %d / %d | %d / %d |\n", r.File, Channel(ch),
				f.Injection.Flagged, f.Injection.Samples, f.Benign.Flagged, f.Benign.Samples,
				percent(f.Recall()), percent(f.FalsePositives()),
				f.Injection.Withheld, f.Injection.Samples, f.Benign.Withheld, f.Benign.Samples)
		}
	}
	b.WriteString("\n| file | label | family | samples | flagged (text) | flagged (structuredContent) | flagged (tool description) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		for _, f := range r.Families {
			name := f.Name
			if name == "" {
				name = "(none)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d |\n", r.File, f.Label, name, f.Samples,
				f.Flagged[ChannelText], f.Flagged[ChannelStructured], f.Flagged[ChannelDescription])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func percent(r float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*r)
}
