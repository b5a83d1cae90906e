package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The hostile-location suites put payloads in every field of every message
// kind an upstream sends, through the scripted malicious server, and look
// at every string a raw client receives, object keys included.

// A location is one place a payload can travel: the script answers that
// put it there and the request (if any) that makes it travel.
type location struct {
	name string
	// answers are script answers for payload i (p is the payload).
	answers func(i int, p string) []map[string]any
	// request is the client's request for payload i; nil for locations
	// that travel in a list (listed once for all payloads).
	request func(i int) (method string, params any)
	// before is how many messages must come before the response; fails
	// says the response is a JSON-RPC error (else it must not be one).
	before int
	fails  bool
}

// delivered reports why msgs are not what the location's request must
// bring (so a suite cannot pass on requests that never reached the
// payload), or "".
func (l location) delivered(msgs []json.RawMessage) string {
	var last rpcMsg
	if len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &last) != nil || !last.isResponse() {
		return "no response"
	}
	if got := len(msgs) - 1; got < l.before {
		return fmt.Sprintf("%d messages before the response, want %d", got, l.before)
	}
	if (last.Error != nil) != l.fails {
		return fmt.Sprintf("response %.200s", msgs[len(msgs)-1])
	}
	return ""
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func call(name string) func(i int) (string, any) {
	return func(i int) (string, any) {
		return "tools/call", obj("name", fmt.Sprintf("mcp_h_%s%03d", name, i), "arguments", obj(), "_meta", obj("progressToken", fmt.Sprintf("tok-%s-%d", name, i)))
	}
}

func tool(name string, i int, before []any, result map[string]any, rpcErr map[string]any) []map[string]any {
	a := obj("method", "tools/call", "name", fmt.Sprintf("%s%03d", name, i), "before", before)
	if rpcErr != nil {
		a["error"] = rpcErr
	} else {
		a["result"] = result
	}
	return []map[string]any{a}
}

func listedTool(name string, def map[string]any) map[string]any {
	def["name"] = name
	if def["inputSchema"] == nil {
		def["inputSchema"] = obj("type", "object")
	}
	return def
}

// escapeEvery percent-encodes every byte of s, with lowercase hex: an
// escaping no list of a secret's encoded forms holds.
func escapeEvery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02x", s[i])
	}
	return b.String()
}

// hostileLocations are every place a payload can reach a client by.
func hostileLocations() []location {
	half := func(p string) (string, string) {
		r := []rune(p)
		return string(r[:len(r)/2]), string(r[len(r)/2:])
	}
	notify := func(method string, params map[string]any) any {
		return obj("jsonrpc", "2.0", "method", method, "params", params)
	}
	ask := func(id, method string, params map[string]any) any {
		return obj("jsonrpc", "2.0", "id", id, "method", method, "params", params)
	}
	return []location{
		{name: "tools/list: every text of a definition", answers: func(i int, p string) []map[string]any {
			schema := obj("type", "object", "title", p, "description", p, "properties", obj(
				"q", obj("type", "string", "title", p, "description", p, "enum", []any{p}, "default", p, "examples", []any{p}),
				"o", obj("type", "object", "description", p, "properties", obj("x", obj("type", "string", "description", p)))))
			return []map[string]any{obj("method", "_def", "result", listedTool(fmt.Sprintf("d%03d", i), obj(
				"title", p, "description", p, "inputSchema", schema,
				"outputSchema", obj("type", "object", "description", p, "properties", obj("r", obj("type", "string", "description", p))),
				"annotations", obj("title", p), "_meta", obj("note", p))))}
		}},
		{name: "tools/call: text blocks, whole and split", request: call("c"), answers: func(i int, p string) []map[string]any {
			a, b := half(p)
			return tool("c", i, nil, obj("content", []any{text(p), text(a), text(b)}), nil)
		}},
		{name: "tools/call: embedded resource and resource link", request: call("r"), answers: func(i int, p string) []map[string]any {
			return tool("r", i, nil, obj("content", []any{
				obj("type", "resource", "resource", obj("uri", "file:///r.txt", "mimeType", "text/plain", "text", p)),
				obj("type", "resource_link", "uri", "file:///l.txt", "name", p, "title", p, "description", p),
			}), nil)
		}},
		// URIs: the payload as the whole URI and inside one (path and
		// query), as it is and with every byte percent-encoded, in every
		// field an upstream names a resource or an icon by.
		{name: "tools/call: embedded resource uri", request: call("eu"), answers: func(i int, p string) []map[string]any {
			return tool("eu", i, nil, obj("content", []any{
				obj("type", "resource", "resource", obj("uri", p, "mimeType", "text/plain", "text", "ok")),
				obj("type", "resource", "resource", obj("uri", "file:///e/"+escapeEvery(p), "mimeType", "text/plain", "text", "ok")),
				obj("type", "resource", "resource", obj("uri", "file:///r/"+p+"?q="+p, "mimeType", "text/plain", "text", "ok")),
				obj("type", "resource", "resource", obj("uri", "file:///b/"+p, "mimeType", "application/octet-stream", "blob", "AAAA")),
			}), nil)
		}},
		{name: "tools/call: resource_link uri and icons", request: call("lu"), answers: func(i int, p string) []map[string]any {
			return tool("lu", i, nil, obj("content", []any{
				obj("type", "resource_link", "uri", p, "name", "l"),
				obj("type", "resource_link", "uri", "https://h.example/e?q="+escapeEvery(p), "name", "l"),
				obj("type", "resource_link", "uri", "https://h.example/"+p+"?q="+p, "name", "l",
					"icons", []any{obj("src", "https://h.example/i/"+p), obj("src", p)}),
			}), nil)
		}},
		{name: "tools/call: _meta URIs", request: call("mu"), answers: func(i int, p string) []map[string]any {
			return tool("mu", i, nil, obj("content", []any{text("ok")},
				"_meta", obj("ui", obj("resourceUri", "ui://h/"+p), "uri", p, "escaped", "ui://h/"+escapeEvery(p))), nil)
		}},
		{name: "tools/list: _meta URIs and icons", answers: func(i int, p string) []map[string]any {
			return []map[string]any{obj("method", "_def", "result", listedTool(fmt.Sprintf("du%03d", i), obj(
				"_meta", obj("ui", obj("resourceUri", "ui://h/"+p)),
				"icons", []any{obj("src", "https://h.example/i/"+p), obj("src", p)})))}
		}},
		{name: "resources/list uri and resources/read contents uri", request: func(i int) (string, any) {
			return "resources/read", obj("uri", fmt.Sprintf("res://h/u%03d", i))
		}, answers: func(i int, p string) []map[string]any {
			uri := fmt.Sprintf("res://h/u%03d", i)
			return []map[string]any{
				obj("method", "_resource", "result", obj("uri", uri, "name", "u", "mimeType", "text/plain",
					"icons", []any{obj("src", "https://h.example/i/"+p)})),
				obj("method", "_resource", "result", obj("uri", "res://h/p/"+p, "name", "p")),
				obj("method", "_resource", "result", obj("uri", p, "name", "p")),
				obj("method", "_resource", "result", obj("uri", "res://h/e/"+escapeEvery(p), "name", "e")),
				obj("method", "resources/read", "name", uri, "result", obj("contents", []any{
					obj("uri", p, "mimeType", "text/plain", "text", "ok"),
					obj("uri", uri+"/e/"+escapeEvery(p), "mimeType", "text/plain", "text", "ok"),
					obj("uri", uri+"/"+p+"?q="+p, "mimeType", "text/plain", "text", "ok"),
					obj("uri", uri+"/b/"+p, "mimeType", "application/octet-stream", "blob", "AAAA"),
				})),
			}
		}},
		{name: "resources/templates/list uriTemplate", answers: func(i int, p string) []map[string]any {
			return []map[string]any{
				obj("method", "_template", "result", obj("uriTemplate", fmt.Sprintf("tpl://h/u%03d/", i)+p+"/{x}", "name", "t")),
				obj("method", "_template", "result", obj("uriTemplate", p, "name", "t")),
				obj("method", "_template", "result", obj("uriTemplate", fmt.Sprintf("tpl://h/e%03d/", i)+escapeEvery(p)+"/{x}", "name", "t")),
			}
		}},
		{name: "prompts/get: embedded resource and resource_link uris", request: func(i int) (string, any) {
			return "prompts/get", obj("name", fmt.Sprintf("mcp_h_qu%03d", i))
		}, answers: func(i int, p string) []map[string]any {
			name := fmt.Sprintf("qu%03d", i)
			return []map[string]any{
				obj("method", "_prompt", "result", obj("name", name)),
				obj("method", "prompts/get", "name", name, "result", obj("messages", []any{
					obj("role", "user", "content", obj("type", "resource", "resource", obj("uri", "file:///r/"+p, "mimeType", "text/plain", "text", "ok"))),
					obj("role", "user", "content", obj("type", "resource_link", "uri", p, "name", "l")),
					obj("role", "user", "content", obj("type", "resource_link", "uri", "file:///e/"+escapeEvery(p), "name", "l")),
				})),
			}
		}},
		{name: "tools/call: structuredContent keys and values, _meta", request: call("s"), answers: func(i int, p string) []map[string]any {
			return tool("s", i, nil, obj("content", []any{text("ok")},
				"structuredContent", obj("v", p, p, "key", "n", obj("deep", []any{p, obj("k", p)})),
				"_meta", obj("m", p)), nil)
		}},
		{name: "tools/call: isError result", request: call("x"), answers: func(i int, p string) []map[string]any {
			return tool("x", i, nil, obj("isError", true, "content", []any{text(p)}), nil)
		}},
		{name: "tools/call: JSON-RPC error message and data", request: call("e"), answers: func(i int, p string) []map[string]any {
			return tool("e", i, nil, nil, obj("code", -32000, "message", p, "data", obj("detail", p, p, 1)))
		}},
		{name: "tools/call: log notifications (data, object data, logger) and progress message", request: call("n"), before: 3, answers: func(i int, p string) []map[string]any {
			return tool("n", i, []any{
				notify("notifications/message", obj("level", "error", "logger", p, "data", p)),
				notify("notifications/message", obj("level", "error", "data", obj("k", p, p, "v"))),
				notify("notifications/progress", obj("progressToken", "$progressToken", "progress", 1, "message", p)),
			}, obj("content", []any{text("ok")}), nil)
		}},
		{name: "tools/call: sampling request (messages, system prompt)", request: call("m"), before: 1, answers: func(i int, p string) []map[string]any {
			return tool("m", i, []any{ask("s1", "sampling/createMessage", obj(
				"messages", []any{obj("role", "user", "content", text(p))}, "systemPrompt", p, "maxTokens", 10))},
				obj("content", []any{text("ok")}), nil)
		}},
		{name: "tools/call: elicitation request (message, schema)", request: call("l"), before: 1, answers: func(i int, p string) []map[string]any {
			return tool("l", i, []any{ask("e1", "elicitation/create", obj(
				"message", p, "requestedSchema", obj("type", "object", "properties", obj("a", obj("type", "string", "title", p, "description", p)))))},
				obj("content", []any{text("ok")}), nil)
		}},
		{name: "prompts/list and prompts/get", request: func(i int) (string, any) {
			return "prompts/get", obj("name", fmt.Sprintf("mcp_h_q%03d", i), "arguments", obj("a", "x"))
		}, answers: func(i int, p string) []map[string]any {
			name := fmt.Sprintf("q%03d", i)
			return []map[string]any{
				obj("method", "_prompt", "result", obj("name", name, "title", p, "description", p, "arguments", []any{obj("name", "a", "title", p, "description", p)})),
				obj("method", "prompts/get", "name", name, "result", obj("description", p, "messages", []any{obj("role", "user", "content", text(p))})),
			}
		}},
		{name: "prompts/get: JSON-RPC error", fails: true, request: func(i int) (string, any) {
			return "prompts/get", obj("name", fmt.Sprintf("mcp_h_qe%03d", i))
		}, answers: func(i int, p string) []map[string]any {
			name := fmt.Sprintf("qe%03d", i)
			return []map[string]any{
				obj("method", "_prompt", "result", obj("name", name)),
				obj("method", "prompts/get", "name", name, "error", obj("code", -32000, "message", p, "data", p)),
			}
		}},
		{name: "resources/list and resources/read", request: func(i int) (string, any) {
			return "resources/read", obj("uri", fmt.Sprintf("res://h/%03d", i))
		}, answers: func(i int, p string) []map[string]any {
			uri := fmt.Sprintf("res://h/%03d", i)
			return []map[string]any{
				obj("method", "_resource", "result", obj("uri", uri, "name", p, "title", p, "description", p, "mimeType", "text/plain")),
				obj("method", "resources/read", "name", uri, "result", obj("contents", []any{obj("uri", uri, "mimeType", "text/plain", "text", p)})),
			}
		}},
		{name: "resources/read: JSON-RPC error", fails: true, request: func(i int) (string, any) {
			return "resources/read", obj("uri", fmt.Sprintf("res://e/%03d", i))
		}, answers: func(i int, p string) []map[string]any {
			uri := fmt.Sprintf("res://e/%03d", i)
			return []map[string]any{
				obj("method", "_resource", "result", obj("uri", uri, "name", "e")),
				obj("method", "resources/read", "name", uri, "error", obj("code", -32000, "message", p, "data", obj("k", p))),
			}
		}},
		{name: "resources/templates/list", answers: func(i int, p string) []map[string]any {
			return []map[string]any{obj("method", "_template", "result", obj("uriTemplate", fmt.Sprintf("tpl://h/%03d/{x}", i), "name", p, "title", p, "description", p))}
		}},
		{name: "completion/complete: values and error", request: func(i int) (string, any) {
			return "completion/complete", obj("ref", obj("type", "ref/prompt", "name", fmt.Sprintf("mcp_h_q%03d", i)), "argument", obj("name", "a", "value", "x"))
		}, answers: func(i int, p string) []map[string]any {
			name := fmt.Sprintf("q%03d", i)
			return []map[string]any{obj("method", "completion/complete", "name", name, "result", obj("completion", obj("values", []any{p, "plain"})))}
		}},
		{name: "completion/complete: JSON-RPC error", fails: true, request: func(i int) (string, any) {
			return "completion/complete", obj("ref", obj("type", "ref/resource", "uri", fmt.Sprintf("tpl://h/%03d/{x}", i)), "argument", obj("name", "x", "value", "x"))
		}, answers: func(i int, p string) []map[string]any {
			return []map[string]any{obj("method", "completion/complete", "name", fmt.Sprintf("tpl://h/%03d/{x}", i), "error", obj("code", -32000, "message", p, "data", p))}
		}},
	}
}

// hostileScript builds the server's script for payloads at locs: list
// entries (pseudo-methods _def, _prompt, _resource, _template) are gathered
// into the list answers.
func hostileScript(locs []location, payloads []string) map[string]any {
	var answers []map[string]any
	lists := map[string][]any{}
	for _, l := range locs {
		for i, p := range payloads {
			for _, a := range l.answers(i, p) {
				if m := a["method"].(string); strings.HasPrefix(m, "_") {
					lists[m] = append(lists[m], a["result"])
					continue
				}
				answers = append(answers, a)
			}
		}
	}
	// Every tool that answers a call is listed too.
	for _, a := range answers {
		if a["method"] == "tools/call" {
			lists["_def"] = append(lists["_def"], listedTool(a["name"].(string), obj()))
		}
	}
	answers = append(answers,
		obj("method", "tools/list", "result", obj("tools", lists["_def"])),
		obj("method", "prompts/list", "result", obj("prompts", lists["_prompt"])),
		obj("method", "resources/list", "result", obj("resources", lists["_resource"])),
		obj("method", "resources/templates/list", "result", obj("resourceTemplates", lists["_template"])),
	)
	return obj("answers", answers)
}

// received is every message a request brought to the client, raw.
type received struct {
	where string
	msgs  []json.RawMessage
}

// rawSession is a raw streamable-HTTP client that keeps every message as
// it arrived and answers sampling and elicitation.
type rawSession struct {
	*rawHTTP
}

func (c rawSession) exchange(ctx context.Context, method string, params any) ([]json.RawMessage, error) {
	id := c.ids.Add(1)
	resp, err := c.hc.Do(c.newPost(ctx, request(id, method, params)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, fmt.Errorf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		b, err := io.ReadAll(resp.Body)
		return []json.RawMessage{b}, err
	}
	var msgs []json.RawMessage
	var bad error
	err = sseEvents(bufio.NewReader(resp.Body), func(_, data string) bool {
		msgs = append(msgs, json.RawMessage(data))
		var m rpcMsg
		if json.Unmarshal([]byte(data), &m) != nil {
			bad = fmt.Errorf("%s: event %q", method, data)
			return false
		}
		if m.isRequest() {
			if err := c.send(ctx, answerServer(m)); err != nil {
				bad = err
				return false
			}
		}
		return !m.answers(id)
	})
	if bad != nil {
		return msgs, bad
	}
	if err != nil && err != io.EOF {
		return msgs, err
	}
	return msgs, nil
}

// answerServer answers a server's request as a client with sampling and
// elicitation would.
func answerServer(m rpcMsg) []byte {
	var result any = obj()
	switch m.Method {
	case "sampling/createMessage":
		result = obj("role", "assistant", "content", text("fine"), "model", "m")
	case "elicitation/create":
		result = obj("action", "decline")
	}
	b, _ := json.Marshal(obj("jsonrpc", "2.0", "id", m.ID, "result", result))
	return b
}

// driveLocations starts switchboard with the hostile server scripted for
// payloads at every location, asks for each, and passes what the client
// received to check. It returns how many (payload, location) pairs check
// reported, by location.
func driveLocations(t *testing.T, cfgExtra map[string]any, env []string, payloads []string, check func(payload int, r received) []string) (map[string]int, *sb) {
	t.Helper()
	return driveLocationsWith(t, cfgExtra, env, nil, payloads, check)
}

// driveLocationsWith is driveLocations with the hostile server's env.
func driveLocationsWith(t *testing.T, cfgExtra map[string]any, env []string, serverEnv map[string]any, payloads []string, check func(payload int, r received) []string) (map[string]int, *sb) {
	t.Helper()
	locs := hostileLocations()
	srv := hostileServer(t, hostileScript(locs, payloads))
	if serverEnv != nil {
		srv["env"] = serverEnv
	}
	cfg := map[string]any{"mcpServers": map[string]any{"h": srv}}
	for k, v := range cfgExtra {
		cfg[k] = v
	}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, env)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := rawSession{newRawHTTP(t, "http://"+s.addr+"/mcp", "")}
	openWithCapabilities(t, ctx, c.rawHTTP, "mcp_h_c000")

	failed := map[string]int{}
	report := func(where string, payload int, r received) {
		if bad := check(payload, r); len(bad) > 0 {
			failed[where]++
			if failed[where] <= 2 {
				t.Errorf("%s, payload %d: %s", where, payload, strings.Join(bad, "; "))
			}
		}
	}
	// Lists carry every payload at once: a finding there counts once per
	// list, attributed to payload -1.
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		var all []json.RawMessage
		for cursor := ""; ; {
			params := obj()
			if cursor != "" {
				params["cursor"] = cursor
			}
			msgs, err := c.exchange(ctx, m, params)
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			all = append(all, msgs...)
			var page struct {
				Result struct {
					NextCursor string `json:"nextCursor"`
				} `json:"result"`
			}
			_ = json.Unmarshal(msgs[len(msgs)-1], &page)
			if cursor = page.Result.NextCursor; cursor == "" {
				break
			}
		}
		var joined []byte
		for _, m := range all {
			joined = append(joined, m...)
		}
		if n := bytes.Count(joined, []byte(`"mcp_h_`)) + bytes.Count(joined, []byte(`"res://h/`)) + bytes.Count(joined, []byte(`"tpl://h/`)); n < len(payloads) {
			t.Fatalf("%s: %d of the hostile server's entries listed, want at least %d", m, n, len(payloads))
		}
		report(m, -1, received{m, all})
	}
	// The built-in prompt reads every resource, failures included, into
	// one message.
	msgs, err := c.exchange(ctx, "prompts/get", obj("name", "switchboard_resource_context"))
	if err != nil {
		t.Fatalf("switchboard_resource_context: %v", err)
	}
	if n := bytes.Count(msgs[len(msgs)-1], []byte(`could not be read`)); n < len(payloads) {
		t.Fatalf("switchboard_resource_context: %d failed reads in it, want %d: %.300s", n, len(payloads), msgs[len(msgs)-1])
	}
	report("prompts/get switchboard_resource_context", -1, received{"switchboard_resource_context", msgs})
	for _, l := range locs {
		if l.request == nil {
			continue
		}
		for i := range payloads {
			method, params := l.request(i)
			msgs, err := c.exchange(ctx, method, params)
			if err != nil {
				t.Fatalf("%s, payload %d: %v", l.name, i, err)
			}
			if why := l.delivered(msgs); why != "" {
				t.Fatalf("%s, payload %d: not delivered: %s", l.name, i, why)
			}
			report(l.name, i, received{l.name, msgs})
		}
	}
	return failed, s
}

// openWithCapabilities initializes c as a client with sampling,
// elicitation and roots, sets the log level to debug and waits for tool.
func openWithCapabilities(t *testing.T, ctx context.Context, c *rawHTTP, tool string) {
	t.Helper()
	params := initializeParams()
	params["capabilities"] = obj("sampling", obj(), "elicitation", obj(), "roots", obj())
	id := c.ids.Add(1)
	msgs, resp, err := c.exchange(ctx, id, request(id, "initialize", params))
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := msgs[len(msgs)-1].failure(); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if err := c.send(ctx, notification("notifications/initialized", nil)); err != nil {
		t.Fatal(err)
	}
	c.mustCall(t, ctx, "logging/setLevel", obj("level", "debug"))
	testutil.Eventually(t, 30*time.Second, tool+" listed", func() bool {
		_, res, err := c.call(ctx, "tools/list", obj())
		return err == nil && bytes.Contains(res.Result, []byte(`"`+tool+`"`))
	})
}

// eachString calls f for every string in a JSON value, object keys
// included, with its path.
func eachString(v any, path string, f func(path, s string)) {
	switch x := v.(type) {
	case string:
		f(path, x)
	case []any:
		for i, e := range x {
			eachString(e, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f(path+".<key>", k)
			eachString(x[k], path+"."+k, f)
		}
	}
}

// logByLocation prints how many pairs failed at each location.
func logByLocation(t *testing.T, failed map[string]int, what string) {
	t.Helper()
	names := make([]string, 0, len(failed))
	for k := range failed {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%-75s %d %s", n, failed[n], what)
	}
}
