package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/policy"
)

func mustCompile(t testing.TB, r policy.Rules) *policy.Layer {
	t.Helper()
	l, err := policy.Compile(r)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", r, err)
	}
	return l
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name     string
		rules    policy.Rules
		wantErrs []string // each must appear; empty means no error
	}{
		{name: "empty rules", rules: policy.Rules{}},
		{name: "valid", rules: policy.Rules{Allow: []string{"github_*"}, Deny: []string{"*_delete"}}},
		{
			name:     "empty allow pattern",
			rules:    policy.Rules{Allow: []string{"ok", ""}},
			wantErrs: []string{"allow[1]: invalid pattern: empty"},
		},
		{
			name:     "control character in deny",
			rules:    policy.Rules{Deny: []string{"a\x07"}},
			wantErrs: []string{"deny[0]: invalid pattern: control character U+0007"},
		},
		{
			name: "every problem at once",
			rules: policy.Rules{
				Allow: []string{"", "fine", strings.Repeat("x", 300)},
				Deny:  []string{"ok", "ok", "bad\u202e"},
			},
			wantErrs: []string{
				"allow[0]: invalid pattern: empty",
				"allow[2]: invalid pattern: 300 bytes, limit 256",
				"deny[2]: invalid pattern: bidirectional formatting character U+202E",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := policy.Compile(tt.rules)
			if len(tt.wantErrs) == 0 {
				if err != nil || l == nil {
					t.Fatalf("Compile = %v, %v; want a layer", l, err)
				}
				if verr := tt.rules.Validate(); verr != nil {
					t.Errorf("Validate = %v, want nil", verr)
				}
				return
			}
			if err == nil {
				t.Fatalf("Compile succeeded, want errors %q", tt.wantErrs)
			}
			if l != nil {
				t.Errorf("Compile returned a layer with an error")
			}
			if !errors.Is(err, policy.ErrInvalidPattern) {
				t.Errorf("error does not wrap ErrInvalidPattern: %v", err)
			}
			msg := err.Error()
			for _, w := range tt.wantErrs {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if n := len(strings.Split(msg, "\n")); n != len(tt.wantErrs) {
				t.Errorf("got %d errors, want %d: %q", n, len(tt.wantErrs), msg)
			}
		})
	}
}

func TestLayer(t *testing.T) {
	type check struct {
		name string
		want bool
	}
	tests := []struct {
		name   string
		rules  *policy.Rules // nil means a nil *Layer
		checks []check
	}{
		{
			name:   "nil layer allows everything",
			checks: []check{{"anything", true}, {"", true}},
		},
		{
			name:   "empty rules allow everything",
			rules:  &policy.Rules{},
			checks: []check{{"anything", true}},
		},
		{
			name:   "empty allow allows all but denied",
			rules:  &policy.Rules{Deny: []string{"*_delete"}},
			checks: []check{{"fs_read", true}, {"fs_delete", false}},
		},
		{
			name:   "allow list hides the rest",
			rules:  &policy.Rules{Allow: []string{"fs_*", "github_list"}},
			checks: []check{{"fs_read", true}, {"github_list", true}, {"github_create", false}, {"", false}},
		},
		{
			name:   "deny wins over allow",
			rules:  &policy.Rules{Allow: []string{"fs_*"}, Deny: []string{"fs_delete"}},
			checks: []check{{"fs_read", true}, {"fs_delete", false}},
		},
		{
			name:   "deny wins over exact allow",
			rules:  &policy.Rules{Allow: []string{"fs_delete"}, Deny: []string{"*"}},
			checks: []check{{"fs_delete", false}, {"fs_read", false}},
		},
		{
			name:   "star allow with other patterns",
			rules:  &policy.Rules{Allow: []string{"x", "*", "y*"}},
			checks: []check{{"anything", true}},
		},
		{
			name:   "question in allow",
			rules:  &policy.Rules{Allow: []string{"tool_?"}},
			checks: []check{{"tool_1", true}, {"tool_é", true}, {"tool_12", false}},
		},
		{
			name:   "matching is on the whole name",
			rules:  &policy.Rules{Deny: []string{"delete"}},
			checks: []check{{"delete", false}, {"fs_delete", true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l *policy.Layer
			if tt.rules != nil {
				l = mustCompile(t, *tt.rules)
			}
			for _, c := range tt.checks {
				if got := l.Allows(c.name); got != c.want {
					t.Errorf("Allows(%q) = %v, want %v", c.name, got, c.want)
				}
			}
		})
	}
}

func TestLayerEmpty(t *testing.T) {
	tests := []struct {
		name  string
		layer *policy.Layer
		want  bool
	}{
		{name: "nil", layer: nil, want: true},
		{name: "no patterns", layer: mustCompile(t, policy.Rules{}), want: true},
		{name: "empty lists", layer: mustCompile(t, policy.Rules{Allow: []string{}, Deny: []string{}}), want: true},
		{name: "allow", layer: mustCompile(t, policy.Rules{Allow: []string{"a"}}), want: false},
		{name: "deny", layer: mustCompile(t, policy.Rules{Deny: []string{"*"}}), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.layer.Empty(); got != tt.want {
				t.Errorf("Empty() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChain(t *testing.T) {
	global := mustCompile(t, policy.Rules{Deny: []string{"*_admin"}})
	agent := mustCompile(t, policy.Rules{Allow: []string{"github_*", "fs_*"}})
	server := mustCompile(t, policy.Rules{Deny: []string{"github_delete_*"}})
	tests := []struct {
		name  string
		chain policy.Chain
		in    string
		want  bool
	}{
		{name: "nil chain allows", chain: nil, in: "x", want: true},
		{name: "nil layers skipped", chain: policy.Chain{nil, nil}, in: "x", want: true},
		{name: "allowed by every layer", chain: policy.Chain{global, agent, server}, in: "github_list", want: true},
		{name: "denied globally", chain: policy.Chain{global, agent, server}, in: "github_admin", want: false},
		{name: "not in agent allow list", chain: policy.Chain{global, agent, server}, in: "slack_post", want: false},
		{name: "allowed globally but denied at server", chain: policy.Chain{global, agent, server}, in: "github_delete_repo", want: false},
		{name: "server deny alone", chain: policy.Chain{nil, nil, server}, in: "github_delete_repo", want: false},
		{name: "agent allow does not override global deny", chain: policy.Chain{global, mustCompile(t, policy.Rules{Allow: []string{"fs_admin"}})}, in: "fs_admin", want: false},
		{name: "nil layer among others", chain: policy.Chain{global, nil, server}, in: "slack_post", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.chain.Allows(tt.in); got != tt.want {
				t.Errorf("Allows(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// benchRules is a realistic layer: ten allow and ten deny globs of the
// shapes operators write.
var benchRules = policy.Rules{
	Allow: []string{
		"github_*", "gitlab_*", "fs_read_*", "fs_list_?", "*_search",
		"jira_get_issue", "slack_post_message", "db_*_query", "*docs*", "k8s_get_*",
	},
	Deny: []string{
		"*_delete", "*_delete_*", "*admin*", "github_*_secret*", "fs_*_root",
		"db_drop_*", "*_exec", "k8s_*_secrets", "slack_?dmin", "shell",
	},
}

var benchNames = []string{
	"github_create_issue",      // allowed
	"github_delete_repository", // denied
	"slack_post_message",       // exact allow
	"weather_forecast",         // not allowed
	"db_read_only_query",       // middle segment
	"k8s_list_secrets",         // denied by deny glob after allow miss
}

func benchChain(t testing.TB) policy.Chain {
	return policy.Chain{
		mustCompile(t, policy.Rules{Deny: []string{"*_admin", "*password*"}}),
		mustCompile(t, benchRules),
		mustCompile(t, policy.Rules{Deny: []string{"github_delete_*"}}),
	}
}

func TestAllowsDoesNotAllocate(t *testing.T) {
	l := mustCompile(t, benchRules)
	c := benchChain(t)
	for _, name := range benchNames {
		if n := testing.AllocsPerRun(100, func() { l.Allows(name) }); n != 0 {
			t.Errorf("Layer.Allows(%q) allocates %v times", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { c.Allows(name) }); n != 0 {
			t.Errorf("Chain.Allows(%q) allocates %v times", name, n)
		}
	}
}

func BenchmarkAllows(b *testing.B) {
	l := mustCompile(b, benchRules)
	c := benchChain(b)
	b.Run("layer", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allows(benchNames[i%len(benchNames)])
			i++
		}
	})
	b.Run("chain", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c.Allows(benchNames[i%len(benchNames)])
			i++
		}
	})
}

// BenchmarkMatchPathological runs patterns that take exponential time in a
// backtracking matcher against a long name they do not match.
func BenchmarkMatchPathological(b *testing.B) {
	name := strings.Repeat("a", 256)
	for _, p := range []string{"a*a*a*a*a*a*a*a*b*", "*?a?a?a?a?b*"} {
		l := mustCompile(b, policy.Rules{Allow: []string{p}})
		if l.Allows(name) {
			b.Fatalf("%q matches", p)
		}
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.Allows(name)
			}
		})
	}
}

func TestAllowsAny(t *testing.T) {
	l := mustCompile(t, policy.Rules{Allow: []string{"mcp_github_*"}, Deny: []string{"mcp_github_delete_*", "*_admin"}})
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{[]string{"mcp_github_read"}, true},
		{[]string{"mcp_github_delete_repo"}, false},
		// Renamed after a collision: the identity still matches the deny.
		{[]string{"mcp_github_delete_repo_1a2b3c4d", "mcp_github_delete_repo"}, false},
		// Shortened: the cut public name lost the suffix the deny names.
		{[]string{"mcp_github_" + strings.Repeat("x", 47) + "_0badf00d", "mcp_github_" + strings.Repeat("x", 60) + "_admin"}, false},
		// Another letter case.
		{[]string{"mcp_github_DELETE_repo"}, false},
		{[]string{"MCP_GITHUB_READ"}, true},
		// Allowed by its identity though the public name is a bare one.
		{[]string{"read", "mcp_github_read"}, true},
		{[]string{"read", "mcp_other_read"}, false},
	} {
		if got := l.AllowsAny(c.names...); got != c.want {
			t.Errorf("AllowsAny(%q) = %v, want %v", c.names, got, c.want)
		}
	}
	var none *policy.Layer
	if !none.AllowsAny("x") || !(policy.Chain{nil, l}).AllowsAny("mcp_github_x") || (policy.Chain{l, nil}).AllowsAny("mcp_github_delete_x") {
		t.Error("nil layers and chains")
	}
}
