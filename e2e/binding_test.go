package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// What a session and a requestState are bound to: the value of the token
// that opened them (never its place in auth.tokens, which a reload moves),
// for as long as the session's ID lasts (sessionMaxAge), and the call a
// request names, read with exact key case.

// sendAs sends one request with token ("": none) naming session sid (""
// none) at addr's /mcp, as a client of version (mcpName: the Mcp-Name of a
// 2026-07-28 call), and returns the status and the body.
func sendAs(t *testing.T, addr, method, token, sid, version, mcpName, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	var msg struct{ Method string }
	if json.Unmarshal([]byte(body), &msg) == nil && version >= "2026-07-28" {
		req.Header.Set("Mcp-Method", msg.Method)
	}
	if mcpName != "" {
		req.Header.Set("Mcp-Name", mcpName)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s to %s: %v", method, addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// pingAs sends a legacy ping on session sid with token.
func pingAs(t *testing.T, addr, token, sid string) int {
	t.Helper()
	code, _ := sendAs(t, addr, http.MethodPost, token, sid, "2025-11-25", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	return code
}

// parkElicit starts a 2026-07-28 call of the fixture's elicit_rounds (one
// round) with token, which parks for input; it returns the key of its
// question and its requestState.
func parkElicit(t *testing.T, addr, token, tool string) (key, state string) {
	t.Helper()
	code, body := sendAs(t, addr, http.MethodPost, token, "", "2026-07-28", tool,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"rounds":1},`+elicitMeta+`}}`)
	var m struct {
		Result inputRound `json:"result"`
	}
	data, _ := strings.CutPrefix(strings.TrimSpace(body), "event: message\ndata: ")
	_ = json.Unmarshal([]byte(data), &m)
	if code != http.StatusOK || m.Result.ResultType != "input_required" || len(m.Result.InputRequests) != 1 {
		t.Fatalf("%s: %d %s, want input_required", tool, code, body)
	}
	for k := range m.Result.InputRequests {
		key = k
	}
	return key, m.Result.RequestState
}

// retryElicit answers a parked call's question with token; params are the
// call's own (name, arguments), before the answer and the state.
func retryElicit(t *testing.T, addr, token, mcpName, params, key, state string) (int, string) {
	t.Helper()
	return sendAs(t, addr, http.MethodPost, token, "", "2026-07-28", mcpName,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{`+params+
			`"inputResponses":{"`+key+`":{"action":"accept","content":{"answer":"yes"}}},"requestState":"`+state+`",`+elicitMeta+`}}`)
}

// TestSessionBoundToTokenValue: a reload removes token A, and token B
// takes its place in auth.tokens. B is not served on A's live session,
// nor does it continue A's parked call; A gets 401; B's own session, whose
// token moved in the list, goes on. After a restart with the same
// sessionKey and the tokens in another order, B cannot resume A's session
// from its ID, and A can.
func TestSessionBoundToTokenValue(t *testing.T) {
	t.Parallel()
	const tokA, tokB = "token-a-5f0c2d9e81b74a6c", "token-b-a93e71c4d0285f1e"
	env := []string{"TOK_A=" + tokA, "TOK_B=" + tokB, "SB_SESSION_KEY=" + randomHex(t, 24), "SB_STATE_KEY=" + randomHex(t, 24)}
	cfg := func(tokens ...string) map[string]any {
		return map[string]any{
			"sessionKey":      "secret://env/SB_SESSION_KEY",
			"requestStateKey": "secret://env/SB_STATE_KEY",
			"servers":         map[string]any{"f": fixtureServer("f")},
			"auth":            map[string]any{"tokens": tokens},
		}
	}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg("secret://env/TOK_A", "secret://env/TOK_B"), env, "--replica", "r1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := newRawHTTP(t, "http://"+s.addr+"/mcp", tokA)
	a.open(t, ctx, "mcp_f_elicit_rounds")
	b := newRawHTTP(t, "http://"+s.addr+"/mcp", tokB)
	b.open(t, ctx, "mcp_f_elicit_rounds")
	key, state := parkElicit(t, s.addr, tokA, "mcp_f_elicit_rounds")

	g := s.gen(t)
	rewrite(t, s.config, cfg("secret://env/TOK_B"))
	s.waitGen(t, g+1)
	if code := pingAs(t, s.addr, tokB, a.sid); code != http.StatusNotFound {
		t.Errorf("token B on token A's live session after a reload removed A: %d, want 404", code)
	}
	if code := pingAs(t, s.addr, tokA, a.sid); code != http.StatusUnauthorized {
		t.Errorf("token A after the reload removed it: %d, want 401", code)
	}
	if code := pingAs(t, s.addr, tokB, b.sid); code != http.StatusOK {
		t.Errorf("token B on its own session, its place in auth.tokens moved: %d, want 200", code)
	}
	params := `"name":"mcp_f_elicit_rounds","arguments":{"rounds":1},`
	if code, body := retryElicit(t, s.addr, tokB, "mcp_f_elicit_rounds", params, key, state); code != http.StatusBadRequest || !strings.Contains(body, "-32602") {
		t.Errorf("token B continuing token A's parked call: %d %s, want 400 and -32602", code, body)
	}

	// A restart with the same sessionKey; B is first in auth.tokens now,
	// where A was when A's session was opened.
	s.stop(10 * time.Second)
	dir2 := t.TempDir()
	s2 := startSwitchboardIn(t, dir2, dir2, cfg("secret://env/TOK_B", "secret://env/TOK_A"), env, "--replica", "r2")
	if code := pingAs(t, s2.addr, tokB, a.sid); code != http.StatusNotFound {
		t.Errorf("token B resuming token A's session after a restart: %d, want 404", code)
	}
	if code := pingAs(t, s2.addr, tokA, a.sid); code != http.StatusOK {
		t.Errorf("token A resuming its own session after a restart (its place in auth.tokens moved): %d, want 200", code)
	}
	if n := resumed(t, s2); n != 1 {
		t.Errorf("%d sessions resumed after the restart, want 1 (token A's, by A)", n)
	}
}

// TestSessionIDMaxAge: a session ID lasts sessionMaxAge from its issue.
// DELETE ends a session in the process that holds it (the ID is 404
// there at once); another process with the same sessionKey resumes it
// until the ID's max age, and not after. A live session past its max age
// is 404 too.
func TestSessionIDMaxAge(t *testing.T) {
	t.Parallel()
	const maxAge = 8 * time.Second
	env := []string{"SB_SESSION_KEY=" + randomHex(t, 24)}
	cfg := map[string]any{
		"sessionKey":    "secret://env/SB_SESSION_KEY",
		"sessionMaxAge": maxAge.Milliseconds(),
		"servers":       map[string]any{"f": fixtureServer("f")},
	}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, env, "--replica", "r1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Issue times are whole seconds: taken a second before.
	issued := time.Now().Add(-time.Second)
	deleted := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
	deleted.open(t, ctx, "mcp_f_echo")
	live := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
	live.open(t, ctx, "mcp_f_echo")
	if code, body := sendAs(t, s.addr, http.MethodDelete, "", deleted.sid, "2025-11-25", "", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code := pingAs(t, s.addr, "", deleted.sid); code != http.StatusNotFound {
		t.Errorf("a DELETEd session in the process that ended it: %d, want 404", code)
	}

	// Another process with the same key, within the max age: the DELETE
	// did not reach it (documented), and the ID resumes there.
	dir2 := t.TempDir()
	s2 := startSwitchboardIn(t, dir2, dir2, cfg, env, "--replica", "r2")
	if time.Since(issued) > maxAge-time.Second {
		t.Fatalf("the second process took %s to start: the max age is past before the check", time.Since(issued))
	}
	if code := pingAs(t, s2.addr, "", deleted.sid); code != http.StatusOK {
		t.Errorf("a DELETEd ID on another replica within its max age: %d, want 200 (resumed)", code)
	}
	if code := pingAs(t, s.addr, "", live.sid); code != http.StatusOK {
		t.Errorf("a live session within its max age: %d, want 200", code)
	}

	time.Sleep(time.Until(issued.Add(maxAge + 2*time.Second)))
	for _, c := range []struct{ what, addr, sid string }{
		{"the live session past its max age", s.addr, live.sid},
		{"the resumed session past its max age", s2.addr, deleted.sid},
		{"an ID past its max age, on a replica that does not hold it", s2.addr, live.sid},
	} {
		if code := pingAs(t, c.addr, "", c.sid); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", c.what, code)
		}
	}
	// A client that initializes anew goes on.
	fresh := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
	fresh.open(t, ctx, "mcp_f_echo")
	if code := pingAs(t, s.addr, "", fresh.sid); code != http.StatusOK {
		t.Errorf("a new session: %d, want 200", code)
	}
}

// TestStrictCallName: a tools/call's params are read with exact key case,
// by every reader: {"name":"mcp_f_echo","NAME":"mcp_f_elicit_rounds"}
// is a call of echo, which neither continues a parked elicit_rounds call
// nor runs another tool than the one its name (and Mcp-Name) says.
func TestStrictCallName(t *testing.T) {
	t.Parallel()
	s := startSwitchboard(t, map[string]any{"servers": map[string]any{"f": fixtureServer("f")}})
	testutil.Eventually(t, 20*time.Second, "tools listed", func() bool {
		_, body := sendAs(t, s.addr, http.MethodPost, "", "", "2026-07-28", "",
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+elicitMeta+`}}`)
		return strings.Contains(body, "mcp_f_elicit_rounds")
	})
	key, state := parkElicit(t, s.addr, "", "mcp_f_elicit_rounds")
	mixed := `"name":"mcp_f_echo","NAME":"mcp_f_elicit_rounds","arguments":{"rounds":1,"text":"echoed"},`
	code, body := retryElicit(t, s.addr, "", "mcp_f_echo", mixed, key, state)
	if code != http.StatusBadRequest || !strings.Contains(body, "-32602") {
		t.Errorf("a call of echo with NAME elicit_rounds and elicit_rounds' state: %d %s, want 400 and -32602", code, body)
	}
	// Without a state: the call that runs is echo's.
	code, body = sendAs(t, s.addr, http.MethodPost, "", "", "2026-07-28", "mcp_f_echo",
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_f_echo","NAME":"mcp_f_add","arguments":{"text":"echoed"},`+elicitMeta+`}}`)
	if code != http.StatusOK || !strings.Contains(body, "echoed") || strings.Contains(body, `"isError":true`) {
		t.Errorf("a call of echo with NAME add: %d %s, want echo's result", code, body)
	}
	// The parked call is still there for its own retry.
	if code, body := retryElicit(t, s.addr, "", "mcp_f_elicit_rounds", `"name":"mcp_f_elicit_rounds","arguments":{"rounds":1},`, key, state); code != http.StatusOK ||
		!strings.Contains(body, `"resultType":"complete"`) || !strings.Contains(body, "yes") {
		t.Errorf("the parked call's own retry: %d %s, want its result", code, body)
	}
}
