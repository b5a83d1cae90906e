package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/taskid"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// taskServer is an upstream of the tasks extension: tool job runs as a
// task for a caller that declared the extension (synchronously for
// another), tool rogue always does; tasks/get answers every task
// completed. It records the task IDs the tasks methods name.
type taskServer struct {
	url string
	mu  sync.Mutex
	ids []string
}

// fakeAnswer is a result written as its fields say.
type fakeAnswer struct {
	mcp.ResultBase
	m map[string]any
}

func (a *fakeAnswer) MarshalJSON() ([]byte, error) { return json.Marshal(a.m) }

type fakeTaskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

func newTaskServer(t *testing.T, stateless bool) *taskServer {
	u := &taskServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
		Tools: &mcp.ToolCapabilities{}, Extensions: map[string]any{upstream.TasksExtension: map[string]any{}}}})
	sync := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sync"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)}, sync)
	srv.AddTool(&mcp.Tool{Name: "rogue", InputSchema: json.RawMessage(`{"type":"object"}`)}, sync)
	envelope := func(id, status string) map[string]any {
		now := time.Now().UTC().Format(time.RFC3339)
		return map[string]any{"taskId": id, "status": status, "createdAt": now, "lastUpdatedAt": now, "ttlMs": 60000, "statusMessage": "free text"}
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" {
				if _, declared := r.ClientCapabilities().Extensions[upstream.TasksExtension]; declared || r.Params.Name == "rogue" {
					m := envelope("up/1 "+r.Params.Name, "working")
					m["resultType"] = "task"
					return &fakeAnswer{m: m}, nil
				}
			}
			return next(ctx, method, req)
		}
	})
	record := func(id string) {
		u.mu.Lock()
		u.ids = append(u.ids, id)
		u.mu.Unlock()
	}
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *fakeTaskParams) (*fakeAnswer, error) {
		record(p.TaskID)
		m := envelope(p.TaskID, "completed")
		m["resultType"] = "complete"
		m["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}
		return &fakeAnswer{m: m}, nil
	})
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *fakeTaskParams) (*fakeAnswer, error) {
		record(p.TaskID)
		return &fakeAnswer{m: map[string]any{"resultType": "complete"}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	u.url = ts.URL
	return u
}

func (u *taskServer) named() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

// taskDispatcher serves cfg, whose servers (but the lazy) are started and
// listed first, its task IDs sealed under key (nil: its own).
func taskDispatcher(t *testing.T, key func() []byte, cfg string) *Dispatcher {
	t.Helper()
	c, err := config.Load([]byte(cfg), config.Source{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	_, specs := view.Plan(c)
	handles := map[string]*upstream.Handle{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for key, sp := range specs {
		if sp.Lazy {
			continue
		}
		h := upstream.New(sp, upstream.Options{Logger: hclog.NewNullLogger()})
		h.Start()
		t.Cleanup(func() { _ = h.Close(context.Background()) })
		if !h.Await(ctx) {
			t.Fatalf("server %s did not start: %+v", key, h.Status())
		}
		handles[key] = h
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Version: "test", Log: hclog.NewNullLogger(),
		Observe: func() telemetry.Observation { return telemetry.Observation{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Close(context.Background()) })
	g := genWith(t, 1, cfg, handles, Observers{Tel: tel})
	return New(Options{Log: hclog.NewNullLogger(), ServerInfo: &mcp.Implementation{Name: "switchboard"}, Serving: NewServing(g),
		Rebuild: func(func(*view.Spec) bool) {}, Resumable: func(_ string, h session.Handler) session.Handler { return h }, TaskKey: key})
}

// answers is a stream that hands on what is written to it.
type answers chan jsonrpc.Message

func (a answers) Write(_ context.Context, msg jsonrpc.Message) error {
	a <- msg
	return nil
}

// taskClient is an initialized session of principal holder, declaring
// the tasks extension or not, and the initialize result's extensions.
func taskClient(t *testing.T, d *Dispatcher, holder byte, tasks bool) (*session.Session, map[string]any) {
	t.Helper()
	out := make(answers, 16)
	ss, err := d.Open(Principal{Holder: Holder{holder}}, fmt.Sprintf("s%d-%v", holder, tasks), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ss.Close)
	caps := `{}`
	if tasks {
		caps = `{"extensions":{"` + upstream.TasksExtension + `":{}}}`
	}
	id, _ := jsonrpc.MakeID(float64(1))
	ss.Handle(context.Background(), &jsonrpc.Request{ID: id, Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","clientInfo":{"name":"c","version":"1"},"capabilities":` + caps + `}`)}, out)
	var init struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	select {
	case msg := <-out:
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.Error != nil || json.Unmarshal(resp.Result, &init) != nil {
			t.Fatalf("initialize: %+v", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("initialize: no answer")
	}
	return ss, init.Capabilities.Extensions
}

// call runs method in d for ss with params.
func call(d *Dispatcher, ss *session.Session, method, params string) (any, error) {
	h := d.Methods()[method]
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method + ": no such method"}
	}
	return h(context.Background(), &session.Request{Session: ss, Method: method, Params: json.RawMessage(params)})
}

// field is key of an answer that is a map (as the tasks methods answer).
func field(res any, key string) any {
	m, _ := res.(map[string]any)
	return m[key]
}

func wantCode(t *testing.T, what string, err error, code int64, text string) string {
	t.Helper()
	we, ok := err.(*jsonrpc.Error)
	if !ok || we.Code != code || !strings.Contains(we.Message, text) {
		t.Fatalf("%s: %v; want code %d saying %q", what, err, code, text)
	}
	return we.Message
}

// TestTaskIDsNamespacedAndBound: a task a server created reaches its
// caller under an ID of switchboard's, which tasks/get and tasks/cancel
// take back to the server as the server's own, once for each; the result
// passes the trust boundary. Another caller holding the ID gets the error
// of a task never issued, and the server hears nothing of it; a malformed
// ID is refused as not switchboard's.
func TestTaskIDsNamespacedAndBound(t *testing.T) {
	u := newTaskServer(t, true)
	d := taskDispatcher(t, nil, `{"mcpServers": {"s": {"type": "http", "url": "`+u.url+`"}}}`)
	alice, _ := taskClient(t, d, 1, true)
	bob, _ := taskClient(t, d, 2, true)

	created, err := call(d, alice, "tools/call", `{"name":"mcp_s_job","arguments":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := field(created, "taskId").(string)
	if field(created, "resultType") != "task" || field(created, "status") != "working" || !strings.HasPrefix(id, "swt1.") {
		t.Fatalf("tools/call = %v; want a CreateTaskResult under an ID of switchboard's", created)
	}
	if strings.Contains(id, "up/1") || field(created, "statusMessage") != nil {
		t.Errorf("CreateTaskResult %v shows the server's ID or its free text", created)
	}

	got, err := call(d, alice, "tasks/get", `{"taskId":"`+id+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := field(got, "result").(*mcp.CallToolResult)
	if field(got, "taskId") != id || field(got, "status") != "completed" || res == nil || len(res.Content) != 1 {
		t.Fatalf("tasks/get = %v; want the task completed under switchboard's ID, its result inlined", got)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text == "done" || !strings.Contains(text, "done") {
		t.Errorf("the inlined result is %q; want it wrapped as untrusted, as a call's", text)
	}
	if ack, err := call(d, alice, "tasks/cancel", `{"taskId":"`+id+`"}`); err != nil || field(ack, "resultType") != "complete" || len(ack.(map[string]any)) != 1 {
		t.Errorf("tasks/cancel = %v, %v; want an empty ack", ack, err)
	}
	if ids := u.named(); len(ids) != 2 || ids[0] != "up/1 job" || ids[1] != "up/1 job" {
		t.Fatalf("the server was asked about %q; want its own ID, once by tasks/get and once by tasks/cancel", ids)
	}

	// Bob holds Alice's ID: it is unknown to him, as one never issued.
	other, _ := taskid.New().Seal(taskid.Ref{Tool: "mcp_s_job", Server: "s", Upstream: "up/1 job"}, "")
	_, never := call(d, bob, "tasks/get", `{"taskId":"`+other+`"}`)
	neverMsg := wantCode(t, "a task ID never issued", never, jsonrpc.CodeInvalidParams, "unknown task")
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		_, err := call(d, bob, m, `{"taskId":"`+id+`"}`)
		if msg := wantCode(t, m+" of another caller's task", err, jsonrpc.CodeInvalidParams, "unknown task"); strings.Replace(msg, id, other, 1) != neverMsg {
			t.Errorf("another caller's task: %q; a task never issued: %q", msg, neverMsg)
		}
	}
	_, err = call(d, alice, "tasks/get", `{"taskId":"up/1 job"}`)
	wantCode(t, "a malformed task ID", err, jsonrpc.CodeInvalidParams, "not a task ID switchboard issued")
	if n := len(u.named()); n != 2 {
		t.Errorf("the server was asked %d times; refused IDs must not reach it", n)
	}
}

// TestTasksNeedTheExtension: a client that did not declare the tasks
// extension gets -32021 from the tasks methods, and from a call its
// server answered with a task all the same; its calls otherwise run as
// the server runs them for it (synchronously).
func TestTasksNeedTheExtension(t *testing.T) {
	u := newTaskServer(t, true)
	d := taskDispatcher(t, nil, `{"mcpServers": {"s": {"type": "http", "url": "`+u.url+`"}}}`)
	plain, _ := taskClient(t, d, 1, false)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, err := call(d, plain, m, `{"taskId":"x","inputResponses":{}}`)
		wantCode(t, m, err, mcp.CodeMissingRequiredClientCapabilities, upstream.TasksExtension)
		if data := string(err.(*jsonrpc.Error).Data); !strings.Contains(data, `"requiredCapabilities":{"extensions":{"`+upstream.TasksExtension) {
			t.Errorf("%s: data %s; want requiredCapabilities naming the extension", m, data)
		}
	}
	_, err := call(d, plain, "tools/call", `{"name":"mcp_s_rogue","arguments":{}}`)
	wantCode(t, "a task for a client without the extension", err, mcp.CodeMissingRequiredClientCapabilities, upstream.TasksExtension)
	res, err := call(d, plain, "tools/call", `{"name":"mcp_s_job","arguments":{}}`)
	if err != nil || !strings.Contains(fmt.Sprintf("%s", res), "sync") {
		t.Errorf("tools/call without the extension: %s, %v; want the synchronous result", res, err)
	}
}

// TestTasksDeclaredOnlyWhenRelayable: switchboard declares the tasks
// extension to its clients when a server of their view declares it and
// speaks 2026-07-28 (which gets each caller's extensions); not for a
// legacy server's declaring it, which is never told a caller's.
func TestTasksDeclaredOnlyWhenRelayable(t *testing.T) {
	for _, tc := range []struct {
		name, protocol string
		declared       bool
	}{
		{"2026-07-28", "auto", true},
		{"legacy", "2025-11-25", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newTaskServer(t, tc.protocol == "auto")
			d := taskDispatcher(t, nil, `{"mcpServers": {"s": {"type": "http", "url": "`+u.url+`", "protocol": "`+tc.protocol+`"}}}`)
			_, ext := taskClient(t, d, 1, true)
			if _, ok := ext[upstream.TasksExtension]; ok != tc.declared {
				t.Errorf("extensions declared: %v; want the tasks extension: %v", ext, tc.declared)
			}
		})
	}
	d := taskDispatcher(t, nil, `{"mcpServers": {"s": {"command": "true", "lazy": true}}}`)
	if _, ext := taskClient(t, d, 1, true); ext[upstream.TasksExtension] != nil {
		t.Errorf("extensions declared without a server of tasks: %v", ext)
	}
}

// TestTaskIDsFollowTheStateKey: two switchboards that share the key of
// requestStates (replicas with requestStateKey) open each other's task
// IDs; once a reload changed the key, the IDs issued before are unknown.
func TestTaskIDsFollowTheStateKey(t *testing.T) {
	u := newTaskServer(t, true)
	secret := []byte("shared")
	key := func() []byte { return secret }
	cfg := `{"mcpServers": {"s": {"type": "http", "url": "` + u.url + `"}}}`
	one, two := taskDispatcher(t, key, cfg), taskDispatcher(t, key, cfg)
	a1, _ := taskClient(t, one, 1, true)
	a2, _ := taskClient(t, two, 1, true)
	created, err := call(one, a1, "tools/call", `{"name":"mcp_s_job","arguments":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := field(created, "taskId").(string)
	if got, err := call(two, a2, "tasks/get", `{"taskId":"`+id+`"}`); err != nil || field(got, "taskId") != id {
		t.Fatalf("the other replica: %v, %v; want the task", got, err)
	}
	secret = []byte("rotated")
	_, err = call(two, a2, "tasks/get", `{"taskId":"`+id+`"}`)
	wantCode(t, "an ID issued under the key before", err, jsonrpc.CodeInvalidParams, "unknown task")
}
