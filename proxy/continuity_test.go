package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// retarget sends every request to the host in to, with a bearer token.
type retarget struct {
	to    atomic.Pointer[string]
	token string
}

func (rt *retarget) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = *rt.to.Load(), ""
	r.Header.Set("Authorization", "Bearer "+rt.token)
	return http.DefaultTransport.RoundTrip(r)
}

// resumedCount is a proxy's sessionsResumed, from its /status.
func resumedCount(t *testing.T, tp *testProxy) int64 {
	t.Helper()
	resp, err := http.Get("http://" + tp.admin + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st StatusReport
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.SessionsResumed
}

// TestSessionResumesOnAnotherReplica: a legacy session opened on one
// replica goes on, without initializing again, on another that shares the
// sessionKey, and only there: not on a replica with another key, not with
// another token, not from an altered ID.
func TestSessionResumesOnAnotherReplica(t *testing.T) {
	const key, other = "k3y-of-this-deployment-0123456789abcdef", "k3y-of-another-deployment-0123456789abcdef"
	tokens := map[string]any{"auth": map[string]any{"tokens": []string{"token-zero-0123456789", "token-one-0123456789"}}}
	replica := func(name, key string) *testProxy {
		top := map[string]any{"sessionKey": key}
		for k, v := range tokens {
			top[k] = v
		}
		return startProxyWith(t, pipelineConfig(nil, nil, top), "http", func(o *Options) { o.Replica = name })
	}
	a, b, foreign := replica("ra", key), replica("rb", key), replica("rc", other)

	rt := &retarget{token: "token-zero-0123456789"}
	rt.to.Store(&a.addr)
	ct := &mcp.StreamableClientTransport{Endpoint: "http://" + a.addr + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "resume-test", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := cs.ID()
	if !strings.HasPrefix(id, "ra.") || strings.Contains(id, "resume-test") {
		t.Fatalf("session ID %q: want the replica's name in front, the rest sealed", id)
	}
	waitTool(t, cs, "mcp_echo_echo")

	rt.to.Store(&b.addr)
	waitTool(t, cs, "mcp_echo_echo") // b's upstream may still be starting
	res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "on another replica"})
	if err != nil || !strings.Contains(resultText(t, res), "on another replica") {
		t.Fatalf("call on replica rb: %v %+v", err, res)
	}
	if cs.ID() != id {
		t.Fatalf("the session ID changed from %q to %q", id, cs.ID())
	}
	if n := resumedCount(t, b); n != 1 {
		t.Fatalf("rb resumed %d sessions, want 1", n)
	}
	if n := resumedCount(t, a); n != 0 {
		t.Fatalf("ra resumed %d sessions, want 0 (it minted the one)", n)
	}

	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct {
		what, to, id, token string
		want                int
	}{
		{"a replica with another key", foreign.addr, id, "token-zero-0123456789", http.StatusNotFound},
		{"an altered ID", a.addr, id[:len(id)-2] + flip(id[len(id)-2]) + id[len(id)-1:], "token-zero-0123456789", http.StatusNotFound},
		{"the ID under another replica's name", foreign.addr, "rb" + id[2:], "token-zero-0123456789", http.StatusNotFound},
		{"another token", a.addr, id, "token-one-0123456789", http.StatusNotFound},
		{"another token, on a replica that does not hold it", foreign.addr, strings.Replace(id, "ra.", "rc.", 1), "token-one-0123456789", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+c.to+"/mcp", strings.NewReader(ping))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.what, resp.StatusCode, c.want)
		}
	}
	if n := resumedCount(t, foreign); n != 0 {
		t.Errorf("the replica with another key resumed %d sessions", n)
	}
}

// flip is another base64url character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestKeysAndReplicaRefused: a key shorter than 32 bytes and a replica
// name that is no DNS label stop the start, saying which.
func TestKeysAndReplicaRefused(t *testing.T) {
	for _, c := range []struct {
		top     map[string]any
		replica string
		want    string
	}{
		{map[string]any{"sessionKey": "short"}, "r1", "sessionKey: resolved to 5 bytes; at least 32"},
		{map[string]any{"requestStateKey": "short"}, "r1", "requestStateKey: resolved to 5 bytes; at least 32"},
		{nil, "Not_A_Label", `replica name "Not_A_Label"`},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "switchboard.json")
		if err := os.WriteFile(path, []byte(pipelineConfig(nil, nil, c.top)), 0o600); err != nil {
			t.Fatal(err)
		}
		o := Options{ConfigPath: path, Replica: c.replica, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
			Stderr: io.Discard, Getenv: func(string) string { return "" }}
		p, cfg, err := New(o)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = p.Serve(ctx, cfg)
			cancel()
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v / %q: %v, want a config error saying %q", c.top, c.replica, err, c.want)
		}
	}
}
