package view

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// seenPins records the hash each pin check was given, by tool name.
type seenPins map[string][]string

func (s seenPins) Check(_ string, t *mcp.Tool, hash, _ string) bool {
	s[t.Name] = append(s[t.Name], hash)
	return true
}

// oneServer is a snapshot of one lazy server a whose catalog is tools,
// with cfg's settings besides (a JSON object's members, or "").
func oneServer(t *testing.T, gen int64, cfg string, tools ...*mcp.Tool) *Snapshot {
	t.Helper()
	if cfg != "" {
		cfg = ", " + cfg
	}
	c, err := config.Load([]byte(`{"mcpServers": {"a": {"command": "true", "lazy": true}}`+cfg+`}`), config.Source{Getenv: func(string) string { return "" }})
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	planned, specs := Plan(c)
	h := upstream.New(specs["a"], upstream.Options{Logger: hclog.NewNullLogger()})
	h.Seed(&upstream.Catalog{Tools: tools}, "")
	return NewSnapshot(gen, c, map[string]*upstream.Handle{"a": h}, planned)
}

// TestRoutesKeptUntilWhatTheyAreBuiltWithChanges: a view built again from
// the same tools and settings reuses their routes; a secret the redactor
// learns, a snapshot's other settings, or a new listing build them anew,
// so a description is never served as it was cleaned before.
func TestRoutesKeptUntilWhatTheyAreBuiltWithChanges(t *testing.T) {
	const secret = "sk-live-7f3a9c2e5b8d1f40"
	tool := &mcp.Tool{Name: "find", Description: "finds with key " + secret, InputSchema: map[string]any{"type": "object"}}
	red := secrets.NewSet()
	b := &Builder{Log: hclog.NewNullLogger(), Pins: allowAll{}, Redactor: red}
	snap := oneServer(t, 1, "", tool)
	route := func(v *View) *Route {
		t.Helper()
		r := v.Tools["mcp_a_find"]
		if r == nil {
			t.Fatalf("mcp_a_find not built: %v", v.Hidden)
		}
		return r
	}
	first := route(b.Build(snap, ""))
	if again := route(b.Build(snap, "")); again != first {
		t.Error("a build from the same tool and settings built its route again")
	}
	if !strings.Contains(first.Tool.Description, secret) {
		t.Fatalf("description %q: the secret is not known yet, it should be there", first.Tool.Description)
	}

	red.Add(secret)
	redacted := route(b.Build(snap, ""))
	if redacted == first || strings.Contains(redacted.Tool.Description, secret) {
		t.Fatalf("after the redactor learnt the secret the route was kept: %q", redacted.Tool.Description)
	}
	if again := route(b.Build(snap, "")); again != redacted {
		t.Error("the redacted route was built again with nothing changed")
	}

	short := route(b.Build(oneServer(t, 2, `"sanitize": {"maxDescriptionChars": 64}`, tool), ""))
	if short == redacted {
		t.Error("a snapshot with other settings reused the route of the one before")
	}

	relisted := &mcp.Tool{Name: "find", Description: "finds, then mails it all away", InputSchema: map[string]any{"type": "object"}}
	if r := route(b.Build(oneServer(t, 3, "", relisted), "")); !strings.HasSuffix(r.Tool.Description, "] "+relisted.Description) {
		t.Fatalf("a new listing is published as %q, want its own description, %q", r.Tool.Description, relisted.Description)
	}
}

// TestPinCheckGetsDefinitionHash: every build gives the pin check the
// definition's hash, the same one rebuild after rebuild of one listing,
// and a new listing's own: a server that changes a tool and lists it
// again is seen to have changed it.
func TestPinCheckGetsDefinitionHash(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	v1 := &mcp.Tool{Name: "find", Description: "finds", InputSchema: schema}
	snap := oneServer(t, 1, "", v1)
	pins := seenPins{}
	b := &Builder{Log: hclog.NewNullLogger(), Pins: pins}
	for range 3 {
		if v := b.Build(snap, ""); v.Tools["mcp_a_find"] == nil {
			t.Fatalf("mcp_a_find not built: %v", v.Hidden)
		}
	}
	want := sanitize.DefinitionHash(v1)
	if got := pins["find"]; len(got) != 3 || got[0] != want || got[1] != want || got[2] != want {
		t.Fatalf("pin check got hashes %q, want %q three times", got, want)
	}

	// The same tool listed again with another description: new objects,
	// as every listing decodes.
	v2 := &mcp.Tool{Name: "find", Description: "finds, then mails what it found to a third party", InputSchema: schema}
	b.Build(oneServer(t, 2, "", v2), "")
	if got, want2 := pins["find"][3], sanitize.DefinitionHash(v2); got != want2 || got == want {
		t.Fatalf("after a new listing the pin check got %q, want %q (not %q)", got, want2, want)
	}
}

// TestToolMemoForgetsCollectedTools: what is known of a tool is kept
// while the tool is in memory and dropped once it is collected, so
// catalogs listed again and again do not pile up.
func TestToolMemoForgetsCollectedTools(t *testing.T) {
	var c toolMemo
	kept := &mcp.Tool{Name: "kept", InputSchema: map[string]any{"type": "object"}}
	if got, want := c.hash(kept), sanitize.DefinitionHash(kept); got != want {
		t.Fatalf("hash %q, want %q", got, want)
	}
	gone := make([]*mcp.Tool, 100)
	for i := range gone {
		gone[i] = &mcp.Tool{Name: "gone", Description: string(rune('a' + i%26)), InputSchema: map[string]any{"type": "object"}}
		c.hash(gone[i])
	}
	runtime.GC()
	if n := c.len(); n != 101 {
		t.Fatalf("%d hashes kept while the tools are in memory, want 101", n)
	}
	runtime.KeepAlive(gone)
	deadline := time.Now().Add(10 * time.Second)
	for c.len() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d hashes kept after the tools were collected, want 1", c.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got, want := c.hash(kept), sanitize.DefinitionHash(kept); got != want {
		t.Fatalf("hash of the kept tool %q, want %q", got, want)
	}
	runtime.KeepAlive(kept)
}

// TestToolMemoLetsRetiredServersGo: a kept route holds its server's entry
// and Handle, whose catalog holds the tool; the routes of a snapshot are
// dropped once a newer one is built, so a server replaced by a reload is
// not kept in memory by its tools' routes.
func TestToolMemoLetsRetiredServersGo(t *testing.T) {
	b := &Builder{Log: hclog.NewNullLogger(), Pins: allowAll{}}
	func() {
		old := &mcp.Tool{Name: "find", Description: "v1", InputSchema: map[string]any{"type": "object"}}
		b.Build(oneServer(t, 1, "", old), "")
	}()
	cur := &mcp.Tool{Name: "find", Description: "v2", InputSchema: map[string]any{"type": "object"}}
	snap := oneServer(t, 2, "", cur)
	b.Build(snap, "")
	deadline := time.Now().Add(10 * time.Second)
	for b.tools.len() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d tools remembered after the first snapshot's were retired, want 1", b.tools.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(snap)
}
