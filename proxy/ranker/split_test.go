package ranker

import (
	"slices"
	"testing"
)

func TestSplitParts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create a pull request", []string{"create a pull request"}},
		{"find the failing job, then post its logs to Slack", []string{"find the failing job", " ", " post its logs to Slack"}},
		{"read a.txt and b.txt; delete c", []string{"read a", "txt ", " b", "txt", " delete c"}},
		{"Android THEN band", []string{"Android ", " band"}},
		{"列出文件，然后删除", []string{"列出文件", "然后删除"}},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		splitParts(tt.in, func(p string) { got = append(got, p) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitParts(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSearchMultiStep: over the recorded catalog, a request of three
// steps finds a tool for each among the first ten, although
// the later steps' words outweigh the first's.
func TestSearchMultiStep(t *testing.T) {
	c := loadCatalog(t)
	ix := New(c.docs)
	const request = "Go to example.com in the browser, fill in the login form and take a screenshot"
	hits := ix.Search(request, 10, "")
	checkHits(t, ix, hits, 10, "")
	var got []string
	for _, h := range hits {
		got = append(got, c.docs[h.Doc].Name)
	}
	for _, step := range [][]string{
		{"mcp_chrome_navigate_page", "mcp_playwright_browser_navigate", "mcp_puppeteer_puppeteer_navigate"},
		{"mcp_chrome_fill_form", "mcp_playwright_browser_fill_form", "mcp_puppeteer_puppeteer_fill"},
		{"mcp_chrome_take_screenshot", "mcp_playwright_browser_take_screenshot", "mcp_puppeteer_puppeteer_screenshot"},
	} {
		if !slices.ContainsFunc(got, func(n string) bool { return slices.Contains(step, n) }) {
			t.Errorf("%q: first ten %v have none of %v", request, got, step)
		}
	}
}

// TestSearchCJK: tools described in Chinese are found by a request in
// Chinese, which has no spaces between its words, including by a word of
// one character ("群") that no bigram of the request holds.
func TestSearchCJK(t *testing.T) {
	docs := []Doc{
		{Name: "mcp_fs_delete", Server: "fs", Description: "删除指定路径的文件"},
		{Name: "mcp_fs_list", Server: "fs", Description: "列出目录中的所有文件和子目录"},
		{Name: "mcp_web_search", Server: "web", Description: "使用搜索引擎搜索网页"},
		{Name: "mcp_chat_list", Server: "chat", Description: "获取用户所在的群列表"},
	}
	wantFirst(t, docs, map[string]string{
		"请列出这个目录里的文件": "mcp_fs_list",
		"帮我删除一个文件":    "mcp_fs_delete",
		"在网上搜索最新消息":   "mcp_web_search",
		"我在哪些群里":      "mcp_chat_list",
	})
}
