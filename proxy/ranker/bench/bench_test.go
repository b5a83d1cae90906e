package bench

import (
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/proxy/ranker"
)

func TestReadErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"request": "x"}`, `f line 1: names no tool`},
		{"\n" + `{"request": "", "tools": ["a"]}`, `f line 2: "request" is missing`},
		{`{"request": "x", "steps": [{"query": "y"}]}`, `step 1: "tools" is empty`},
		{`{"request": "x", "steps": [{"tools": ["a"]}]}`, `step 1: "query" is missing`},
		{`{"request": "x", "tools": ["a"], "steps": [{"query": "y", "tools": ["a"]}]}`, `has both "steps" and "tools"`},
		{`{"request": "x", "tolls": ["a"]}`, `unknown field "tolls"`},
		{`{"q": "x", "tool": "a"}`, `"q" needs "server" and "tool"`},
		{`not json`, `f line 1: not a labelled request`},
		{"# only a comment\n", `f: no labelled requests`},
	}
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.in), "f")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
	tasks, err := Read(strings.NewReader(`{"q": "add", "server": "s", "tool": "sum"}
{"request": "r", "tools": ["a", "b"]}`), "f")
	if err != nil || len(tasks) != 2 || tasks[0].Steps[0].Tools[0] != "mcp_s_sum" || len(tasks[1].Steps) != 2 || tasks[1].Steps[1].Query != "r" {
		t.Errorf("Read: %+v, %v", tasks, err)
	}
}

// fixed answers every query with the same names.
type fixed map[string][]string

func (f fixed) Search(q string, limit int) []string {
	out := f[q]
	return out[:min(limit, len(out))]
}

func TestScore(t *testing.T) {
	tasks := []Task{{Request: "r", Steps: []Step{
		{Query: "s1", Tools: []string{"a", "a2"}}, // first: @1
		{Query: "s2", Tools: []string{"b"}},       // third: @5
		{Query: "s3", Tools: []string{"c"}},       // not in its five
	}}}
	s := fixed{"s1": {"a2", "x"}, "s2": {"x", "y", "b"}, "s3": {"1", "2", "3", "4", "5", "c"},
		"r": {"1", "2", "3", "4", "5", "6", "b", "8", "9", "10", "a"}}
	f, err := Score(s, tasks, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if f.Tasks != 1 || f.Steps != 3 || f.Step1 != 1 || f.Step5 != 2 || f.Whole5 != 0 || f.Whole10 != 1 || f.Complete != 0 {
		t.Errorf("figures %+v", f)
	}
	if _, err := Score(s, tasks, func(n string) bool { return n != "b" }); err == nil || !strings.Contains(err.Error(), `tool "b" is not in the catalog`) {
		t.Errorf("unknown label: %v", err)
	}
}

// TestBM25 checks the baseline ranks by plain term overlap, without
// stemming: "issues" does not find "issue".
func TestBM25(t *testing.T) {
	x := NewBM25([]ranker.Doc{
		{Name: "mcp_g_create_issue", Description: "Create an issue"},
		{Name: "mcp_g_list_issues", Description: "List issues"},
		{Name: "mcp_s_post_message", Description: "Post a message"},
	})
	if got := x.Search("list the issues", 5); len(got) != 1 || got[0] != "mcp_g_list_issues" {
		t.Errorf("list the issues: %v", got)
	}
	if got := x.Search("create issue", 1); len(got) != 1 || got[0] != "mcp_g_create_issue" {
		t.Errorf("create issue: %v", got)
	}
}
