package bench

import (
	"fmt"
	"io"
)

// Row is one line of the table: a ranker's figures on one file.
type Row struct {
	File, Ranker string
	Figures
}

// WriteTable writes rows as the Markdown table of docs/discovery-figures.md.
func WriteTable(w io.Writer, rows []Row) error {
	if _, err := fmt.Fprintln(w, "| file | ranker | requests | steps | per step @1 | per step @5 | whole request @5 | whole request @10 | requests complete |\n|---|---|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rows {
		_, err := fmt.Fprintf(w, "| %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %d/%d |\n", r.File, r.Ranker, r.Tasks, r.Steps,
			r.Rate(r.Step1), r.Rate(r.Step5), r.Rate(r.Whole5), r.Rate(r.Whole10), r.Complete, r.Tasks)
		if err != nil {
			return err
		}
	}
	return nil
}
