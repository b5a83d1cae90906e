package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// tasksExt is the tasks extension (SEP-2663).
const tasksExt = "io.modelcontextprotocol/tasks"

// taskRPC sends one 2026-07-28 request as the holder of token, declaring
// the tasks extension or not, and returns its result or error.
func taskRPC(t *testing.T, addr, token string, tasks bool, method string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if s, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", s)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	text := string(data)
	if i := strings.Index(text, "data: "); i >= 0 { // one SSE event
		text = strings.TrimSpace(strings.SplitN(text[i+len("data: "):], "\n", 2)[0])
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *rpcError      `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &msg); err != nil || msg.Result == nil && msg.Error == nil {
		t.Fatalf("%s: status %d, %q", method, resp.StatusCode, data)
	}
	return msg.Result, msg.Error
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// TestTasksBoundToCaller: a task the conformance fixture creates through
// switchboard is the caller's. Its ID is switchboard's; the caller follows
// and cancels the task by it; a caller with another token holding the ID
// gets the error of an ID never issued, and its cancel never reaches the
// server (the task goes on). A client without the extension gets -32021,
// a malformed ID a clear refusal.
func TestTasksBoundToCaller(t *testing.T) {
	t.Parallel()
	const tokA, tokB = "tasks-token-a-0123456789", "tasks-token-b-0123456789"
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"conformance": map[string]any{"command": conffix, "namespace": false, "protocol": "auto"}},
		"auth":       map[string]any{"tokens": []string{tokA, tokB}},
	})
	created, rerr := taskRPC(t, s.addr, tokA, true, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 60, "label": "bound"}})
	id, _ := created["taskId"].(string)
	if rerr != nil || created["resultType"] != "task" || !strings.HasPrefix(id, "swt1.") {
		t.Fatalf("tools/call: %v %v; want a task under an ID of switchboard's", created, rerr)
	}
	status := func(token string) string {
		got, rerr := taskRPC(t, s.addr, token, true, "tasks/get", map[string]any{"taskId": id})
		if rerr != nil || got["taskId"] != id {
			t.Fatalf("tasks/get: %v %v", got, rerr)
		}
		return got["status"].(string)
	}
	if st := status(tokA); st != "working" {
		t.Fatalf("the task is %q, want working", st)
	}

	// B holds A's ID, and an ID never issued (A's, its MAC altered).
	parts := strings.Split(id, ".")
	parts[4] = strings.Repeat("A", len(parts[4]))
	never := strings.Join(parts, ".")
	_, neverErr := taskRPC(t, s.addr, tokB, true, "tasks/get", map[string]any{"taskId": never})
	if neverErr == nil || neverErr.Code != -32602 || !strings.Contains(neverErr.Message, "unknown task") {
		t.Fatalf("an ID never issued: %+v; want -32602 unknown task", neverErr)
	}
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		_, rerr := taskRPC(t, s.addr, tokB, true, m, map[string]any{"taskId": id})
		if rerr == nil || rerr.Code != neverErr.Code || strings.Replace(rerr.Message, id, never, 1) != neverErr.Message {
			t.Errorf("%s of another caller's task: %+v; want what an ID never issued gets: %+v", m, rerr, neverErr)
		}
	}
	if st := status(tokA); st != "working" {
		t.Errorf("after another caller's cancel the task is %q, want working", st)
	}

	if _, rerr := taskRPC(t, s.addr, tokA, false, "tasks/get", map[string]any{"taskId": id}); rerr == nil || rerr.Code != -32021 || !strings.Contains(rerr.Message, tasksExt) {
		t.Errorf("tasks/get without the extension: %+v; want -32021 naming it", rerr)
	}
	if _, rerr := taskRPC(t, s.addr, tokA, true, "tasks/get", map[string]any{"taskId": "task-0123"}); rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "not a task ID switchboard issued") {
		t.Errorf("a malformed task ID: %+v; want it refused as not switchboard's", rerr)
	}

	if ack, rerr := taskRPC(t, s.addr, tokA, true, "tasks/cancel", map[string]any{"taskId": id}); rerr != nil || len(ack) != 1 || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v %v; want an empty ack", ack, rerr)
	}
	if st := status(tokA); st != "cancelled" {
		t.Errorf("after its caller's cancel the task is %q, want cancelled", st)
	}
}
