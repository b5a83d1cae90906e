package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// caller makes one echo call of a scenario's tool and checks that the
// result carries its argument.
type caller interface {
	call(ctx context.Context, sc *scenario) error
	close()
}

// sdkCaller calls through a go-sdk client session.
type sdkCaller struct {
	cs    *mcp.ClientSession
	owned bool // closed with the caller (not a scenario's shared session)
}

func (c sdkCaller) call(ctx context.Context, sc *scenario) error { return call(ctx, c.cs, sc) }

func (c sdkCaller) close() {
	if c.owned {
		_ = c.cs.Close()
	}
}

// wireCaller calls with requests written by hand, as the go-sdk client
// writes them on the wire, and reads each answer as bytes: its own cost is
// a few microseconds and the same for both protocols, so what a
// comparison of the two shows is the server's. The go-sdk client's own
// cost differs by protocol: a 2026-07-28 call carries the client's info
// and capabilities in every request, which the client encodes each time.
type wireCaller struct {
	client  *http.Client
	url     string
	version string // 2025-11-25: a session; 2026-07-28: none
	session string // Mcp-Session-Id of a 2025-11-25 caller
	// bytes: a 2025-11-25 caller sends what a 2026-07-28 request carries
	// besides (the protocol's _meta, naming 2025-11-25, and the
	// Mcp-Method and Mcp-Name headers): what those bytes cost the session
	// path, the part of the 2026-07-28 path's cost the protocol fixes.
	bytes bool
	buf   bytes.Buffer
}

// The wire versions: the same the go-sdk client speaks by default and
// pinned.
const (
	wireModern = "2026-07-28"
	wireLegacy = protocolVersion
)

// wireMeta is the _meta the go-sdk client (v1.8.0) puts in every
// 2026-07-28 request, with this benchmark's client info.
const wireMeta = `{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"switchboard-bench","version":"1"},` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

// wireMetaLegacy is wireMeta naming 2025-11-25: a legacy request with
// the bytes of a 2026-07-28 one.
var wireMetaLegacy = strings.Replace(wireMeta, wireModern, wireLegacy, 1)

var wireIDs atomic.Int64

// dialWire opens a wire caller: a 2025-11-25 one initializes a session, as
// the go-sdk client does (initialize, then notifications/initialized).
func (e *env) dialWire(ctx context.Context, url, version string, withBytes bool) (*wireCaller, error) {
	c := &wireCaller{client: e.client, url: url, version: version, bytes: withBytes && version != wireModern}
	if version == wireModern {
		return c, nil
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"switchboard-bench","version":"1"},` +
		`"protocolVersion":"` + version + `","capabilities":{"roots":{"listChanged":true}}}}`
	h, body, err := c.post(ctx, init, nil)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if c.session = h.Get("Mcp-Session-Id"); c.session == "" || !bytes.Contains(body, []byte(`"protocolVersion":"`+version+`"`)) {
		return nil, fmt.Errorf("initialize: no session at %s: %.200s", version, body)
	}
	if _, _, err := c.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, nil); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return c, nil
}

func (c *wireCaller) call(ctx context.Context, sc *scenario) error {
	arg := "msg-" + strconv.FormatInt(argSeq.Add(1), 10)
	id := strconv.FormatInt(wireIDs.Add(1), 10)
	params := `"name":` + strconv.Quote(sc.tool) + `,"arguments":{` + strconv.Quote(sc.argKey) + `:"` + arg + `"}`
	var hdr map[string]string
	if c.version == wireModern || c.bytes {
		meta := wireMeta
		if c.bytes {
			meta = wireMetaLegacy
		}
		params = `"_meta":` + meta + `,` + params
		hdr = map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": sc.tool}
	}
	_, body, err := c.post(ctx, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{`+params+`}}`, hdr)
	switch {
	case err != nil:
		return err
	case !bytes.Contains(body, []byte(`"id":`+id+`,`)) && !bytes.Contains(body, []byte(`"id":`+id+`}`)):
		return fmt.Errorf("answer is not to request %s: %.200s", id, lastData(body))
	case bytes.Contains(body, []byte(`"isError":true`)) || bytes.Contains(body, []byte(`"error":{`)):
		return fmt.Errorf("tool error: %.200s", lastData(body))
	case !containsArg(body, arg):
		return fmt.Errorf("result does not contain %q: %.200s", arg, lastData(body))
	}
	return nil
}

// lastData is the data of the last event of b when b is an SSE stream
// (where an answer comes after a priming event), else b: what an error
// should quote.
func lastData(b []byte) []byte {
	i := bytes.LastIndex(b, []byte("\ndata: "))
	if i < 0 || !bytes.HasPrefix(b, []byte("id: ")) && !bytes.HasPrefix(b, []byte("event: ")) && !bytes.HasPrefix(b, []byte("data: ")) {
		return b
	}
	d := b[i+len("\ndata: "):]
	if j := bytes.IndexByte(d, '\n'); j >= 0 {
		d = d[:j]
	}
	return d
}

// containsArg reports whether arg occurs in b followed by a non-digit
// (msg-1 is not in msg-12).
func containsArg(b []byte, arg string) bool {
	for {
		i := bytes.Index(b, []byte(arg))
		if i < 0 {
			return false
		}
		b = b[i+len(arg):]
		if len(b) == 0 || b[0] < '0' || b[0] > '9' {
			return true
		}
	}
}

// post sends one JSON-RPC message with the headers the go-sdk client sends
// at c's version and returns the answer's headers and body.
func (c *wireCaller) post(ctx context.Context, msg string, extra map[string]string) (http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(msg))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.session != "" || c.version == wireModern {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(io.LimitReader(resp.Body, 1<<20)); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("HTTP %s: %.200s", resp.Status, c.buf.Bytes())
	}
	return resp.Header, c.buf.Bytes(), nil
}

// close ends a 2025-11-25 caller's session, as the go-sdk client does.
func (c *wireCaller) close() {
	if c.session == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	if resp, err := c.client.Do(req); err == nil {
		resp.Body.Close()
	}
}
