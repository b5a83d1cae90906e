package dispatch

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// genOf builds the generation of a config whose servers never start
// (no handles).
func genOf(t *testing.T, gen int64, cfg string) *Gen {
	t.Helper()
	c, err := config.Load([]byte(cfg), config.Source{Getenv: func(string) string { return "" }})
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	planned, _ := view.Plan(c)
	snap := view.NewSnapshot(gen, c, map[string]*upstream.Handle{}, planned)
	b := &view.Builder{Log: hclog.NewNullLogger()}
	views := map[string]*view.View{}
	for id := range snap.Views {
		views[id] = b.Build(snap, id)
	}
	return NewGen(snap, views, Access{})
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
		Rebuild: func(func(*view.ViewSpec) bool) {}, Resumable: func(_ string, h session.Handler) session.Handler { return h }})
	d.Tel.Store(&telemetry.Telemetry{})
	ss, err := d.Open(Principal{View: "a"}, "s1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	list := func(ctx context.Context) error {
		_, err := d.Methods()["tools/list"](ctx, &session.Request{Session: ss, Method: "tools/list", Params: json.RawMessage(`{}`)})
		return err
	}

	held, release := s.Hold(context.Background()) // authenticated in generation 1
	s.Swap(without)                               // the reload, before dispatch
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
	release()
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
