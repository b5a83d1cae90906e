package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tasks extension (SEP-2663, io.modelcontextprotocol/tasks), as the
// suite's tasks-* scenarios describe it: the server declares it; a
// tools/call of a task-supporting tool from a client that declared it
// (for the session, or in the request's _meta) answers at once with a
// CreateTaskResult (resultType "task") and runs on; tasks/get reports the
// task (its result or error inlined once terminal, its inputRequests
// while it waits for input), tasks/update delivers input, tasks/cancel
// cancels. A client that did not declare it gets -32021 from the tasks
// methods and from a tool that needs a task; an optional one runs
// synchronously. tasks/result and tasks/list are not methods (v1 only).

// tasksExtension is the extension's name in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

const (
	taskTTL          = 10 * time.Minute
	taskPollInterval = 200 * time.Millisecond
	maxTasks         = 1000 // the oldest terminal tasks go beyond this
)

// taskSupport is how a tool runs as a task: optional (synchronously for a
// client without the extension) or required (-32021 for it).
type taskSupport int

const (
	taskOptional taskSupport = iota + 1
	taskRequired
)

// taskTool is a tool that can run as a task: its synchronous handler (nil
// for a required one) and the job a task runs.
type taskTool struct {
	tool
	support taskSupport
	job     func(ctx context.Context, t *task, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

var taskTools = []taskTool{
	{tool{"greet", "Greet", "Greets name (synchronous only).",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`), greetTool}, 0, nil},
	{tool{"slow_compute", "Slow compute", "Sleeps seconds, then answers; runs as a task for a client with the tasks extension.",
		json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`), slowComputeTool}, taskOptional, slowComputeJob},
	{tool{"failing_job", "Failing job", "A task that ends in a tool error after about a second.", noArgs, nil}, taskRequired, failingJob},
	{tool{"protocol_error_job", "Protocol error job", "A task that fails with a protocol error.", noArgs, nil}, taskRequired, protocolErrorJob},
	{tool{"confirm_delete", "Confirm delete", "A task that asks to confirm deleting filename, then deletes nothing.",
		json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`), nil}, taskRequired, confirmDeleteJob},
	{tool{"multi_input", "Multiple inputs", "A task that asks two questions at once.", noArgs, nil}, taskRequired, multiInputJob},
	{tool{"test_tool_with_task", "Input, then a task", "Asks for a name (input_required), then runs as a task that greets it.", noArgs, toolWithTaskRound1}, taskRequired, toolWithTaskJob},
}

func addTaskTools(srv *mcp.Server) {
	for _, t := range taskTools {
		h := t.handler
		if h == nil {
			h = func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, missingTasks()
			}
		}
		srv.AddTool(&mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: t.schema}, h)
	}
	srv.AddReceivingMiddleware(taskMiddleware)
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/get", func(_ context.Context, ss *mcp.ServerSession, p *taskParams) (*taskAnswer, error) {
		t, err := store.lookup(ss, p)
		if err != nil {
			return nil, err
		}
		return t.detailed(), nil
	})
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/update", func(_ context.Context, ss *mcp.ServerSession, p *taskParams) (*taskAnswer, error) {
		t, err := store.lookup(ss, p)
		if err != nil {
			return nil, err
		}
		if p.InputResponses == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update: missing inputResponses"}
		}
		t.answer(p.InputResponses)
		return ack(), nil
	})
	_ = mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(_ context.Context, ss *mcp.ServerSession, p *taskParams) (*taskAnswer, error) {
		t, err := store.lookup(ss, p)
		if err != nil {
			return nil, err
		}
		t.finish("cancelled", nil, nil)
		return ack(), nil
	})
}

// declaresTasks reports whether caps declare the tasks extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

func missingTasks() error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: "this request needs the " + tasksExtension + " extension, which the client did not declare", Data: data}
}

// taskMiddleware starts the task of a task-supporting tool's call from a
// client with the extension, and refuses one that needs a task to a client
// without it.
func taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, r mcp.Request) (mcp.Result, error) {
		req, ok := r.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || req.Params == nil {
			return next(ctx, method, r)
		}
		var tt *taskTool
		for i := range taskTools {
			if taskTools[i].name == req.Params.Name && taskTools[i].job != nil {
				tt = &taskTools[i]
			}
		}
		switch {
		case tt == nil:
			return next(ctx, method, r)
		case !declaresTasks(req.ClientCapabilities()):
			if tt.support == taskRequired {
				return nil, missingTasks()
			}
			return next(ctx, method, r)
		case tt.name == "test_tool_with_task" && len(req.Params.InputResponses) == 0:
			return next(ctx, method, r) // the first round asks for input
		}
		t := store.create()
		go t.run(tt, req)
		return t.created(), nil
	}
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskAnswer is a result of the tasks methods (and a CreateTaskResult),
// written as its fields say.
type taskAnswer struct {
	mcp.ResultBase
	fields map[string]any
}

func (a *taskAnswer) MarshalJSON() ([]byte, error) { return json.Marshal(a.fields) }

func ack() *taskAnswer { return &taskAnswer{fields: map[string]any{"resultType": "complete"}} }

// task is one task: its state under mu, the input it waits for.
type task struct {
	id     string
	born   time.Time
	cancel context.CancelFunc
	ctx    context.Context

	mu      sync.Mutex
	status  string
	updated time.Time
	result  *mcp.CallToolResult
	err     *jsonrpc.Error
	pending mcp.InputRequestMap        // asked and not yet answered
	answers map[string]json.RawMessage // answered
	ready   chan struct{}              // closed when nothing is pending
}

type taskStore struct {
	mu    sync.Mutex
	tasks map[string]*task
	order []string
}

var store = &taskStore{tasks: map[string]*task{}}

func (s *taskStore) create() *task {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now().UTC()
	t := &task{id: "task-" + hex.EncodeToString(b), born: now, updated: now, status: "working", ctx: ctx, cancel: cancel}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[t.id] = t
	s.order = append(s.order, t.id)
	for len(s.order) > maxTasks {
		old := s.tasks[s.order[0]]
		if old != nil {
			old.finish("cancelled", nil, nil)
		}
		delete(s.tasks, s.order[0])
		s.order = s.order[1:]
	}
	return t
}

// lookup finds the task params name, for a client that declared the
// extension.
func (s *taskStore) lookup(ss *mcp.ServerSession, p *taskParams) (*task, error) {
	if !declaresTasks((&mcp.ServerRequest[*taskParams]{Session: ss, Params: p}).ClientCapabilities()) {
		return nil, missingTasks()
	}
	if p.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing taskId"}
	}
	s.mu.Lock()
	t := s.tasks[p.TaskID]
	s.mu.Unlock()
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q", p.TaskID)}
	}
	return t, nil
}

func (t *task) run(tt *taskTool, req *mcp.CallToolRequest) {
	res, err := tt.job(t.ctx, t, req)
	switch {
	case t.ctx.Err() != nil:
		t.finish("cancelled", nil, nil)
	case err != nil:
		je, ok := err.(*jsonrpc.Error)
		if !ok {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		t.finish("failed", nil, je)
	default:
		t.finish("completed", res, nil)
	}
}

// finish ends the task (once: a later end changes nothing).
func (t *task) finish(status string, res *mcp.CallToolResult, err *jsonrpc.Error) {
	t.mu.Lock()
	if terminal(t.status) {
		t.mu.Unlock()
		return
	}
	t.status, t.result, t.err, t.pending, t.updated = status, res, err, nil, time.Now().UTC()
	t.mu.Unlock()
	t.cancel()
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// ask puts the task in input_required until every request of inputs is
// answered, and returns the answers.
func (t *task) ask(ctx context.Context, inputs mcp.InputRequestMap) (map[string]json.RawMessage, error) {
	ready := make(chan struct{})
	t.mu.Lock()
	t.status, t.pending, t.answers, t.ready, t.updated = "input_required", inputs, map[string]json.RawMessage{}, ready, time.Now().UTC()
	t.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status, t.updated = "working", time.Now().UTC()
	return t.answers, nil
}

// answer takes the responses to what the task asked; others are ignored.
func (t *task) answer(responses map[string]json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status != "input_required" {
		return
	}
	for k, v := range responses {
		if _, ok := t.pending[k]; ok {
			delete(t.pending, k)
			t.answers[k] = v
		}
	}
	if len(t.pending) == 0 {
		t.pending = nil
		close(t.ready)
	}
}

func (t *task) envelope() map[string]any {
	return map[string]any{
		"taskId":         t.id,
		"status":         t.status,
		"createdAt":      t.born.Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.updated.Format(time.RFC3339Nano),
		"ttlMs":          taskTTL.Milliseconds(),
		"pollIntervalMs": taskPollInterval.Milliseconds(),
	}
}

// created is the CreateTaskResult.
func (t *task) created() *taskAnswer {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.envelope()
	f["resultType"] = "task"
	return &taskAnswer{fields: f}
}

// detailed is tasks/get's DetailedTask.
func (t *task) detailed() *taskAnswer {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.envelope()
	f["resultType"] = "complete"
	switch {
	case t.status == "completed" && t.result != nil:
		f["result"] = t.result
	case t.status == "failed" && t.err != nil:
		f["error"] = t.err
	case t.status == "input_required":
		f["inputRequests"] = t.pending
	}
	return &taskAnswer{fields: f}
}

func greetTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := stringArg(req, "name")
	if err != nil {
		return toolError("%v", err), nil
	}
	return text("Hello, " + name + "!"), nil
}

func computeArgs(req *mcp.CallToolRequest) (time.Duration, string) {
	var args struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	return time.Duration(min(max(args.Seconds, 0), 600) * float64(time.Second)), args.Label
}

func slowComputeTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	d, label := computeArgs(req)
	if err := pause(ctx, d); err != nil {
		return nil, err
	}
	return text(fmt.Sprintf("Computed %s after %s.", label, d)), nil
}

func slowComputeJob(ctx context.Context, _ *task, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return slowComputeTool(ctx, req)
}

func failingJob(ctx context.Context, _ *task, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := pause(ctx, time.Second); err != nil {
		return nil, err
	}
	return toolError("the job failed, as it always does"), nil
}

func protocolErrorJob(ctx context.Context, _ *task, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := pause(ctx, 100*time.Millisecond); err != nil {
		return nil, err
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the job crashed"}
}

func confirmDeleteJob(ctx context.Context, t *task, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, _ := stringArg(req, "filename")
	answers, err := t.ask(ctx, mcp.InputRequestMap{"confirm": elicitFor("Delete "+name+"?", "confirm", "boolean")})
	if err != nil {
		return nil, err
	}
	var a mcp.ElicitResult
	_ = json.Unmarshal(answers["confirm"], &a)
	if a.Action != "accept" {
		return text("Not deleted: " + name), nil
	}
	return text("Deleted " + name + " (nothing was)."), nil
}

func multiInputJob(ctx context.Context, t *task, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	answers, err := t.ask(ctx, mcp.InputRequestMap{
		"name":    elicitFor("What is your name?", "name", "string"),
		"confirm": elicitFor("Confirm?", "confirm", "boolean"),
	})
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	return text("Answered: " + strings.Join(keys, ", ")), nil
}

func toolWithTaskRound1(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return askInput(mcp.InputRequestMap{"user_name": elicitFor("What is your name?", "name", "string")}, ""), nil
}

func toolWithTaskJob(ctx context.Context, _ *task, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := pause(ctx, 100*time.Millisecond); err != nil {
		return nil, err
	}
	return text("Hello, " + elicited(req.Params.InputResponses["user_name"], "name") + "!"), nil
}

// checkTaskName applies SEP-2663's routing header: a tasks/* request's
// Mcp-Name, when sent, is its taskId (else -32020, HTTP 400).
func checkTaskName(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("Mcp-Name")
		if r.Method != http.MethodPost || name == "" {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && strings.HasPrefix(msg.Method, "tasks/") && strings.TrimSpace(name) != msg.Params.TaskID {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
				"code": mcp.CodeHeaderMismatch, "message": fmt.Sprintf("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", name, msg.Params.TaskID)}})
			return
		}
		h.ServeHTTP(w, r)
	})
}
