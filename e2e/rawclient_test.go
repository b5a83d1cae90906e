package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The raw clients below speak JSON-RPC on the wire themselves. The go-sdk
// client runs notification handlers apart from the call that returns the
// response, so it cannot tell in which order the messages arrived; these
// clients hand every message over in wire order.

// rawVersion is the protocol version the raw clients ask for.
const rawVersion = "2025-11-25"

// rpcMsg is one JSON-RPC message as it arrived.
type rpcMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (m rpcMsg) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }
func (m rpcMsg) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 }

// answers reports whether m is the response to request id.
func (m rpcMsg) answers(id int64) bool {
	return m.isResponse() && string(bytes.TrimSpace(m.ID)) == strconv.FormatInt(id, 10)
}

// failure is the response's error, or nil.
func (m rpcMsg) failure() error {
	if m.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	}
	return nil
}

// progressNote is the params of notifications/progress.
type progressNote struct {
	Token    any     `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// progressOf returns m's params if m is notifications/progress.
func progressOf(m rpcMsg) (progressNote, bool) {
	var p progressNote
	if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
		return p, false
	}
	return p, true
}

// logRE finds the fixture's chatter log text in a log message's data, which
// the proxy may have neutralised or wrapped.
var logRE = regexp.MustCompile(`log (\d+) of (\d+)`)

// chatterLog returns i and n of a chatter log message "log i of n".
func chatterLog(m rpcMsg) (i, n int, ok bool) {
	if m.Method != "notifications/message" {
		return 0, 0, false
	}
	var p struct {
		Data any `json:"data"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return 0, 0, false
	}
	sub := logRE.FindStringSubmatch(js(p.Data))
	if sub == nil {
		return 0, 0, false
	}
	i, _ = strconv.Atoi(sub[1])
	n, _ = strconv.Atoi(sub[2])
	return i, n, true
}

func request(id int64, method string, params any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return b
}

func notification(method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return b
}

// reply is the raw clients' answer to a request from the server: ping is
// answered, anything else refused.
func reply(m rpcMsg) []byte {
	if m.Method == "ping" {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		return b
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "not supported by this client"}})
	return b
}

func initializeParams() map[string]any {
	return map[string]any{
		"protocolVersion": rawVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "e2e-raw", "version": "1"},
	}
}

// chatterCall is the params of a tools/call of tool (a chatter tool) with
// a progress token.
func chatterCall(tool, token string, progress, logs int) map[string]any {
	return map[string]any{
		"name":      tool,
		"arguments": map[string]any{"progress": progress, "logs": logs},
		"_meta":     map[string]any{"progressToken": token},
	}
}

// toolNames returns the names in a tools/list result, and its next cursor.
func toolNames(res json.RawMessage) ([]string, string) {
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	_ = json.Unmarshal(res, &r)
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names, r.NextCursor
}

// hasTool lists tools through call, every page, and reports whether name is
// among them.
func hasTool(ctx context.Context, call func(context.Context, string, any) (rpcMsg, error), name string) bool {
	cursor := ""
	for range 100 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := call(ctx, "tools/list", params)
		if err != nil || res.failure() != nil {
			return false
		}
		names, next := toolNames(res.Result)
		for _, n := range names {
			if n == name {
				return true
			}
		}
		if next == "" {
			return false
		}
		cursor = next
	}
	return false
}

// sseEvents reads server-sent events from r and passes each event's name
// and data to fn until fn returns false, r ends or fails.
func sseEvents(r io.Reader, fn func(event, data string) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			// An event with no data is not dispatched, as EventSource does
			// (a SEP-1699 priming event: an ID, a retry, empty data).
			if joined := strings.Join(data, "\n"); joined != "" && !fn(event, joined) {
				return nil
			}
			event, data = "", nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// rawHTTP is a raw client of switchboard's streamable HTTP endpoint.
type rawHTTP struct {
	url, token string
	hc         *http.Client
	sid        string
	ids        atomic.Int64
}

func newRawHTTP(t *testing.T, endpoint, token string) *rawHTTP {
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawHTTP{url: endpoint, token: token, hc: &http.Client{Transport: tr}}
}

func (c *rawHTTP) newPost(ctx context.Context, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", rawVersion)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req
}

// exchange POSTs request id and returns every message of the answer, in
// order, up to and including the response. Requests from the server on the
// stream are answered.
func (c *rawHTTP) exchange(ctx context.Context, id int64, body []byte) ([]rpcMsg, *http.Response, error) {
	resp, err := c.hc.Do(c.newPost(ctx, body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp, fmt.Errorf("POST: status %d: %s", resp.StatusCode, strings.TrimSpace(readAll(io.LimitReader(resp.Body, 1<<10))))
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		var m rpcMsg
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return nil, resp, fmt.Errorf("POST: JSON answer: %v", err)
		}
		if !m.answers(id) {
			return []rpcMsg{m}, resp, fmt.Errorf("POST: JSON answer is not the response to %d: %s", id, js(m))
		}
		return []rpcMsg{m}, resp, nil
	}
	if !strings.HasPrefix(ct, "text/event-stream") {
		return nil, resp, fmt.Errorf("POST: Content-Type %q", ct)
	}
	var msgs []rpcMsg
	var bad error
	done := false
	err = sseEvents(resp.Body, func(_, data string) bool {
		var m rpcMsg
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			bad = fmt.Errorf("POST stream: event %q: %v", data, err)
			return false
		}
		msgs = append(msgs, m)
		if m.isRequest() {
			if err := c.send(ctx, reply(m)); err != nil {
				bad = err
				return false
			}
		}
		done = m.answers(id)
		return !done
	})
	switch {
	case bad != nil:
		return msgs, resp, bad
	case done:
		return msgs, resp, nil
	case ctx.Err() != nil:
		return msgs, resp, ctx.Err()
	}
	return msgs, resp, fmt.Errorf("POST stream ended (%v) after %d messages without the response to %d", err, len(msgs), id)
}

// call sends a request and returns the messages that came before its
// response on the request's stream, and the response.
func (c *rawHTTP) call(ctx context.Context, method string, params any) (before []rpcMsg, res rpcMsg, err error) {
	id := c.ids.Add(1)
	msgs, _, err := c.exchange(ctx, id, request(id, method, params))
	if err != nil {
		return msgs, rpcMsg{}, err
	}
	return msgs[:len(msgs)-1], msgs[len(msgs)-1], nil
}

// send POSTs a notification or a response, which the server accepts with 202.
func (c *rawHTTP) send(ctx context.Context, body []byte) error {
	resp, err := c.hc.Do(c.newPost(ctx, body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST of a notification or response: status %d: %s", resp.StatusCode, strings.TrimSpace(readAll(io.LimitReader(resp.Body, 1<<10))))
	}
	return nil
}

// open initializes the session, sets the log level to debug and waits for
// tool to be listed.
func (c *rawHTTP) open(t *testing.T, ctx context.Context, tool string) {
	t.Helper()
	id := c.ids.Add(1)
	msgs, resp, err := c.exchange(ctx, id, request(id, "initialize", initializeParams()))
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := msgs[len(msgs)-1].failure(); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.sid = resp.Header.Get("Mcp-Session-Id"); c.sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	if err := c.send(ctx, notification("notifications/initialized", nil)); err != nil {
		t.Fatalf("notifications/initialized: %v", err)
	}
	c.mustCall(t, ctx, "logging/setLevel", map[string]any{"level": "debug"})
	testutil.Eventually(t, 20*time.Second, tool+" listed", func() bool {
		return hasTool(ctx, func(ctx context.Context, method string, params any) (rpcMsg, error) {
			_, res, err := c.call(ctx, method, params)
			return res, err
		}, tool)
	})
}

func (c *rawHTTP) mustCall(t *testing.T, ctx context.Context, method string, params any) rpcMsg {
	t.Helper()
	_, res, err := c.call(ctx, method, params)
	if err == nil {
		err = res.failure()
	}
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res
}

// listen opens the session's standalone GET stream and passes every message
// on it to fn until the test ends. It returns once the stream is open.
func (c *rawHTTP) listen(t *testing.T, ctx context.Context, fn func(rpcMsg)) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", rawVersion)
	req.Header.Set("Mcp-Session-Id", c.sid)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		_ = sseEvents(resp.Body, func(_, data string) bool {
			var m rpcMsg
			if json.Unmarshal([]byte(data), &m) == nil {
				if m.isRequest() {
					_ = c.send(ctx, reply(m))
				}
				fn(m)
			}
			return true
		})
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// rawStream is a raw client of a transport that carries every message of
// the session on one stream: /sse and stdio.
type rawStream struct {
	send func(context.Context, []byte) error
	msgs chan rpcMsg // in wire order
	errc chan error  // why msgs stopped
	ids  atomic.Int64
}

func newRawStream(send func(context.Context, []byte) error) *rawStream {
	return &rawStream{send: send, msgs: make(chan rpcMsg, 1024), errc: make(chan error, 1)}
}

// feed decodes messages from next into s.msgs until next fails or stop is
// closed; run it on its own goroutine.
func (s *rawStream) feed(stop <-chan struct{}, next func() ([]byte, error)) {
	for {
		b, err := next()
		if err != nil {
			s.errc <- err
			close(s.msgs)
			return
		}
		var m rpcMsg
		if err := json.Unmarshal(b, &m); err != nil {
			s.errc <- fmt.Errorf("message %q: %v", b, err)
			close(s.msgs)
			return
		}
		select {
		case s.msgs <- m:
		case <-stop:
			s.errc <- errors.New("stopped")
			close(s.msgs)
			return
		}
	}
}

// next returns the next message, answering requests from the server on
// the way.
func (s *rawStream) next(ctx context.Context) (rpcMsg, error) {
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return rpcMsg{}, fmt.Errorf("stream ended: %v", <-s.errc)
			}
			if m.isRequest() {
				if err := s.send(ctx, reply(m)); err != nil {
					return rpcMsg{}, err
				}
			}
			return m, nil
		case <-ctx.Done():
			return rpcMsg{}, ctx.Err()
		}
	}
}

// request sends a request and returns its id.
func (s *rawStream) request(ctx context.Context, method string, params any) (int64, error) {
	id := s.ids.Add(1)
	return id, s.send(ctx, request(id, method, params))
}

// await reads up to the response to id, passing every message before it to
// fn, and returns the response.
func (s *rawStream) await(ctx context.Context, id int64, fn func(rpcMsg)) (rpcMsg, error) {
	for {
		m, err := s.next(ctx)
		if err != nil {
			return rpcMsg{}, err
		}
		if m.answers(id) {
			return m, nil
		}
		if fn != nil {
			fn(m)
		}
	}
}

func (s *rawStream) call(ctx context.Context, method string, params any) (rpcMsg, error) {
	id, err := s.request(ctx, method, params)
	if err != nil {
		return rpcMsg{}, err
	}
	return s.await(ctx, id, nil)
}

func (s *rawStream) mustCall(t *testing.T, ctx context.Context, method string, params any) rpcMsg {
	t.Helper()
	res, err := s.call(ctx, method, params)
	if err == nil {
		err = res.failure()
	}
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res
}

// open initializes the session, sets the log level to debug and waits for
// tool to be listed.
func (s *rawStream) open(t *testing.T, ctx context.Context, tool string) {
	t.Helper()
	s.mustCall(t, ctx, "initialize", initializeParams())
	if err := s.send(ctx, notification("notifications/initialized", nil)); err != nil {
		t.Fatalf("notifications/initialized: %v", err)
	}
	s.mustCall(t, ctx, "logging/setLevel", map[string]any{"level": "debug"})
	testutil.Eventually(t, 20*time.Second, tool+" listed", func() bool { return hasTool(ctx, s.call, tool) })
}

// dialSSE opens a legacy SSE session at endpoint (…/sse) with an optional
// bearer token, and returns it with the URL the session's messages are
// POSTed to.
func dialSSE(t *testing.T, ctx context.Context, endpoint, token string) (*rawStream, string) {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	sctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: status %d", endpoint, resp.StatusCode)
	}
	events := make(chan string)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		err := sseEvents(resp.Body, func(event, data string) bool {
			select {
			case events <- event + "\n" + data:
				return true
			case <-stop:
				return false
			}
		})
		if err == nil {
			err = errors.New("stopped")
		}
		select {
		case events <- "error\n" + err.Error():
		case <-stop:
		}
		close(events)
	}()
	t.Cleanup(func() {
		close(stop)
		cancel()
		wg.Wait()
	})
	var post string
	select {
	case ev, ok := <-events:
		name, data, _ := strings.Cut(ev, "\n")
		if !ok || name != "endpoint" {
			t.Fatalf("first event on %s: %q, want an endpoint event", endpoint, ev)
		}
		base, _ := url.Parse(endpoint)
		u, err := base.Parse(data)
		if err != nil {
			t.Fatalf("endpoint %q: %v", data, err)
		}
		post = u.String()
	case <-ctx.Done():
		t.Fatalf("no endpoint event on %s: %v", endpoint, ctx.Err())
	}
	s := newRawStream(func(ctx context.Context, body []byte) error {
		status, err := postStatus(ctx, hc, post, token, body)
		if err == nil && status/100 != 2 {
			err = fmt.Errorf("POST %s: status %d", post, status)
		}
		return err
	})
	go s.feed(stop, func() ([]byte, error) {
		for ev := range events {
			name, data, _ := strings.Cut(ev, "\n")
			switch name {
			case "error":
				return nil, errors.New(data)
			case "", "message":
				return []byte(data), nil
			}
		}
		return nil, io.EOF
	})
	return s, post
}

// postStatus POSTs one message with an optional bearer token and returns
// the status.
func postStatus(ctx context.Context, hc *http.Client, url, token string, body []byte) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// startStdioSwitchboard runs `switchboard serve --stdio` with cfg and
// returns a raw client of it. The process is stopped at cleanup, and a data
// race it reports fails the test.
func startStdioSwitchboard(t *testing.T, cfg any) *rawStream {
	t.Helper()
	dir := t.TempDir()
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = newCmd(switchboard, "serve", "--stdio", "--log-level", "debug", "--config", writeConfig(t, dir, cfg))
	p.cmd.Dir = dir
	p.cmd.Stderr = lockedWriter{p}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var fed sync.WaitGroup
	var mu sync.Mutex // one line at a time on stdin
	s := newRawStream(func(_ context.Context, body []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := stdin.Write(append(body, '\n'))
		return err
	})
	out := bufio.NewReaderSize(stdout, 1<<20)
	fed.Add(1)
	go func() {
		defer fed.Done()
		s.feed(stop, func() ([]byte, error) { return out.ReadBytes('\n') })
	}()
	go func() {
		fed.Wait() // Wait closes stdout: read everything first
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		close(stop)
		mu.Lock()
		stdin.Close() // the end of input ends the session
		mu.Unlock()
		p.stop(10 * time.Second)
		if strings.Contains(p.Stderr(), "WARNING: DATA RACE") {
			t.Errorf("switchboard reported a data race:\n%s", p.Stderr())
		}
		if t.Failed() {
			t.Logf("switchboard stderr:\n%s", tail(p.Stderr(), 8000))
		}
	})
	return s
}
