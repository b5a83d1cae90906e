package bench

import (
	"fmt"
	"slices"
)

// Searcher ranks a catalog: the public names of the best tools for query,
// at most limit, best first.
type Searcher interface {
	Search(query string, limit int) []string
}

// Figures are a ranker's scores on a set of tasks. Every recall counts
// steps, the tools a request needs.
type Figures struct {
	Tasks, Steps int
	Step1        int // steps whose own query ranked one of its tools first
	Step5        int // … among the first five
	Whole5       int // steps one of whose tools the whole request's query ranked among the first five
	Whole10      int // … among the first ten
	Complete     int // tasks all of whose steps were found by their own query's first five
	Misses       []string
}

// Rate is n over the steps, or 0 without steps.
func (f Figures) Rate(n int) float64 {
	if f.Steps == 0 {
		return 0
	}
	return float64(n) / float64(f.Steps)
}

// Score scores s on tasks. known reports whether a tool is in the
// catalog: a label it does not know is an error, never a silent miss.
func Score(s Searcher, tasks []Task, known func(name string) bool) (Figures, error) {
	var f Figures
	for _, t := range tasks {
		for _, st := range t.Steps {
			for _, name := range st.Tools {
				if !known(name) {
					return Figures{}, fmt.Errorf("request %q: tool %q is not in the catalog", t.Request, name)
				}
			}
		}
		f.Tasks++
		whole := s.Search(t.Request, 10)
		all := true
		for _, st := range t.Steps {
			f.Steps++
			hits := s.Search(st.Query, 5)
			r := rank(hits, st.Tools)
			if r == 0 {
				f.Step1++
			}
			if r >= 0 {
				f.Step5++
			} else {
				all = false
				first := "nothing"
				if len(hits) > 0 {
					first = hits[0]
				}
				f.Misses = append(f.Misses, fmt.Sprintf("step %q: want %v, first %s", st.Query, st.Tools, first))
			}
			switch w := rank(whole, st.Tools); {
			case w >= 0 && w < 5:
				f.Whole5++
				f.Whole10++
			case w >= 5:
				f.Whole10++
			default:
				f.Misses = append(f.Misses, fmt.Sprintf("request %q: %v not in its first 10", t.Request, st.Tools))
			}
		}
		if all {
			f.Complete++
		}
	}
	return f, nil
}

// rank is the position of the first of tools in hits, or -1.
func rank(hits, tools []string) int {
	for i, h := range hits {
		if slices.Contains(tools, h) {
			return i
		}
	}
	return -1
}
