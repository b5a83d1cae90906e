package policy_test

import (
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/policy"
)

func ptr(b bool) *bool { return &b }

// TestBelieveNeverTrustsAnUntrustedServer: an untrusted server's hints,
// however safe they claim the tool is, leave the protocol's worst-case
// defaults; a trusted server's are believed; the config's override is
// believed either way.
func TestBelieveNeverTrustsAnUntrustedServer(t *testing.T) {
	safe := policy.Hints{ReadOnly: ptr(true), Destructive: ptr(false), Idempotent: ptr(true), OpenWorld: ptr(false)}
	worst := policy.Traits{ReadOnly: false, Destructive: true, OpenWorld: true}
	tests := []struct {
		name     string
		override policy.Hints
		hints    policy.Hints
		trusted  bool
		want     policy.Traits
	}{
		{"untrusted lies", policy.Hints{}, safe, false, worst},
		{"trusted believed", policy.Hints{}, safe, true, policy.Traits{ReadOnly: true}},
		{"trusted, says nothing: defaults", policy.Hints{}, policy.Hints{}, true, worst},
		{"trusted, not read-only, destructive unsaid: destructive", policy.Hints{}, policy.Hints{ReadOnly: ptr(false), OpenWorld: ptr(false)}, true, policy.Traits{Destructive: true}},
		{"read-only is never destructive", policy.Hints{}, policy.Hints{ReadOnly: ptr(true), Destructive: ptr(true)}, true, policy.Traits{ReadOnly: true, OpenWorld: true}},
		{"override on an untrusted server", policy.Hints{ReadOnly: ptr(true)}, policy.Hints{OpenWorld: ptr(false)}, false, policy.Traits{ReadOnly: true, OpenWorld: true}},
		{"override beats a trusted lie", policy.Hints{ReadOnly: ptr(false)}, safe, true, policy.Traits{ReadOnly: false, Destructive: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.Believe(tt.override, tt.hints, tt.trusted); got != tt.want {
				t.Errorf("Believe = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClassDeny(t *testing.T) {
	l := mustCompile(t, policy.Rules{Deny: []string{"class:destructive", "mcp_x_*"}})
	readOnly := policy.Traits{ReadOnly: true, OpenWorld: true}
	destructive := policy.Traits{Destructive: true}
	if !l.AllowsTool(readOnly, "mcp_a_read") {
		t.Error("a read-only tool is denied by class:destructive")
	}
	if l.AllowsTool(destructive, "mcp_a_drop") {
		t.Error("a destructive tool passes class:destructive")
	}
	if l.AllowsTool(readOnly, "mcp_x_read") {
		t.Error("a name deny stops working beside a class deny")
	}
	// The class entry is no glob: it names no tool called "class:destructive".
	if !l.AllowsAny("class:destructive") || l.Empty() {
		t.Error("a class entry is read as a name, or the layer reads empty")
	}
	ow := mustCompile(t, policy.Rules{Deny: []string{"class:openWorld"}})
	if ow.AllowsTool(policy.Traits{ReadOnly: true, OpenWorld: true}, "mcp_a_fetch") || !ow.AllowsTool(policy.Traits{ReadOnly: true}, "mcp_a_local") {
		t.Error("class:openWorld judges by openWorld")
	}
	w := mustCompile(t, policy.Rules{Deny: []string{"class:write"}})
	if w.AllowsTool(policy.Traits{}, "mcp_a_put") || !w.AllowsTool(policy.Traits{ReadOnly: true, OpenWorld: true}, "mcp_a_get") {
		t.Error("class:write judges by readOnly")
	}
	chain := policy.Chain{nil, mustCompile(t, policy.Rules{Allow: []string{"mcp_a_*"}}), l}
	if chain.AllowsTool(destructive, "mcp_a_drop") || !chain.AllowsTool(readOnly, "mcp_a_read") || chain.AllowsTool(readOnly, "mcp_b_read") {
		t.Error("a chain does not apply every layer's names and classes")
	}
}

func TestClassErrors(t *testing.T) {
	_, err := policy.Compile(policy.Rules{Allow: []string{"class:destructive"}, Deny: []string{"class:dangerous"}})
	for _, want := range []string{
		`allow[0]: invalid pattern: "class:destructive": a class can only be denied`,
		`deny[0]: invalid pattern: unknown class "dangerous" (known: class:destructive, class:openWorld, class:write)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile error %v, want %q", err, want)
		}
	}
}
