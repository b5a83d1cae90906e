package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// unknownTool is the error for a tool that does not exist in the caller's
// view. A tool hidden by policy gets exactly this error, so its existence is
// not revealed; it matches the SDK's own unknown-tool error.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// auditRefusal is the answer to a call refused because its audit
// record cannot be written (audit.onError: refuse).
const auditRefusal = "switchboard refused this tool call: the audit trail cannot be written (audit.onError is \"refuse\"); the call did not run"

// forward runs one tools/call: rate limit, strict argument decoding and
// validation, the upstream call in a child span, then sanitising of the
// result. Every call ends in one outcome, counted, audited and logged at
// debug with its duration (never its arguments or result).
func (d *Dispatcher) forward(ctx context.Context, viewID string, snap *view.Snapshot, r *view.Route, req *session.Request, in *mcp.CallToolParamsRaw) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	pr := PrincipalOf(req.Session)
	rec := auditRecord{Time: start.UTC(), View: viewID, Tool: r.Public, Server: r.Entry.Key, Original: r.Original, Outcome: "ok",
		Token: pr.TokenID, Session: req.Session.ID()}
	if in.Name != r.Public {
		rec.CalledAs = in.Name
	}
	var raw []byte
	// One audit log for the call: the one that refuses it records it.
	audit := d.serving.genOr(ctx).Audit
	defer func() {
		took := time.Since(start)
		rec.DurationMS = float64(took.Microseconds()) / 1000
		if res != nil && rec.Outcome == "ok" && res.IsError {
			rec.Outcome = "tool_error"
		}
		if err != nil && rec.Outcome == "ok" {
			rec.Outcome = "error"
		}
		d.serving.genOr(ctx).Tel.RecordCall(ctx, r.Metrics, rec.Outcome, took)
		d.activity.Record(viewID, rec.Outcome)
		if !audit.write(&rec, raw) {
			d.serving.genOr(ctx).Tel.AuditWriteFailure(ctx)
		}
		if d.log.IsDebug() {
			d.log.Debug("tool call", "tool", r.Public, "upstream", r.Entry.Key, "outcome", rec.Outcome, "duration", took)
		}
	}()

	// Checked first, so a refused call reaches neither a rate limit nor
	// its server; its own record is one more try at writing.
	if audit.refusing() {
		rec.Outcome = "audit_unavailable"
		return errorResult(auditRefusal), nil
	}
	if limited := d.serving.overLimit(ctx, snap, viewID, req.Session, start); limited != nil {
		rec.Outcome = "rate_limited"
		return limited, nil
	}
	args, err := decodeArgs(in.Arguments)
	if err == nil && r.Schema != nil {
		err = r.Schema.Validate(forValidation(args))
	}
	if err != nil {
		// A tool error, not a protocol error: the model reads it and can
		// correct its call (2025-11-25 guidance, DESIGN §7).
		rec.Outcome = "invalid_arguments"
		return errorResult(fmt.Sprintf("invalid arguments for tool %q: %v", r.Public, err)), nil
	}
	raw, err = appendArgs(make([]byte, 0, len(in.Arguments)+16), args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	h, err := d.clients.handleFor(ctx, r.Entry, req.Session)
	if err != nil {
		if errors.Is(err, session.ErrSessionLimit) {
			rec.Outcome = "session_limit"
			return errorResult(err.Error()), nil
		}
		return nil, err
	}
	cctx, span, meta := d.callSpan(ctx, r, forwardableMeta(in.Meta))
	params := &mcp.CallToolParams{Name: r.Original, Arguments: json.RawMessage(raw), Meta: meta,
		InputResponses: in.InputResponses, RequestState: in.RequestState}
	lowerLevel(cctx, h, req)
	tok := progressToken(req.Params)
	if tok != nil {
		params.SetProgressToken("") // asks the connection for a token of its own
	}
	src, opts := sanitize.Source{Server: r.Entry.Key, Tool: r.Original}, d.trust.options(snap, r.Entry)
	sink := newCallSink(d.trust, req, tok, src, opts)
	callCtx, offer := consentOffer(forCaller(cctx), req, h)
	up, err := h.CallTool(callCtx, params, sink)
	if n := offer.need(); err != nil && n != nil && offer.modern && offer.given(ctx, req, n) {
		// The 2026-07-28 client's person consented: once more.
		up, err = h.CallTool(forCaller(cctx), params, sink)
	}
	if err != nil {
		var tc *upstream.TaskCreated // escapes: declared where it is needed
		if errors.As(err, &tc) {
			// The server runs the call as a task: the caller gets its
			// CreateTaskResult (the result comes by tasks/get).
			span.End()
			rec.Outcome = "task"
			return nil, d.tasks.created(ctx, tc, r, req)
		}
		rec.Outcome = outcomeOf(err)
		span.SetStatus(codes.Error, rec.Outcome)
		span.End()
		if n := offer.need(); n != nil && !offer.modern {
			rec.Outcome = "consent"
			return nil, offer.required(n)
		}
		return d.trust.toResult(ctx, err, src, opts)
	}
	span.End()
	out, rep, err := sanitize.ToolResult(up, src, opts)
	rec.Bytes = rep.Bytes
	if err != nil {
		rec.Outcome = "too_large"
		return d.trust.toResult(ctx, err, src, opts)
	}
	if len(rep.Findings) > 0 {
		rec.Suspicious = view.FindingIDs(rep.Findings)
		d.trust.noteFindings(ctx, r.Entry.Key, r.Original, rep)
		if rep.Blocked {
			rec.Outcome = "blocked"
		}
	}
	if err := outputStillValid(r, up, out); err != nil {
		rec.Outcome = "invalid_output"
		return errorResult(fmt.Sprintf("the result of tool %q no longer matches its output schema once switchboard cleaned its structured content (%v); it is withheld", r.Public, err)), nil
	}
	publicAppResult(out, r.Entry.Prefix)
	return out, nil
}

// outputStillValid checks structured content the trust boundary changed
// (neutralised or redacted a string) against the tool's output schema:
// a client that validates it would refuse the result, and should learn
// why. Unchanged content is the upstream's own and is not checked here.
func outputStillValid(r *view.Route, up, out *mcp.CallToolResult) error {
	if r.Output == nil || out.IsError || out.StructuredContent == nil || sameValue(up.StructuredContent, out.StructuredContent) {
		return nil
	}
	return r.Output.Validate(out.StructuredContent)
}

// sameValue reports whether a and b are the same map or slice (the
// boundary returns what it did not change as it is).
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != vb.Kind() {
		return false
	}
	switch va.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer:
		return va.Pointer() == vb.Pointer()
	}
	return reflect.DeepEqual(a, b)
}

// outcomeOf names the outcome of a failed upstream call.
func outcomeOf(err error) string {
	var (
		te *upstream.TimeoutError
		we *jsonrpc.Error
	)
	switch {
	case errors.As(err, &te):
		return "timeout"
	case errors.As(err, &we):
		return "upstream_error"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, upstream.ErrUnavailable):
		return "unavailable"
	}
	return "error"
}

// forwardableMeta keeps the _meta keys that may cross the hop: trace context
// and vendor keys. The progress token is minted per upstream call, and the
// io.modelcontextprotocol/* keys describe the downstream client's protocol,
// capabilities and identity, which the proxy must not impersonate.
func forwardableMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	var out mcp.Meta
	for k, v := range m {
		if k == "progressToken" || strings.HasPrefix(k, metaPrefix) {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// progressToken is a request's _meta.progressToken exactly as the client
// wrote it (nil: none), to go back on its notifications byte for byte: an
// integer over 2^53 would not survive a float64. Params are decoded again
// only when the key is in them.
func progressToken(params json.RawMessage) any {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return nil
	}
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.Token) == 0 || string(p.Meta.Token) == "null" {
		return nil
	}
	return p.Meta.Token
}

// withProgress is params' forwardable _meta, with a progress request when
// the client asked for progress (the upstream connection mints the token).
func withProgress(params mcp.Params) mcp.Meta {
	m := forwardableMeta(params.GetMeta())
	if params.GetMeta()["progressToken"] != nil {
		if m == nil {
			m = mcp.Meta{}
		}
		m["progressToken"] = ""
	}
	return m
}

// callerKey identifies the caller for rate limiting within a view (each
// view has its limiter): the value of its token (never the token's place
// in auth.tokens, which a reload moves), else the view's endpoint itself.
// Never the session: a new initialize must not start a fresh budget.
func callerKey(ss *session.Session) string {
	if pr := PrincipalOf(ss); pr.Holder != (Holder{}) {
		return "token:" + string(pr.Holder[:])
	}
	return "endpoint"
}

// overLimit charges one call to the caller's budget in view viewID and
// returns the tool error for a call over it; nil: within it (or the view
// has no limits).
func (s *Serving) overLimit(ctx context.Context, snap *view.Snapshot, viewID string, ss *session.Session, now time.Time) *mcp.CallToolResult {
	lim := snap.Limiters[viewID]
	if lim == nil {
		return nil
	}
	ok, retry := lim.Allow(callerKey(ss), now)
	if ok {
		return nil
	}
	s.genOr(ctx).Tel.RateLimited(ctx)
	return rateLimited(retry)
}

// rateLimited is the tool error for a call over the limit. It says when to
// retry, in the text for the model and in _meta for programs.
func rateLimited(retry time.Duration) *mcp.CallToolResult {
	secs := int(retry.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	res := errorResult(fmt.Sprintf("rate limit exceeded; retry in %ds", secs))
	res.Meta = mcp.Meta{"retryAfterMs": retry.Milliseconds()}
	return res
}

// lowerLevel makes the upstream send the log messages a 2026-07-28
// request asked for in its _meta: a legacy upstream knows only one level
// for its connection, so it is lowered when the request wants more (once;
// each request still gets only what its own level lets through).
func lowerLevel(ctx context.Context, h *upstream.Handle, req *session.Request) {
	want := req.LogLevel()
	if !req.Modern() || want == "" || h == nil {
		return
	}
	if cur := h.LoggingLevel(); cur == "" || session.LevelRank(want) < session.LevelRank(cur) {
		_ = h.SetLoggingLevel(ctx, want)
	}
}
