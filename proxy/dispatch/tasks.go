package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/taskid"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// The tasks extension (SEP-2663) through switchboard. A tools/call that
// a server answers with a task (upstream.TaskCreated) gets the caller a
// task ID of switchboard's (package taskid): it names the public tool,
// the server and the server's own ID, and is bound to the caller's
// principal. tasks/get, tasks/update and tasks/cancel open it (one map
// lookup of the tool in the caller's view), and go to the owner with the
// server's ID as it was issued. Everything the server says of a task
// passes the trust boundary the tool's results pass: the inlined result as
// a result, the inlined error as an error, the input it asks for as a
// multi-round-trip request's.

// taskStatuses are the statuses the extension defines.
var taskStatuses = map[string]bool{"working": true, "input_required": true, "completed": true, "failed": true, "cancelled": true}

// taskRoutes answers the tasks methods; it mints and opens task IDs with
// codec.
type taskRoutes struct {
	d     *Dispatcher
	codec *taskid.Codec
}

// createdTask carries a CreateTaskResult from forward to the tools/call
// handler: it is forward's error, and the handler's answer.
type createdTask struct{ answer map[string]any }

func (*createdTask) Error() string { return "the call created a task" }

// taskAnswerOr is the answer to a call whose forward ended in err: the
// created task's CreateTaskResult, or err.
func taskAnswerOr(err error) (any, error) {
	var ct *createdTask
	if errors.As(err, &ct) {
		return ct.answer, nil
	}
	return nil, err
}

// declaresTasks reports whether caps declare the tasks extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[upstream.TasksExtension]
	return ok
}

// missingTasks is the error for a client that did not declare the tasks
// extension (-32021, naming it as the extension requires).
func missingTasks(what string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{upstream.TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: what + " needs the " + upstream.TasksExtension + " extension, which the client did not declare"}
}

// unknownTask is the error for a task ID that does not open for the caller
// or whose tool its view no longer shows: the same for a task of another
// caller's as for one never issued.
func unknownTask(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q", id)}
}

// created is the caller's CreateTaskResult for the task the call of rt
// created, with a task ID of switchboard's.
func (t *taskRoutes) created(ctx context.Context, tc *upstream.TaskCreated, rt *view.Route, req *session.Request) error {
	if !declaresTasks(req.ClientCapabilities()) {
		return missingTasks(fmt.Sprintf("tool %q answered with a task, which", rt.Public))
	}
	var in taskEnvelope
	if err := json.Unmarshal(tc.Result, &in); err != nil {
		return badTask(rt.Entry.Key, fmt.Sprintf("its CreateTaskResult does not decode: %v", err))
	}
	id, err := t.codec.Seal(taskid.Ref{Tool: rt.Public, Server: rt.Entry.Key, Upstream: in.TaskID}, PrincipalOf(req.Session).Caller())
	if err != nil {
		return badTask(rt.Entry.Key, err.Error())
	}
	out, err := in.fields(rt.Entry.Key, id)
	if err != nil {
		return err
	}
	out["resultType"] = "task"
	return &createdTask{answer: out}
}

// badTask is the error for what a server said of a task that switchboard
// cannot relay.
func badTask(server, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q answered with a task switchboard cannot relay: %s", server, why)}
}

// taskEnvelope is what a server says of a task besides its outcome.
type taskEnvelope struct {
	TaskID        string          `json:"taskId"`
	Status        string          `json:"status"`
	CreatedAt     *string         `json:"createdAt"`
	LastUpdatedAt *string         `json:"lastUpdatedAt"`
	TTL           json.RawMessage `json:"ttlMs"`
	PollInterval  *int64          `json:"pollIntervalMs"`
}

// fields are the envelope's fields as the caller gets them, under
// switchboard's ID: only the extension's, and only of their types.
// (statusMessage, free text of the server's, is not relayed.)
func (e *taskEnvelope) fields(server, id string) (map[string]any, error) {
	if !taskStatuses[e.Status] {
		return nil, badTask(server, fmt.Sprintf("status %q is not one the tasks extension defines", e.Status))
	}
	out := map[string]any{"taskId": id, "status": e.Status}
	if e.CreatedAt != nil {
		out["createdAt"] = *e.CreatedAt
	}
	if e.LastUpdatedAt != nil {
		out["lastUpdatedAt"] = *e.LastUpdatedAt
	}
	var ttl *int64
	if len(e.TTL) > 0 && json.Unmarshal(e.TTL, &ttl) == nil {
		out["ttlMs"] = ttl // null: no expiry
	}
	if e.PollInterval != nil {
		out["pollIntervalMs"] = *e.PollInterval
	}
	return out, nil
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// handler answers one of the tasks methods in the caller's view.
func (t *taskRoutes) handler(method string) viewHandler {
	return func(ctx context.Context, v *view.View, r *session.Request) (any, error) {
		if !declaresTasks(r.ClientCapabilities()) {
			return nil, missingTasks(method)
		}
		var p taskParams
		if err := decodeParams(r, &p); err != nil {
			return nil, err
		}
		if p.TaskID == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params name no taskId"}
		}
		if method == "tasks/update" && (len(p.InputResponses) == 0 || string(p.InputResponses) == "null") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update: params carry no inputResponses"}
		}
		ref, err := t.codec.Open(p.TaskID, PrincipalOf(r.Session).Caller())
		if errors.Is(err, taskid.ErrMalformed) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: taskId %q is not a task ID switchboard issued", method, p.TaskID)}
		}
		rt := v.Tools[ref.Tool]
		if err != nil || rt == nil || rt.Entry.Key != ref.Server {
			return nil, unknownTask(p.TaskID)
		}
		h, err := t.d.clients.handleFor(ctx, rt.Entry, r.Session)
		if err != nil {
			return nil, err
		}
		if h == nil {
			return nil, unknownTask(p.TaskID)
		}
		src, opts := sanitize.Source{Server: rt.Entry.Key, Tool: rt.Original}, t.d.trust.options(v.Snap, rt.Entry)
		up := &taskParams{TaskID: ref.Upstream, InputResponses: p.InputResponses}
		up.Meta = forwardableMeta(p.Meta)
		raw, err := h.Call(forCaller(ctx), method, up, newCallSink(t.d.trust, r, nil, src, opts))
		if err != nil {
			return nil, t.d.trust.protocolError(ctx, err, src, opts)
		}
		if method != "tasks/get" {
			// An acknowledgement: the task's state is tasks/get's.
			return map[string]any{"resultType": "complete"}, nil
		}
		return t.detailed(ctx, raw, p.TaskID, rt, src, opts)
	}
}

// detailed is tasks/get's answer (a DetailedTask) from the server's,
// through the trust boundary.
func (t *taskRoutes) detailed(ctx context.Context, raw json.RawMessage, id string, rt *view.Route, src sanitize.Source, opts sanitize.Options) (any, error) {
	var in struct {
		taskEnvelope
		Result        json.RawMessage `json:"result"`
		Error         *jsonrpc.Error  `json:"error"`
		InputRequests json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, badTask(rt.Entry.Key, fmt.Sprintf("its DetailedTask does not decode: %v", err))
	}
	out, err := in.fields(rt.Entry.Key, id)
	if err != nil {
		return nil, err
	}
	out["resultType"] = "complete"
	switch {
	case in.Status == "completed" && len(in.Result) > 0:
		res, err := t.result(ctx, in.Result, rt, src, opts)
		if err != nil {
			return nil, err
		}
		out["result"] = res
	case in.Status == "failed" && in.Error != nil:
		out["error"] = t.d.trust.upstreamError(ctx, in.Error, src, opts)
	case in.Status == "input_required" && len(in.InputRequests) > 0:
		var reqs mcp.InputRequestMap
		if err := json.Unmarshal(in.InputRequests, &reqs); err != nil {
			return nil, badTask(rt.Entry.Key, fmt.Sprintf("its inputRequests do not decode: %v", err))
		}
		// The questions pass the boundary as a multi-round-trip
		// request's do: as the input of a result.
		asked, rep, err := sanitize.ToolResult(&mcp.CallToolResult{InputRequests: reqs}, src, opts)
		if err != nil {
			return nil, t.d.trust.protocolError(ctx, err, src, opts)
		}
		t.d.trust.noteFindings(ctx, src.Server, src.Tool, rep)
		out["inputRequests"] = asked.InputRequests
	}
	return out, nil
}

// result is a completed task's inlined result through the trust boundary,
// as forward passes a call's.
func (t *taskRoutes) result(ctx context.Context, raw json.RawMessage, rt *view.Route, src sanitize.Source, opts sanitize.Options) (*mcp.CallToolResult, error) {
	up := new(mcp.CallToolResult)
	if err := up.UnmarshalJSON(raw); err != nil {
		return nil, badTask(rt.Entry.Key, fmt.Sprintf("its result does not decode: %v", err))
	}
	out, rep, err := sanitize.ToolResult(up, src, opts)
	if err != nil {
		return t.d.trust.toResult(ctx, err, src, opts)
	}
	t.d.trust.noteFindings(ctx, src.Server, src.Tool, rep)
	if err := outputStillValid(rt, up, out); err != nil {
		return errorResult(fmt.Sprintf("the result of tool %q no longer matches its output schema once switchboard cleaned its structured content (%v); it is withheld", rt.Public, err)), nil
	}
	publicAppResult(out, rt.Entry.Prefix)
	return out, nil
}
