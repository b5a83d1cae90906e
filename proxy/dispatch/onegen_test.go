package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// genOf builds the generation of a config whose servers never start
// (no handles).
func genOf(t *testing.T, gen int64, cfg string) *Gen {
	t.Helper()
	return genWith(t, gen, cfg, nil, Observers{Tel: &telemetry.Telemetry{}})
}

// allowPins publishes every definition.
type allowPins struct{}

func (allowPins) Check(string, *mcp.Tool, string, string) bool { return true }

// genWith builds the generation of cfg with handles (by key) and
// observers.
func genWith(t *testing.T, gen int64, cfg string, handles map[string]*upstream.Handle, obs Observers) *Gen {
	t.Helper()
	c, err := config.Load([]byte(cfg), config.Source{Getenv: func(string) string { return "" }})
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	planned, _ := view.Plan(c)
	if handles == nil {
		handles = map[string]*upstream.Handle{}
	}
	snap := view.NewSnapshot(gen, c, handles, planned)
	b := &view.Builder{Log: hclog.NewNullLogger(), Pins: allowPins{}}
	views := map[string]*view.View{}
	for id := range snap.Views {
		views[id] = b.Build(snap, id)
	}
	return NewGen(snap, views, Access{}, obs)
}

// TestOneGenerationPerRequest: a request is served by the generation it
// holds from its authentication on (Serving.Hold, at the HTTP edge), even
// when a reload replaced that generation before dispatch. Here the reload
// removes the request's view: the request it held still lists it, while
// one that held nothing finds the view gone.
func TestOneGenerationPerRequest(t *testing.T) {
	withAgent := genOf(t, 1, `{"mcpServers": {"s": {"command": "true", "lazy": true}}, "agents": {"list": [{"id": "a"}]}}`)
	without := genOf(t, 2, `{"mcpServers": {"s": {"command": "true", "lazy": true}}}`)
	s := NewServing(withAgent)
	d := New(Options{Log: hclog.NewNullLogger(), ServerInfo: &mcp.Implementation{Name: "switchboard"}, Serving: s,
		Rebuild: func(func(*view.Spec) bool) {}, Resumable: func(_ string, h session.Handler) session.Handler { return h }})
	ss, err := d.Open(Principal{View: "a"}, "s1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	list := func(ctx context.Context) error {
		_, err := d.Methods()["tools/list"](ctx, &session.Request{Session: ss, Method: "tools/list", Params: json.RawMessage(`{}`)})
		return err
	}

	held := s.Hold(context.Background()) // authenticated in generation 1
	s.Swap(without)                      // the reload, before dispatch
	if err := list(held); err != nil {
		t.Errorf("the request that holds generation 1: %v; want its view listed", err)
	}
	var we *jsonrpc.Error
	if err := list(context.Background()); err == nil || !errorAs(err, &we) || we.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("a request that holds no generation: %v; want the view gone (generation 2)", err)
	}
	select {
	case <-withAgent.Drained():
		t.Fatal("generation 1 drained while a request holds it")
	default:
	}
	held.Release()
	select {
	case <-withAgent.Drained():
	default:
		t.Error("generation 1 not drained once its request released it")
	}
}

func errorAs(err error, target **jsonrpc.Error) bool {
	e, ok := err.(*jsonrpc.Error)
	*target = e
	return ok
}

// TestCallAuditedInItsGeneration: a call is audited, and counted, by the
// observers of the generation it holds, though a reload that replaced the
// audit log came between its authentication and its dispatch.
func TestCallAuditedInItsGeneration(t *testing.T) {
	const cfg = `{"mcpServers": {"s": {"command": "true", "lazy": true}}}`
	c, err := config.Load([]byte(cfg), config.Source{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	_, specs := view.Plan(c)
	h := upstream.New(specs["s"], upstream.Options{Logger: hclog.NewNullLogger()})
	h.Seed(&upstream.Catalog{Tools: []*mcp.Tool{{Name: "t", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`)}}}, "")
	handles := map[string]*upstream.Handle{"s": h}
	logOf := func() (*AuditLog, *testutil.Lines) {
		var lines testutil.Lines
		a, err := NewAuditLog(&config.Audit{}, &lines, func(s string) string { return s }, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return a, &lines
	}
	firstLog, firstLines := logOf()
	secondLog, secondLines := logOf()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Version: "test", Log: hclog.NewNullLogger(),
		Observe: func() telemetry.Observation { return telemetry.Observation{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	first := genWith(t, 1, cfg, handles, Observers{Tel: tel, Audit: firstLog})
	second := genWith(t, 2, cfg, handles, Observers{Tel: tel, Audit: secondLog})
	s := NewServing(first)
	d := New(Options{Log: hclog.NewNullLogger(), ServerInfo: &mcp.Implementation{Name: "switchboard"}, Serving: s,
		Rebuild: func(func(*view.Spec) bool) {}, Resumable: func(_ string, h session.Handler) session.Handler { return h }})
	ss, err := d.Open(Principal{}, "s1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	call := func(ctx context.Context) {
		// Invalid arguments: the call is refused, and audited, before any
		// upstream is asked.
		res, err := d.Methods()["tools/call"](ctx, &session.Request{Session: ss, Method: "tools/call", Params: json.RawMessage(`{"name":"mcp_s_t","arguments":{}}`)})
		if err != nil || !strings.Contains(fmt.Sprintf("%s", res), "invalid arguments") {
			t.Fatalf("tools/call: %v, %v; want invalid arguments", res, err)
		}
	}

	held := s.Hold(context.Background()) // authenticated in generation 1
	s.Swap(second)                       // the reload, before dispatch
	call(held)
	held.Release()
	call(context.Background()) // a request after the reload
	if n := len(firstLines.Matching(`"outcome":"invalid_arguments"`)); n != 1 {
		t.Errorf("generation 1's audit log has %d records, want the one of the request that held it:\n%s", n, firstLines.String())
	}
	if n := len(secondLines.Matching(`"outcome":"invalid_arguments"`)); n != 1 {
		t.Errorf("generation 2's audit log has %d records, want the one of the request after the reload:\n%s", n, secondLines.String())
	}
}
