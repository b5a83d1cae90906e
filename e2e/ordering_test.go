package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chatterSteps is how many progress notifications and log messages each
// chatter call sends.
const chatterSteps = 50

// TestNotificationsBeforeResponse: on every downstream transport, a
// request's progress notifications and log messages reach the client before
// the request's response, in the order the upstream sent them. The fixture's
// chatter tool sends them all and returns at once, so a proxy that forwards
// notifications on another path than the response loses the race on some
// of the many calls.
//
// On /mcp each call is its own POST, whose stream must carry the call's
// notifications and then its response. On /sse and stdio one stream
// carries everything: a progress notification belongs to the call with its
// token and must come before that call's response; a log message must come
// while a call is in flight, and with one call at a time it is that call's.
//
// Log messages carry no request id on a stdio upstream, so when one session
// has several calls in flight no proxy can tell which call a log message
// belongs to, and on /mcp which stream it goes on is the proxy's choice:
// there each call's own log messages are only checked with one call at a
// time, or from an HTTP upstream, which sends them on the call's stream.
// Every case checks that no log message is delivered twice.
//
// Each case makes up to its number of calls and starts no new one after its
// share of the test's time (at most rowBudget): a slow machine (the
// binaries are built with -race) makes fewer, but at least minCalls.
func TestNotificationsBeforeResponse(t *testing.T) {
	const (
		minCalls  = 100
		rowBudget = 20 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	cases := []struct {
		down        string
		calls, conc int
	}{
		{"mcp", 1000, 8},
		{"mcp", 100, 1},
		{"sse", 1000, 8},
		{"sse", 100, 1},
		{"stdio", 1000, 8},
		{"stdio", 100, 1},
	}
	rowsLeft := 2 * len(cases)
	for _, up := range []string{"stdio", "http"} {
		for _, tc := range cases {
			budget := min(rowBudget, time.Until(deadline)/time.Duration(rowsLeft)-5*time.Second)
			rowsLeft--
			t.Run(fmt.Sprintf("upstream=%s/downstream=%s/concurrency=%d", up, tc.down, tc.conc), func(t *testing.T) {
				server := fixtureServer("c")
				if up == "http" {
					url, _ := startFixtureHTTP(t, "http", "--name", "c")
					server = map[string]any{"type": "http", "url": url}
				}
				cfg := map[string]any{"mcpServers": map[string]any{"c": server}}
				strictLogs := tc.conc == 1 || (up == "http" && tc.down == "mcp")
				v := &verdict{}
				var call func(ctx context.Context, k int) (before []rpcMsg, res rpcMsg, err error)
				var d *demux
				switch tc.down {
				case "mcp":
					s := startSwitchboard(t, cfg)
					c := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
					c.open(t, ctx, "mcp_c_chatter")
					call = func(ctx context.Context, k int) ([]rpcMsg, rpcMsg, error) {
						return c.call(ctx, "tools/call", chatterCall("mcp_c_chatter", callToken(k), chatterSteps, chatterSteps))
					}
				case "sse", "stdio":
					var st *rawStream
					if tc.down == "sse" {
						s := startSwitchboard(t, cfg)
						st, _ = dialSSE(t, ctx, "http://"+s.addr+"/sse", "")
					} else {
						st = startStdioSwitchboard(t, cfg)
					}
					st.open(t, ctx, "mcp_c_chatter")
					d = newDemux(t, ctx, st, v)
					call = func(ctx context.Context, k int) ([]rpcMsg, rpcMsg, error) {
						return d.call(ctx, callToken(k), chatterCall("mcp_c_chatter", callToken(k), chatterSteps, chatterSteps))
					}
				}
				var logs atomic.Int64
				start := time.Now()
				done := runCalls(ctx, start.Add(budget), tc.calls, tc.conc, v, func(ctx context.Context, k int) error {
					before, res, err := call(ctx, k)
					if err != nil {
						return fmt.Errorf("call %d: %v", k, err)
					}
					n, problems := checkCall(k, before, res, strictLogs)
					logs.Add(int64(n))
					v.record(fmt.Sprintf("call %d", k), problems)
					return nil
				})
				if d != nil {
					logs.Add(d.unattributedLogs())
				}
				t.Logf("%d calls in %s, %d log messages", done, time.Since(start).Round(time.Millisecond), logs.Load())
				v.report(t, done)
				if done < min(tc.calls, minCalls) && !v.enough() {
					t.Errorf("only %d calls done (%s)", done, time.Since(start).Round(time.Millisecond))
				}
				if sent := int64(done * chatterSteps); logs.Load() > sent {
					t.Errorf("%d log messages for %d calls that sent %d: some were delivered twice", logs.Load(), done, sent)
				}
			})
		}
	}
}

func callToken(k int) string { return fmt.Sprintf("call-%d", k) }

// checkCall checks what arrived for call k before its response, and the
// response: every progress notification for its token, 1 to chatterSteps in
// order, and none for another call; with strictLogs, chatterSteps log
// messages in order. It returns the number of chatter log messages.
func checkCall(k int, before []rpcMsg, res rpcMsg, strictLogs bool) (logs int, problems []string) {
	if err := res.failure(); err != nil {
		return 0, []string{err.Error()}
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res.Result, &r); err != nil || r.IsError || len(r.Content) != 1 || unwrap(r.Content[0].Text) != "done" {
		problems = append(problems, fmt.Sprintf("result %s", res.Result))
	}
	tok := callToken(k)
	progress := 0
	for _, m := range before {
		if p, ok := progressOf(m); ok {
			if got, _ := p.Token.(string); got != tok {
				problems = append(problems, fmt.Sprintf("progress for token %v on this call's stream", p.Token))
				continue
			}
			progress++
			if p.Progress != float64(progress) || p.Total != chatterSteps {
				problems = append(problems, fmt.Sprintf("progress %g/%g where %d/%d was due", p.Progress, p.Total, progress, chatterSteps))
			}
			continue
		}
		if i, n, ok := chatterLog(m); ok {
			logs++
			if strictLogs && (i != logs || n != chatterSteps) {
				problems = append(problems, fmt.Sprintf("log message %d of %d where %d of %d was due", i, n, logs, chatterSteps))
			}
		}
	}
	var summary []string
	if progress != chatterSteps {
		summary = append(summary, fmt.Sprintf("the response came after %d of %d progress notifications", progress, chatterSteps))
	}
	if strictLogs && logs != chatterSteps {
		summary = append(summary, fmt.Sprintf("the response came after %d of %d log messages", logs, chatterSteps))
	}
	return logs, append(summary, problems...)
}

// demux runs calls on a stream that carries every message of the session
// (/sse, stdio). It hands each call, in wire order, the progress
// notifications for its token and, while it is the only call in flight, the
// log messages, then its response. A notification that arrives after its
// call's response is recorded in the verdict.
type demux struct {
	st *rawStream
	v  *verdict

	mu           sync.Mutex
	inFlight     map[int64]*pending // by request id
	byToken      map[string]*pending
	answered     map[string]bool // tokens whose call has its response
	unattributed int64           // log messages with several calls in flight
	err          error           // why the stream ended
}

type pending struct {
	tok    string
	before []rpcMsg
	res    chan rpcMsg // gets the response; closed if the stream ends first
}

func newDemux(t *testing.T, ctx context.Context, st *rawStream, v *verdict) *demux {
	d := &demux{st: st, v: v, inFlight: map[int64]*pending{}, byToken: map[string]*pending{}, answered: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.read(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return d
}

func (d *demux) read(ctx context.Context) {
	for {
		m, err := d.st.next(ctx)
		d.mu.Lock()
		if err != nil {
			d.err = err
			for id, p := range d.inFlight {
				close(p.res)
				delete(d.inFlight, id)
			}
			d.mu.Unlock()
			return
		}
		d.route(m)
		d.mu.Unlock()
	}
}

// route hands m to its call; d.mu is held.
func (d *demux) route(m rpcMsg) {
	if m.isResponse() {
		id, _ := strconv.ParseInt(string(bytes.TrimSpace(m.ID)), 10, 64)
		p := d.inFlight[id]
		if p == nil {
			d.v.record("stream", []string{fmt.Sprintf("a response to no request in flight: %s", js(m))})
			return
		}
		delete(d.inFlight, id)
		delete(d.byToken, p.tok)
		d.answered[p.tok] = true
		p.res <- m
		return
	}
	if n, ok := progressOf(m); ok {
		tok, _ := n.Token.(string)
		switch p := d.byToken[tok]; {
		case p != nil:
			p.before = append(p.before, m)
		case d.answered[tok]:
			d.v.record("call with token "+tok, []string{fmt.Sprintf("progress %g/%g came after the response", n.Progress, n.Total)})
		default:
			d.v.record("stream", []string{fmt.Sprintf("progress for token %v, of no call", n.Token)})
		}
		return
	}
	if i, n, ok := chatterLog(m); ok {
		switch len(d.inFlight) {
		case 0:
			d.v.record("stream", []string{fmt.Sprintf("log message %d of %d with no call in flight: after its call's response", i, n)})
		case 1:
			for _, p := range d.inFlight {
				p.before = append(p.before, m)
			}
		default:
			d.unattributed++
		}
	}
}

// call sends a tools/call whose progress token is tok and returns what the
// demux handed it.
func (d *demux) call(ctx context.Context, tok string, params any) ([]rpcMsg, rpcMsg, error) {
	p := &pending{tok: tok, res: make(chan rpcMsg, 1)}
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return nil, rpcMsg{}, d.err
	}
	id := d.st.ids.Add(1)
	d.inFlight[id] = p
	d.byToken[tok] = p
	d.mu.Unlock()
	if err := d.st.send(ctx, request(id, "tools/call", params)); err != nil {
		return nil, rpcMsg{}, err
	}
	select {
	case res, ok := <-p.res:
		d.mu.Lock()
		defer d.mu.Unlock()
		if !ok {
			return nil, rpcMsg{}, d.err
		}
		return p.before, res, nil
	case <-ctx.Done():
		return nil, rpcMsg{}, ctx.Err()
	}
}

func (d *demux) unattributedLogs() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unattributed
}

// verdict collects what went wrong.
type verdict struct {
	mu    sync.Mutex
	bad   int
	first []string
}

// maxBad is how many wrong calls stop a run: enough to see the pattern.
const maxBad = 20

func (v *verdict) record(what string, problems []string) {
	if len(problems) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.bad++
	if len(v.first) < 5 {
		if len(problems) > 3 {
			problems = append(problems[:3:3], fmt.Sprintf("%d more", len(problems)-3))
		}
		v.first = append(v.first, what+": "+strings.Join(problems, "; "))
	}
}

func (v *verdict) enough() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bad >= maxBad
}

func (v *verdict) report(t *testing.T, calls int) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bad > 0 {
		more := ""
		if v.bad >= maxBad {
			more = " (stopped there)"
		}
		t.Errorf("%d things went wrong in %d calls%s; the first:\n%s", v.bad, calls, more, strings.Join(v.first, "\n"))
	}
}

// runCalls runs do for k in [0, n), conc at a time, until all ran, one
// fails, ctx ends or v has seen enough wrong calls; it starts none after
// last. It returns how many ran to the end.
func runCalls(ctx context.Context, last time.Time, n, conc int, v *verdict, do func(ctx context.Context, k int) error) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && !v.enough() && time.Now().Before(last) {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				if err := do(ctx, k); err != nil {
					once.Do(func() { firstErr = err })
					cancel()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		v.record("a call", []string{firstErr.Error()})
	}
	return int(done.Load())
}
