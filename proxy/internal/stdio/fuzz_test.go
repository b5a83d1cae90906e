package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/stdio"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// lockedBuffer is an io.Writer safe for the session's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// fuzzMethods echo what the client sent back to it, as results, as
// notifications and as log messages, so that whatever the input holds
// reaches the output.
var fuzzMethods = session.Methods{
	"echo": func(_ context.Context, r *session.Request) (any, error) { return r.Params, nil },
	"notify": func(ctx context.Context, r *session.Request) (any, error) {
		if err := r.Notify(ctx, "notifications/progress", r.Params); err != nil {
			return nil, err
		}
		return nil, r.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: r.Params})
	},
	"fail": func(context.Context, *session.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: 7, Message: "failed"}
	},
}

const endPing = `{"jsonrpc":"2.0","id":"fuzz-end","method":"ping"}`

// fuzzVersions are the versions a fuzzed session is initialized at ("":
// not initialized); a byte picks one, which keeps inputs short.
var fuzzVersions = []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2099-01-01"}

// FuzzServeLine: whatever a client writes, Serve does not panic or stop
// serving (a ping after it is answered), and every line it writes is a
// JSON-RPC message, or a batch of them, in valid JSON.
func FuzzServeLine(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2,{"b":null}]}}`,
		`{"jsonrpc":"2.0","id":"x","method":"echo","params":{"s":"\u2028\r\"\\"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"echo\",\"params\":{\"\xfe\":\"\x01\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":{\"a\":\r1}}",
		`{"jsonrpc":"2.0","id":3,"method":"notify","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"fail"}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":"fuzz-end","method":"echo"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"fuzz-end"}}`,
		`{"jsonrpc":"2.0","id":"sb-1","result":{}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
		`[]`, `{}`, `[[[[`, `"str"`, `null`, "\x00", "",
	} {
		for _, v := range []byte{0, 2, 4} {
			f.Add(v, []byte(seed))
		}
	}
	// Fuzzing, the engine starts goroutines of its own in this process.
	if fl := flag.Lookup("test.fuzz"); fl == nil || fl.Value.String() == "" {
		checkGoroutines(f)
	}
	f.Fuzz(func(t *testing.T, v byte, line []byte) {
		var in bytes.Buffer
		if version := fuzzVersions[int(v)%len(fuzzVersions)]; version != "" {
			in.WriteString(initLine("fuzz-init", version) + "\n")
		}
		in.Write(line)
		in.WriteString("\n" + endPing + "\n")
		ss := session.New(session.Options{Methods: fuzzMethods}, nil)
		var out lockedBuffer
		err := stdio.Serve(context.Background(), ss, &in, &out, nil)
		ss.Close() // waits until every answer was written
		if err != nil {
			t.Fatalf("Serve = %v, want nil at EOF", err)
		}
		ended := false
		for l := range bytes.Lines(out.buf.Bytes()) {
			if err := checkLine(l, &ended); err != nil {
				t.Fatalf("output line %q: %v\ninput %q", l, err, in.Bytes())
			}
		}
		if !ended {
			t.Fatalf("the ping after the line was not answered; output:\n%s", out.buf.Bytes())
		}
	})
}

// checkLine checks one output line, and sets ended once it holds the
// answer to endPing.
func checkLine(l []byte, ended *bool) error {
	l = bytes.TrimSuffix(l, []byte("\n"))
	if bytes.ContainsAny(l, "\r\n") {
		return errors.New("a line break inside the message")
	}
	if !json.Valid(l) {
		return errors.New("not valid JSON")
	}
	var batch []json.RawMessage
	if len(l) > 0 && l[0] == '[' {
		if err := json.Unmarshal(l, &batch); err != nil {
			return err
		}
		if len(batch) == 0 {
			return errors.New("empty batch")
		}
	} else {
		batch = []json.RawMessage{l}
	}
	for _, raw := range batch {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("not an object: %w", err)
		}
		if string(m["jsonrpc"]) != `"2.0"` {
			return fmt.Errorf("jsonrpc %s", m["jsonrpc"])
		}
		kinds := 0
		for _, k := range []string{"method", "result", "error"} {
			if _, ok := m[k]; ok {
				kinds++
			}
		}
		if kinds != 1 {
			return errors.New("want exactly one of method, result and error")
		}
		if _, ok := m["method"]; !ok {
			if _, ok := m["id"]; !ok {
				return errors.New("an answer without an id")
			}
		}
		if string(m["id"]) == `"fuzz-end"` && m["method"] == nil {
			*ended = true
		}
	}
	return nil
}
