package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// hop is one HTTP exchange of a client's transport.
type hop struct {
	verb, method   string // HTTP method; JSON-RPC method of a POST
	session        string // the Mcp-Session-Id sent
	lastEventID    string // the Last-Event-ID sent
	servedBy       string // the replica HAProxy says answered
	status         int
	start, headers time.Time
}

// hopRecorder is an http.RoundTripper that records every exchange.
type hopRecorder struct {
	base *http.Transport
	mu   sync.Mutex
	hops []hop
}

func (r *hopRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hop{verb: req.Method, session: req.Header.Get("Mcp-Session-Id"), lastEventID: req.Header.Get("Last-Event-ID"), start: time.Now()}
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var m struct {
				Method string `json:"method"`
			}
			_ = json.NewDecoder(body).Decode(&m)
			body.Close()
			h.method = m.Method
		}
	}
	resp, err := r.base.RoundTrip(req)
	h.headers = time.Now()
	if resp != nil {
		h.status, h.servedBy = resp.StatusCode, resp.Header.Get(servedByHeader)
	}
	r.mu.Lock()
	r.hops = append(r.hops, h)
	r.mu.Unlock()
	return resp, err
}

func (r *hopRecorder) all() []hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hops)
}

// loadClient is one go-sdk client of the load, with what it saw.
type loadClient struct {
	name    string
	legacy  bool
	cs      *mcp.ClientSession
	rec     *hopRecorder
	id      string // the session ID right after connecting (legacy)
	replica string // the replica the ID names (legacy)
	calls   []loadCall
	// progress receives a value (without blocking) for each progress
	// notification the client gets.
	progress chan struct{}
}

type loadCall struct {
	start, end time.Time
	err        error
}

// connectRecorded connects a go-sdk client named name to url, pinned to
// version ("" for the client's default), through its own connections.
func connectRecorded(t *testing.T, url, name, version string) *loadClient {
	t.Helper()
	rec := &hopRecorder{base: &http.Transport{}}
	t.Cleanup(rec.base.CloseIdleConnections)
	progress := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}}, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c := &loadClient{name: name, legacy: version == "2025-11-25", cs: cs, rec: rec, id: cs.ID(), progress: progress}
	c.replica, _, _ = strings.Cut(c.id, ".")
	return c
}

// echo calls the fixture's echo through switchboard and checks the result
// carries the argument.
func (c *loadClient) echo(ctx context.Context, arg string) error {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_echo_echo", Arguments: map[string]any{"text": arg}})
	switch {
	case err != nil:
		return err
	case res.IsError || !strings.Contains(textOf(res), arg):
		return fmt.Errorf("result %q does not carry %q", textOf(res), arg)
	}
	return nil
}

// resumed sums sessionsResumed over the replicas' /status.
func resumed(t *testing.T, replicas ...*sb) int {
	t.Helper()
	n := 0
	for _, s := range replicas {
		v, _ := s.status(t)["sessionsResumed"].(float64)
		n += int(v)
	}
	return n
}

// postWithSession sends a legacy ping naming session id straight to a
// replica, and returns the status and the start of the body.
func postWithSession(t *testing.T, addr, id string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("post to %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(b)
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestReplicasBehindL7Proxy runs three replicas of one deployment (one
// sessionKey, one requestStateKey) behind HAProxy, which routes a request
// naming a session to the replica named in the ID's prefix and balances
// the rest. 2026-07-28 clients (no session) and legacy 2025-11-25 clients
// call echo concurrently; a third of the way through, the replica holding
// most legacy sessions is SIGKILLed, while legacy sessions of their own
// also have a long call streaming progress from it. Only calls in flight
// at that instant may fail: the 2026-07-28 clients' next calls go to the
// other replicas, and the legacy clients keep their sessions (same ID, no
// new initialize), which the surviving replicas resume from the sealed ID
// alone. The long calls fail promptly: their clients' reconnection with
// Last-Event-ID gets 404 from a survivor, which has none of the stream's
// events, and the go-sdk client ends its session; a new one works, and the
// old ID still resumes. A tampered ID, an ID sealed
// under another key and a made-up one are refused with 404, and an ID
// shows neither the client's name nor its protocol version.
func TestReplicasBehindL7Proxy(t *testing.T) {
	t.Parallel()
	hap := haproxy(t)
	upstream, _ := startFixtureHTTP(t, "http", "--name", "echo")
	cfgDir := t.TempDir()
	cfg := writeConfig(t, cfgDir, map[string]any{
		"sessionKey":      "secret://env/SB_SESSION_KEY",
		"requestStateKey": "secret://env/SB_STATE_KEY",
		"servers":         map[string]any{"echo": map[string]any{"type": "http", "url": upstream}},
	})
	env := []string{"SB_SESSION_KEY=" + randomHex(t, 24), "SB_STATE_KEY=" + randomHex(t, 24)} // 48 bytes each
	startReplica := func(name string, env []string) *sb {
		t.Helper()
		dir := t.TempDir()
		return startSwitchboardIn(t, dir, dir, nil, env, "--config", cfg, "--replica", name, "--log-level", "info")
	}
	names := []string{"r1", "r2", "r3"}
	replicas := map[string]*sb{}
	for _, n := range names {
		replicas[n] = startReplica(n, env)
	}
	for _, n := range names {
		testutil.Eventually(t, 20*time.Second, n+"'s echo ready", func() bool { return replicas[n].serverStatus(t, "echo")["state"] == "ready" })
	}
	url := startHAProxy(t, hap, names, replicas)

	// Round robin: with every replica up, one 2026-07-28 client's
	// consecutive calls are spread over the replicas, by HAProxy's account
	// and by the replicas' own call counters.
	rr := connectRecorded(t, url, "round-robin", "")
	if v := rr.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the default go-sdk client speaks %s through HAProxy, want 2026-07-28", v)
	}
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := rr.echo(ctx, fmt.Sprintf("round robin %d", i))
		cancel()
		if err != nil {
			t.Fatalf("round-robin call %d: %v", i, err)
		}
	}
	servedBy := map[string]int{}
	for _, h := range rr.rec.all() {
		if h.method == "tools/call" {
			servedBy[h.servedBy]++
		}
	}
	counted := map[string]float64{}
	for _, n := range names {
		if v := sample(replicas[n].scrape(t), "switchboard_tool_calls_total", map[string]string{"tool": "mcp_echo_echo", "outcome": "ok"}); v > 0 {
			counted[n] = v
		}
	}
	t.Logf("round robin: 6 calls of one 2026-07-28 client answered by %v (HAProxy), counted by %v (replicas' metrics)", servedBy, counted)
	if len(servedBy) < 2 || len(counted) < 2 {
		t.Errorf("consecutive 2026-07-28 calls reached one replica only: %v (HAProxy), %v (metrics)", servedBy, counted)
	}

	// The load's clients: K of each era.
	const k, callsPerClient = 6, 150
	var clients []*loadClient
	perReplica := map[string]int{}
	for i := range k {
		c := connectRecorded(t, url, fmt.Sprintf("sealed-legacy-client-%d", i), "2025-11-25")
		if v := c.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("%s: protocol %s, want 2025-11-25", c.name, v)
		}
		prefix, token, ok := strings.Cut(c.id, ".")
		if !ok || replicas[prefix] == nil {
			t.Fatalf("%s: session ID %q does not start with a replica's name and a dot", c.name, c.id)
		}
		perReplica[prefix]++
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(token, "="))
		if err != nil {
			t.Errorf("%s: the sealed part of %q is not base64url: %v", c.name, c.id, err)
		}
		for _, plain := range []string{c.name, "2025-11-25"} {
			if strings.Contains(string(raw), plain) || strings.Contains(c.id, plain) {
				t.Errorf("session ID %q shows %q in the clear", c.id, plain)
			}
		}
		clients = append(clients, c)
	}
	for i := range k {
		c := connectRecorded(t, url, fmt.Sprintf("stateless-client-%d", i), "")
		if v := c.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("%s: protocol %s, want 2026-07-28", c.name, v)
		}
		clients = append(clients, c)
	}
	victimName := names[0]
	for _, n := range names {
		if perReplica[n] > perReplica[victimName] {
			victimName = n
		}
	}
	victim := replicas[victimName]
	var survivors []*sb
	for _, n := range names {
		if n != victimName {
			survivors = append(survivors, replicas[n])
		}
	}
	if n := resumed(t, victim, survivors[0], survivors[1]); n != 0 {
		t.Errorf("%d sessions resumed before any replica went away: HAProxy sent a request to a replica its ID does not name", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Legacy sessions of their own on the victim (two, connected until
	// HAProxy's round robin put them there) each have a call in progress
	// at the kill, its event stream open on the victim: its first progress
	// notification has come, its answer would take two minutes. An echo
	// is over too soon for its stream to be cut: HAProxy retries a request
	// a dead replica did not answer at all.
	type slowCall struct {
		c    *loadClient
		call loadCall
		done chan struct{}
	}
	var slowClients []*loadClient
	for i := 0; len(slowClients) < 2 && i < 12; i++ {
		c := connectRecorded(t, url, fmt.Sprintf("slow-legacy-client-%d", i), "2025-11-25")
		if c.replica != victimName {
			_ = c.cs.Close()
			continue
		}
		slowClients = append(slowClients, c)
	}
	if len(slowClients) == 0 {
		t.Fatalf("no legacy session of 12 landed on %s", victimName)
	}
	var slow []*slowCall
	for _, c := range slowClients {
		sc := &slowCall{c: c, done: make(chan struct{})}
		slow = append(slow, sc)
		go func() {
			defer close(sc.done)
			sc.call.start = time.Now()
			_, sc.call.err = c.cs.CallTool(ctx, &mcp.CallToolParams{
				Name:      "mcp_echo_progress",
				Arguments: map[string]any{"steps": 2, "delay_ms": 120_000},
				Meta:      mcp.Meta{"progressToken": c.name},
			})
			sc.call.end = time.Now()
		}()
		select {
		case <-c.progress:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no progress from the slow call", c.name)
		}
	}

	// The load, bounded in calls and in time. A third of the way through,
	// the victim is SIGKILLed (its PID alone; it has no children, the
	// upstream is HTTP). A call is in flight at the kill when it was sent
	// before the process was gone (reaped) and not answered before the
	// signal: a process takes milliseconds to die, and its listening
	// socket takes connections until it is closed. A call sent after the
	// process is gone is refused by it and retried on another replica by
	// HAProxy, so it must not fail.
	var finished atomic.Int64
	third := make(chan struct{})
	var thirdOnce sync.Once
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range callsPerClient {
				if ctx.Err() != nil {
					return
				}
				arg := fmt.Sprintf("%s says %d", c.name, i)
				callCtx, callCancel := context.WithTimeout(ctx, 15*time.Second)
				call := loadCall{start: time.Now()}
				call.err = c.echo(callCtx, arg)
				call.end = time.Now()
				callCancel()
				c.calls = append(c.calls, call)
				if finished.Add(1) >= int64(len(clients)*callsPerClient/3) {
					thirdOnce.Do(func() { close(third) })
				}
			}
		}()
	}
	select {
	case <-third:
	case <-ctx.Done():
		wg.Wait()
		t.Fatalf("a third of the calls did not finish within the deadline (%d of %d)", finished.Load(), len(clients)*callsPerClient)
	}
	atKill, killStart := finished.Load(), time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", victimName, err)
	}
	<-victim.done
	killEnd := time.Now()
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("the load did not finish within its deadline")
	}
	// The slow calls fail (their streams are gone, and no other replica
	// has them) without waiting for the deadline: the client's
	// reconnection with Last-Event-ID gets 404 from a survivor, which the
	// go-sdk takes for the end of its session. A new session works; the
	// old ID still resumes for a request that needs no stream of the dead
	// replica.
	for _, sc := range slow {
		<-sc.done
		took := sc.call.end.Sub(killStart).Round(time.Millisecond)
		switch {
		case sc.call.err == nil:
			t.Errorf("%s: the call in progress on %s at the kill succeeded", sc.c.name, victimName)
		case ctx.Err() != nil:
			t.Errorf("%s: the call in progress on %s at the kill was still waiting %s after it: %v", sc.c.name, victimName, took, sc.call.err)
		default:
			t.Logf("%s: the call in progress on %s at the kill failed %s after it: %v", sc.c.name, victimName, took, sc.call.err)
		}
		if !errors.Is(sc.call.err, mcp.ErrSessionMissing) {
			t.Errorf("%s: the call in progress at the kill failed with %v, want the go-sdk's ErrSessionMissing", sc.c.name, sc.call.err)
		}
		refused := false
		for _, h := range sc.c.rec.all() {
			if h.verb == http.MethodGet && h.lastEventID != "" {
				t.Logf("%s: GET with Last-Event-ID %s: %d from %q", sc.c.name, h.lastEventID, h.status, h.servedBy)
				refused = refused || (h.status == http.StatusNotFound && h.servedBy != victimName)
			}
		}
		if !refused {
			t.Errorf("%s: no reconnection with Last-Event-ID answered 404 by a survivor", sc.c.name)
		}
		again := connectRecorded(t, url, sc.c.name+"-again", "2025-11-25")
		callCtx, callCancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := again.echo(callCtx, sc.c.name+" after its slow call"); err != nil {
			t.Errorf("%s: a call in a new session after the slow call failed: %v", sc.c.name, err)
		}
		callCancel()
		if status, body := postWithSession(t, survivors[0].addr, sc.c.id); status != http.StatusOK {
			t.Errorf("%s: a ping naming the old session on a survivor: %d %s", sc.c.name, status, body)
		}
	}
	resumes := resumed(t, survivors...)
	t.Logf("SIGKILLed %s (holding %d of %d legacy sessions, %v) after %d calls; reaped in %s",
		victimName, perReplica[victimName], k, perReplica, atKill, killEnd.Sub(killStart).Round(time.Millisecond))

	inFlight := func(c loadCall) bool { return c.start.Before(killEnd) && c.end.After(killStart) }
	type tally struct{ calls, errors, inFlight, lost int }
	kinds := map[bool]*tally{false: {}, true: {}}
	for _, c := range clients {
		tl := kinds[c.legacy]
		reported, afterKill := 0, 0
		for _, call := range c.calls {
			tl.calls++
			fl := inFlight(call)
			if fl {
				tl.inFlight++
			}
			if call.start.After(killEnd) && call.err == nil {
				afterKill++
			}
			if call.err == nil {
				continue
			}
			tl.errors++
			if fl {
				tl.lost++
				continue
			}
			if reported++; reported <= 3 {
				t.Errorf("%s: a call not in flight at the kill (started %s after it) failed: %v", c.name, call.start.Sub(killStart).Round(time.Millisecond), call.err)
			}
		}
		if len(c.calls) != callsPerClient {
			t.Errorf("%s made %d calls of %d", c.name, len(c.calls), callsPerClient)
		}
		if !c.legacy {
			continue
		}
		if afterKill == 0 {
			t.Errorf("%s: no successful call after the kill", c.name)
		}
		if id := c.cs.ID(); id != c.id {
			t.Errorf("%s: session ID changed from %q to %q", c.name, c.id, id)
		}
		// Every request names the session; while its replica lives, HAProxy
		// sends every one to it.
		inits, otherSession, misrouted := 0, 0, map[string]int{}
		for _, h := range c.rec.all() {
			switch {
			case h.method == "initialize":
				inits++
			case h.session != c.id:
				otherSession++
			case h.status == http.StatusOK && h.servedBy != c.replica && (c.replica != victimName || h.headers.Before(killStart)):
				misrouted[h.servedBy]++
			}
		}
		if inits != 1 {
			t.Errorf("%s: %d initialize requests, want 1 (the session must survive the kill)", c.name, inits)
		}
		if otherSession > 0 {
			t.Errorf("%s: %d requests named another session than %q", c.name, otherSession, c.id)
		}
		if len(misrouted) > 0 {
			t.Errorf("%s: requests of session %q answered, while %s lived, by %v", c.name, c.id, c.replica, misrouted)
		}
	}
	for _, sc := range slow {
		tl := kinds[true]
		tl.calls++
		if inFlight(sc.call) {
			tl.inFlight++
		}
		if sc.call.err != nil {
			tl.errors++
			if inFlight(sc.call) {
				tl.lost++
			}
		}
	}
	for _, legacy := range []bool{false, true} {
		tl, kind := kinds[legacy], "2026-07-28"
		if legacy {
			kind = "2025-11-25"
		}
		t.Logf("%s clients: %d calls, %d errors, %d in flight at the kill, %d lost at the kill", kind, tl.calls, tl.errors, tl.inFlight, tl.lost)
		if tl.errors > tl.inFlight {
			t.Errorf("%s clients: %d errors, more than the %d calls in flight at the kill", kind, tl.errors, tl.inFlight)
		}
	}
	t.Logf("sessions resumed by the surviving replicas: %d (legacy sessions of %s: %d)", resumes, victimName, perReplica[victimName])
	// Each of the victim's load sessions is resumed by one survivor, or
	// by both: until HAProxy's check marks the victim down, a refused
	// request is redispatched by a hash that still counts the victim, and
	// may land on the survivor the hash does not pick afterwards. A slow
	// call's session may be resumed too, by its client's standalone stream
	// before the 404 ended it, and by the ping above.
	if n := perReplica[victimName]; resumes < n || resumes > 2*(n+len(slow)) {
		t.Errorf("the surviving replicas resumed %d sessions, want the %d of %s, each once or twice, and at most twice each of the %d slow calls' sessions", resumes, n, victimName, len(slow))
	}

	// IDs that are not the deployment's: a live ID with one character of
	// its sealed part changed (in the middle; and the last one's lowest
	// bit, which only changes the unused bits of the last character unless
	// the length is a multiple of 3 bytes: lenient base64 would read the
	// same bytes), an ID another key sealed (a switchboard of another
	// deployment that calls itself r1), and a made-up one. A live ID
	// posted to its own replica is the control.
	var live *loadClient
	for _, c := range clients {
		if c.legacy && c.replica != victimName {
			live = c
			break
		}
	}
	if live == nil {
		t.Fatalf("every legacy session was on %s", victimName)
	}
	if status, body := postWithSession(t, replicas[live.replica].addr, live.id); status != http.StatusOK {
		t.Errorf("a live session's ping on its own replica: %d %s", status, body)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	flip := func(i int) string {
		token := strings.TrimPrefix(live.id, live.replica+".")
		c := alphabet[strings.IndexByte(alphabet, token[i])^1]
		return live.replica + "." + token[:i] + string(c) + token[i+1:]
	}
	token := strings.TrimPrefix(live.id, live.replica+".")
	other := startReplica("r1", []string{"SB_SESSION_KEY=" + randomHex(t, 24), "SB_STATE_KEY=" + randomHex(t, 24)})
	foreign := other.client(t, nil).ID()
	if !strings.HasPrefix(foreign, "r1.") {
		t.Errorf("the other deployment's session ID %q does not start with r1.", foreign)
	}
	madeUp := "r1." + base64.RawURLEncoding.EncodeToString([]byte(randomHex(t, 40)))
	for _, id := range []struct{ what, id string }{
		{"with a character of the middle changed", flip(len(token) / 2)},
		{"with the last character changed", flip(len(token) - 1)},
		{"sealed under another key", foreign},
		{"made up", madeUp},
	} {
		for _, s := range survivors {
			if status, body := postWithSession(t, s.addr, id.id); status != http.StatusNotFound || !strings.Contains(body, "session not found") {
				t.Errorf("a session ID %s, on a surviving replica: %d %q, want 404 session not found", id.what, status, body)
			}
		}
	}
}
