package proxy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClosedSessionsLeaveNothing: what switchboard keeps per session (its
// place in the session table and under maxSessions, what it found in
// search mode, its per-client server instance) is gone once the sessions
// close, in every table /status counts.
func TestClosedSessionsLeaveNothing(t *testing.T) {
	tp := startProxy(t, pipelineConfig(map[string]any{"isolation": "per-client"}, nil,
		map[string]any{"discovery": map[string]any{"mode": "search"}}), "http")
	const n = 3
	var open []*mcp.ClientSession
	for i := range n {
		cs := tp.connect(t, nil, nil)
		open = append(open, cs)
		// A call by name waits for the server's first list (search mode's
		// find_tools does not).
		if res, err := call(cs, "mcp_echo_calls", nil); err != nil || res.IsError {
			t.Fatalf("session %d: call: %+v, %v", i, res, err)
		}
		res, err := call(cs, view.FindToolsName, map[string]any{"query": "count the tool calls"})
		if err != nil || res.IsError || !strings.Contains(resultText(t, res), "mcp_echo_calls") {
			t.Fatalf("session %d: find_tools: %v, %v", i, resultText(t, res), err)
		}
	}
	want := dispatch.Tables{Sessions: n, Principals: 1, Clients: n}
	st := status(t, tp.admin)
	if got := st.Tables; !reflect.DeepEqual(got, want) { // PerClient is not encoded
		t.Fatalf("with %d sessions open: tables %+v, want %+v", n, got, want)
	}
	if len(st.Servers) != 1 || st.Servers[0].Instances == nil || *st.Servers[0].Instances != n {
		t.Fatalf("with %d sessions open: servers %+v, want the one server with %d instances", n, st.Servers, n)
	}
	m := metricsText(t, tp.admin)
	for _, want := range []string{fmt.Sprintf(`switchboard_upstream_instances{server="echo"} %d`, n), `switchboard_upstream_in_flight{server="echo"} 0`} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("with %d sessions open, /metrics lacks %s", n, want)
		}
	}
	for _, cs := range open {
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, tp.admin, "every table empty once every session closed", func(st StatusReport) bool {
		return reflect.DeepEqual(st.Tables, dispatch.Tables{}) && len(st.Servers) == 1 && st.Servers[0].Instances != nil && *st.Servers[0].Instances == 0
	})
	if m := metricsText(t, tp.admin); !strings.Contains(m, `switchboard_upstream_instances{server="echo"} 0`+"\n") {
		t.Errorf("every session closed, but /metrics counts instances:\n%s", m)
	}
}
