package router_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/router"
)

var publicRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestPublicName(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		prefix string
		tool   string
		want   string
	}{
		{name: "plain", prefix: "github", tool: "get_issue", want: "mcp_github_get_issue"},
		{name: "dash kept", prefix: "brave-search", tool: "web-search", want: "mcp_brave-search_web-search"},
		{name: "dot", prefix: "brave-search", tool: "web.search", want: "mcp_brave-search_web_search"},
		{name: "slash and space", prefix: "fs", tool: "dir/read file", want: "mcp_fs_dir_read_file"},
		{name: "emoji is one underscore", prefix: "x", tool: "go🙂", want: "mcp_x_go_"},
		{name: "cjk one underscore per rune", prefix: "x", tool: "日本", want: "mcp_x___"},
		{name: "invalid utf8 one underscore per byte", prefix: "x", tool: "\xff\xfe", want: "mcp_x___"},
		{name: "control chars", prefix: "x", tool: "a\nb\tc\x00", want: "mcp_x_a_b_c_"},
		{name: "empty name", prefix: "x", tool: "", want: "mcp_x_"},
		{name: "exactly 64", prefix: "p", tool: a(58), want: "mcp_p_" + a(58)},
		{name: "65 is shortened", prefix: "p", tool: a(59), want: "mcp_p_" + a(49) + "_508f137b"},
		{name: "long raw but short clean", prefix: "p", tool: strings.Repeat("é", 40), want: "mcp_p_" + strings.Repeat("_", 40)},
		{name: "long emoji hashed on raw", prefix: "p", tool: strings.Repeat("🙂", 60), want: "mcp_p_" + strings.Repeat("_", 49) + "_6a942b57"},
		{
			name:   "long prefix and dotted name",
			prefix: strings.Repeat("x", 32),
			tool:   strings.Repeat("tool.name/", 10),
			want:   "mcp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_tool_name_tool_nam_4d138fb5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := router.PublicName(tt.prefix, tt.tool)
			if got != tt.want {
				t.Errorf("PublicName(%q, %q) = %q, want %q", tt.prefix, tt.tool, got, tt.want)
			}
			if !publicRE.MatchString(got) {
				t.Errorf("PublicName(%q, %q) = %q does not match %s", tt.prefix, tt.tool, got, publicRE)
			}
		})
	}
}

func TestPublicNameShortenedIsExactly64(t *testing.T) {
	for n := 59; n < 200; n++ {
		if got := router.PublicName("p", strings.Repeat("b", n)); len(got) != router.MaxNameLen {
			t.Fatalf("name of %d bytes: len(%q) = %d, want %d", n, got, len(got), router.MaxNameLen)
		}
	}
}

func TestPublicNameHashUsesUncleanedName(t *testing.T) {
	// Two names that clean alike must still differ once shortened, because the
	// hash covers the raw name.
	long := strings.Repeat("z", 70)
	dot, under := router.PublicName("p", long+".x"), router.PublicName("p", long+"_x")
	if dot == under {
		t.Errorf("PublicName gives %q for both %q and %q", dot, long+".x", long+"_x")
	}
}

func TestPrefix(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		override string
		want     string
	}{
		{name: "plain", key: "github", want: "github"},
		{name: "override wins", key: "github", override: "gh", want: "gh"},
		{name: "dot", key: "brave.search", want: "brave-search"},
		{name: "underscore", key: "my_server", want: "my-server"},
		{name: "cjk", key: "日本", want: "--"},
		{name: "emoji", key: "a🙂b", want: "a-b"},
		{name: "invalid utf8", key: "a\xffb", want: "a-b"},
		{name: "space and slash", key: "a b/c", want: "a-b-c"},
		{name: "40 chars cut to 32", key: strings.Repeat("k", 40), want: strings.Repeat("k", 32)},
		{name: "unicode past the cut", key: strings.Repeat("k", 31) + "日本語", want: strings.Repeat("k", 31) + "-"},
		{name: "empty key", key: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := router.Prefix(tt.key, tt.override)
			if got != tt.want {
				t.Errorf("Prefix(%q, %q) = %q, want %q", tt.key, tt.override, got, tt.want)
			}
			if tt.key != "" && !router.ValidPrefix(got) {
				t.Errorf("Prefix(%q, %q) = %q is not a valid prefix", tt.key, tt.override, got)
			}
		})
	}
}

func TestValidPrefix(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "empty", in: "", want: false},
		{name: "one char", in: "a", want: true},
		{name: "mixed", in: "Brave-search-2", want: true},
		{name: "only dashes", in: "--", want: true},
		{name: "32 chars", in: strings.Repeat("a", 32), want: true},
		{name: "33 chars", in: strings.Repeat("a", 33), want: false},
		{name: "underscore", in: "my_server", want: false},
		{name: "dot", in: "brave.search", want: false},
		{name: "space", in: "a b", want: false},
		{name: "cjk", in: "日本", want: false},
		{name: "invalid utf8", in: "\xff", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := router.ValidPrefix(tt.in); got != tt.want {
				t.Errorf("ValidPrefix(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
