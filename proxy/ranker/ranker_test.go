package ranker

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "snake", in: "mcp_github_create_pull_request", want: []string{"mcp", "github", "create", "pull", "request"}},
		{name: "camel", in: "createPullRequest", want: []string{"create", "Pull", "Request"}},
		{name: "kebab", in: "list-issues", want: []string{"list", "issues"}},
		{name: "acronym", in: "HTTPServer getURL", want: []string{"HTTP", "Server", "get", "URL"}},
		{name: "digits stay", in: "k8s a11y 3G", want: []string{"k8s", "a11y", "3G"}},
		{name: "punctuation", in: "Notion | Retrieve a page (v1).", want: []string{"Notion", "Retrieve", "a", "page", "v1"}},
		{name: "unicode", in: "Größe_ändern", want: []string{"Größe", "ändern"}},
		{name: "empty", in: " _-. ", want: nil},
		{name: "CJK characters and bigrams", in: "列出文件 in 目录，删", want: []string{"列", "列出", "出", "出文", "文", "文件", "件", "in", "目", "目录", "录", "删"}},
		{name: "CJK after Latin", in: "GitHub仓库の一覧", want: []string{"Git", "Hub", "仓", "仓库", "库", "库の", "の", "の一", "一", "一覧", "覧"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			splitWords(tt.in, func(w string) { got = append(got, w) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "plural and tense", in: "creates pull requests", want: []string{"creat", "pull", "request"}},
		{name: "same stem", in: "searching searched searches", want: []string{"search", "search", "search"}},
		{name: "stop words and fillers", in: "please show me all of the files", want: []string{"show", "file"}},
		{name: "case split then stem", in: "listDirectoriesWithSizes", want: []string{"list", "directori", "size"}},
		{name: "one letter dropped", in: "a b c.txt", want: []string{"txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := terms(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLead(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Get a file. Then more.", "Get a file."},
		{"\n   Run a query\n   with options", "Run a query"},
		{"Notion | List all users\nError Responses:", "Notion | List all users"},
		{"v1.2 is supported", "v1.2 is supported"},
		{strings.Repeat("x", 400), strings.Repeat("x", leadMax)},
	}
	for _, tt := range tests {
		if got := lead(tt.in); got != tt.want {
			t.Errorf("lead(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// sampleDocs is a small catalog for ranking sanity checks.
var sampleDocs = []Doc{
	{Name: "mcp_github_create_pull_request", Server: "github", Description: "Create a new pull request in a GitHub repository",
		Params: []Param{{Name: "head", Description: "The branch with your changes"}, {Name: "base", Description: "The branch to merge into"}}},
	{Name: "mcp_github_list_pull_requests", Server: "github", Description: "List and filter repository pull requests"},
	{Name: "mcp_github_create_issue", Server: "github", Description: "Create a new issue in a GitHub repository"},
	{Name: "mcp_github_list_issues", Server: "github", Description: "List issues in a GitHub repository with filtering options"},
	{Name: "mcp_gitlab_create_issue", Server: "gitlab", Description: "Create a new issue in a GitLab project"},
	{Name: "mcp_fs_read_text_file", Server: "fs", Description: "Read the complete contents of a file as text."},
	{Name: "mcp_fs_list_directory", Server: "fs", Description: "Get a detailed listing of all files and directories in a specified path."},
	{Name: "mcp_slack_slack_post_message", Server: "slack", Title: "Post message", Description: "Post a new message to a Slack channel"},
}

// first returns the name of the best hit, or "".
func first(ix *Index, query, server string) string {
	hits := ix.Search(query, 1, server)
	if len(hits) == 0 {
		return ""
	}
	return sampleDocs[hits[0].Doc].Name
}

func TestSearchRanking(t *testing.T) {
	ix := New(sampleDocs)
	tests := []struct {
		name, query, server, want string
	}{
		{name: "stemmed words", query: "creating pull requests", want: "mcp_github_create_pull_request"},
		{name: "camel case query", query: "listPullRequests", want: "mcp_github_list_pull_requests"},
		{name: "synonym abbreviation", query: "open a PR", want: "mcp_github_create_pull_request"},
		{name: "synonym folder", query: "what is in this folder", want: "mcp_fs_list_directory"},
		{name: "server named in the request", query: "new issue on gitlab", want: "mcp_gitlab_create_issue"},
		{name: "server filter", query: "create issue", server: "gitlab", want: "mcp_gitlab_create_issue"},
		{name: "server words do not outweigh the tool's", query: "github read file", want: "mcp_fs_read_text_file"},
		{name: "title", query: "post to slack", want: "mcp_slack_slack_post_message"},
		{name: "stop words only", query: "the of and", want: ""},
		{name: "unknown words", query: "zzyzx qwerty", want: ""},
		{name: "unknown server", query: "create issue", server: "nope", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := first(ix, tt.query, tt.server); got != tt.want {
				t.Errorf("Search(%q, 1, %q) first = %q, want %q", tt.query, tt.server, got, tt.want)
			}
		})
	}
}

func TestSearchLimitAndOrder(t *testing.T) {
	ix := New(sampleDocs)
	all := ix.Search("create list issue pull request file", 0, "")
	if len(all) < 5 {
		t.Fatalf("got %d hits, want at least 5", len(all))
	}
	checkHits(t, ix, all, 0, "")
	for limit := 1; limit <= len(all)+1; limit++ {
		got := ix.Search("create list issue pull request file", limit, "")
		if want := all[:min(limit, len(all))]; !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want the first %d of %v", limit, got, len(want), all)
		}
	}
	if ix.Len() != len(sampleDocs) {
		t.Errorf("Len() = %d, want %d", ix.Len(), len(sampleDocs))
	}
	if hits := New(nil).Search("anything", 5, ""); hits != nil {
		t.Errorf("empty index: got %v", hits)
	}
}

// TestSearchConcurrent runs searches in parallel on one Index (run with
// -race): the scratch space of one must never leak into another.
func TestSearchConcurrent(t *testing.T) {
	ix := New(sampleDocs)
	want := ix.Search("create issue", 0, "")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := ix.Search("create issue", 0, ""); !slices.Equal(got, want) {
					t.Errorf("concurrent search: got %v, want %v", got, want)
					return
				}
				ix.Search("list files in a directory", 3, "fs")
			}
		})
	}
	wg.Wait()
}

// TestSearchAllocations checks that a search of known words allocates
// only its result.
func TestSearchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop scratch space")
	}
	ix := New(sampleDocs)
	ix.Search("create a pull request", 5, "") // warm the pool
	if n := testing.AllocsPerRun(100, func() { ix.Search("create a pull request", 5, "") }); n > 1 {
		t.Errorf("Search allocates %.0f times, want at most 1 (the result)", n)
	}
}

// checkHits checks the properties every result has: at most limit hits
// (if limit > 0), valid distinct docs of server (if not empty), finite
// positive scores, best first and ties in doc order.
func checkHits(t *testing.T, ix *Index, hits []Hit, limit int, server string) {
	t.Helper()
	if limit > 0 && len(hits) > limit {
		t.Fatalf("%d hits for limit %d", len(hits), limit)
	}
	seen := map[int]bool{}
	for i, h := range hits {
		if h.Doc < 0 || h.Doc >= ix.Len() || seen[h.Doc] {
			t.Fatalf("hit %d: doc %d out of range or repeated", i, h.Doc)
		}
		seen[h.Doc] = true
		if server != "" && ix.docs[h.Doc].Server != server {
			t.Fatalf("hit %d: server %q, want %q", i, ix.docs[h.Doc].Server, server)
		}
		if !(h.Score > 0) || math.IsInf(h.Score, 0) {
			t.Fatalf("hit %d: score %v", i, h.Score)
		}
		if i > 0 && !better(hits[i-1], h) {
			t.Fatalf("hits %d and %d out of order: %v, %v", i-1, i, hits[i-1], h)
		}
	}
}

// FuzzSearch checks, for any query, limit and server filter, that Search
// does not panic, respects the limit and the filter, returns hits in
// order, and that a limited search is the prefix of the unlimited one.
func FuzzSearch(f *testing.F) {
	c := loadCatalog(f)
	ix := New(c.docs)
	servers := append([]string{""}, c.servers...)
	f.Add("open a pull request", 5, uint8(0))
	f.Add("createPullRequest on GitHub", 1, uint8(3))
	f.Add("kill process 4242", 0, uint8(7))
	f.Add("", -1, uint8(1))
	f.Add("\xff\xfe ÄÖÜ 日本語 mcp_x_y", 3, uint8(200))
	f.Fuzz(func(t *testing.T, query string, limit int, s uint8) {
		server := servers[int(s)%len(servers)]
		if s == 255 {
			server = "no such server"
		}
		hits := ix.Search(query, limit, server)
		checkHits(t, ix, hits, limit, server)
		if limit > 0 {
			all := ix.Search(query, 0, server)
			if want := all[:min(limit, len(all))]; !slices.Equal(hits, want) {
				t.Fatalf("limit %d: %v is not the prefix of %v", limit, hits, all)
			}
		}
	})
}

// TestSearchJoinedWords checks that two words of a request find the one
// word a tool writes them as.
func TestSearchJoinedWords(t *testing.T) {
	docs := []Doc{
		{Name: "rollout", Server: "k8s", Description: "Manage the rollout of a deployment: status, history, pause, resume"},
		{Name: "rollback_pipeline", Server: "ci", Description: "Run a pipeline that returns a project to its previous version"},
		{Name: "login", Server: "web", Description: "Sign a user into the current page with a password"},
		{Name: "navigate", Server: "web", Description: "Go to a URL or site in the browser"},
	}
	wantFirst(t, docs, map[string]string{
		"roll back the deployment": "rollback_pipeline",
		"log in on this site":      "login",
		"Log In":                   "login",
	})
}

// wantFirst checks that each query of cases finds its tool first among
// docs.
func wantFirst(t *testing.T, docs []Doc, cases map[string]string) {
	t.Helper()
	ix := New(docs)
	for query, want := range cases {
		hits := ix.Search(query, 1, "")
		if len(hits) == 0 || docs[hits[0].Doc].Name != want {
			t.Errorf("Search(%q) = %v, want %s first", query, hits, want)
		}
	}
}

// TestSearchSoftwareSynonyms checks rows of the synonym table that name
// an operation or thing in everyday words: a request in those words finds
// the tool that uses the other.
func TestSearchSoftwareSynonyms(t *testing.T) {
	docs := []Doc{
		{Name: "monitor_create", Server: "crawl", Description: "Create a monitor that checks a page for changes"},
		{Name: "page_edit", Server: "wiki", Description: "Edit the content of a page"},
		{Name: "find_releases", Server: "errors", Description: "Find the releases of a project"},
		{Name: "insert_many", Server: "db", Description: "Insert many documents into a collection"},
		{Name: "list_collections", Server: "db", Description: "List the collections of a database"},
		{Name: "failure_logs", Server: "ci", Description: "Get the logs of a job's failure"},
		{Name: "job_logs", Server: "ci", Description: "Get the logs of a job"},
		{Name: "elevation", Server: "maps", Description: "Get elevation data for locations on the earth"},
		{Name: "geocode", Server: "maps", Description: "Convert an address into coordinates"},
	}
	ix := New(docs)
	tests := []struct{ query, want string }{
		{"get notified when a page changes", "monitor_create"},
		{"which version went out", "find_releases"},
		{"add rows to a collection", "insert_many"},
		{"logs of the job that went red", "failure_logs"},
		{"how high is the tower", "elevation"},
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, 1, "")
		if len(hits) == 0 || docs[hits[0].Doc].Name != tt.want {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
		}
	}
}
