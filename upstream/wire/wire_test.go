package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var lineSamples = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"why":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"jsonrpc":"2.0","id":2,"method":null}`,
	`{"jsonrpc":"2.0","id":3,"method":""}`,
	`{"jsonrpc":"2.0","id":4.0,"result":{}}`,
	`{"jsonrpc":"2.0","ID":5,"result":{}}`,
	`{"jsonrpc":"2.0","id":6,"Method":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":8,"result":{"s":"é\u00e9\n"}}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`server ready`,
	`{"level":"info","msg":"hello"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}`,
}

// TestDecodeLineAgreesWithSDK: every single message decodes exactly as the
// SDK's own decoder decodes it, and is refused where the SDK refuses it.
func TestDecodeLineAgreesWithSDK(t *testing.T) {
	for _, line := range lineSamples {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, err := decodeOne([]byte(line))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, the SDK's %v", line, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if len(got) != 1 || !sameMessage(got[0], want) {
			t.Errorf("%s:\n got %#v\nwant %#v", line, got[0], want)
		}
	}
}

func sameMessage(a, b jsonrpc.Message) bool {
	switch a := a.(type) {
	case *jsonrpc.Request:
		b, ok := b.(*jsonrpc.Request)
		return ok && a.ID == b.ID && a.Method == b.Method && bytes.Equal(a.Params, b.Params)
	case *jsonrpc.Response:
		b, ok := b.(*jsonrpc.Response)
		return ok && a.ID == b.ID && bytes.Equal(a.Result, b.Result) && reflect.DeepEqual(a.Error, b.Error)
	}
	return false
}

// TestDecodeWhiteSpace: JSON's white space around a message is taken, and
// what only Unicode calls white space is refused as json.Unmarshal refuses
// it (the SDK's decoder reads one value and ignores whatever follows).
func TestDecodeWhiteSpace(t *testing.T) {
	const msg = `{"jsonrpc":"2.0","id":9,"result":{}}`
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{" \r\n\t" + msg + "\r\n\t ", true},
		{msg + "\v", false},
		{"\v" + msg, false},
		{msg + "\u0085", false},
		{msg + "\f", false},
	} {
		var v any
		if jsonOK := json.Unmarshal([]byte(tc.line), &v) == nil; jsonOK != tc.ok {
			t.Fatalf("%q: json.Unmarshal accepts it: %v", tc.line, jsonOK)
		}
		if _, _, err := Decode([]byte(tc.line)); (err == nil) != tc.ok {
			t.Errorf("%q: Decode error %v, want accepted %v", tc.line, err, tc.ok)
		}
	}
}

func TestDecodeLineBatch(t *testing.T) {
	msgs, err := decodeOne([]byte(`[` + lineSamples[0] + `,` + lineSamples[1] + `]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch: %v, %v", msgs, err)
	}
	if _, err := decodeOne([]byte(`[]`)); err == nil {
		t.Error("an empty batch decoded")
	}
	if _, err := decodeOne([]byte(`[` + lineSamples[0] + `,"x"]`)); err == nil {
		t.Error("a batch with a non-message decoded")
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if _, err := decodeOne([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep nesting: %v", err)
	}
	// More brackets than maxDepth, in strings: counted, then walked, and
	// accepted; nested as deep as allowed, accepted.
	text := strings.Repeat("{[", maxDepth)
	if _, err := decodeOne([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"` + text + `"}}`)); err != nil {
		t.Errorf("brackets in a string: %v", err)
	}
	nested := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`
	if err := checkDepth([]byte(nested)); err != nil {
		t.Errorf("nested %d deep: %v", maxDepth, err)
	}
	if err := checkDepth([]byte(`{"t":"` + text + `",` + deep[1:] + `}`)); err == nil {
		t.Error("deep nesting after a string of brackets accepted")
	}
}

func TestReadLine(t *testing.T) {
	limit := MaxLine
	long := strings.Repeat("a", 200<<10) // several bufio buffers
	br := bufio.NewReaderSize(strings.NewReader("one\r\n"+long+"\nlast"), 16)
	for _, want := range []string{"one\r", long, "last"} {
		got, err := ReadLine(br, limit)
		if err != nil || string(got) != want {
			t.Fatalf("line %.10q…: %.10q…, %v", want, got, err)
		}
	}
	if _, err := ReadLine(br, limit); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, want EOF", err)
	}

	limit = 1 << 10
	// Exactly the limit passes; one byte more fails, however the line
	// falls on the reader's buffer.
	for _, size := range []int{16, 100} {
		br = bufio.NewReaderSize(strings.NewReader(strings.Repeat("c", limit)+"\n"+strings.Repeat("d", limit+1)+"\n"), size)
		if got, err := ReadLine(br, limit); err != nil || len(got) != limit {
			t.Errorf("buffer %d: a line of exactly the limit: %d bytes, %v", size, len(got), err)
		}
		if _, err := ReadLine(br, limit); !errors.Is(err, ErrLineTooLong) {
			t.Errorf("buffer %d: a line one byte over the limit: %v", size, err)
		}
	}
	br = bufio.NewReaderSize(strings.NewReader(strings.Repeat("b", 4<<10)+"\n"), 16)
	if _, err := ReadLine(br, limit); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("over-long line: %v", err)
	}
}

// FuzzDecodeLine: no input panics, and every single JSON value decodes as
// the SDK's own decoder decodes it.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range lineSamples {
		f.Add([]byte(s))
	}
	f.Add([]byte(`[` + lineSamples[0] + `]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		got, err := decodeOne(bytes.Clone(line))
		if !json.Valid(line) || line[0] == '[' {
			return
		}
		want, wantErr := jsonrpc.DecodeMessage(line)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, the SDK's %v", line, err, wantErr)
		}
		if err == nil && !sameMessage(got[0], want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", line, got[0], want)
		}
	})
}

// FuzzAppendResponse: a result response written without the encoder is the
// encoder's bytes exactly, whatever the ID and the result.
func FuzzAppendResponse(f *testing.F) {
	f.Add(int64(1), "", `{"content":[{"type":"text","text":"hi"}]}`)
	f.Add(int64(-7), "abc", `{"a":"<&>"}`)
	f.Add(int64(0), "sb-1", `"x\u2028y"`)
	f.Add(int64(0), "é\"\\", `[1,2.5e3,null,true]`)
	f.Fuzz(func(t *testing.T, n int64, s, text string) {
		result, err := json.Marshal(map[string]any{"content": text, "n": n})
		if err != nil {
			t.Skip()
		}
		for _, raw := range []any{float64(n % (1 << 53)), s} {
			id, err := jsonrpc.MakeID(raw)
			if err != nil {
				t.Fatal(err)
			}
			r := &jsonrpc.Response{ID: id, Result: result}
			want, err := jsonrpc.EncodeMessage(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendResponse(nil, r); got != nil && string(got) != string(want) {
				t.Fatalf("appendResponse\n got %s\nwant %s", got, want)
			}
		}
	})
}

// FuzzAppendRequest: a request or notification written without the
// encoder is the encoder's bytes exactly, whatever the ID, the method and
// the params; the usual ones are written without it.
func FuzzAppendRequest(f *testing.F) {
	f.Add(int64(1), "", "tools/call", `{"name":"mcp_echo_echo","arguments":{"text":"hi"}}`)
	f.Add(int64(-7), "abc", "notifications/progress", `{"a":"<&>"}`)
	f.Add(int64(0), "sb-1", "x\"y", `"x\u2028y"`)
	f.Add(int64(0), "é\"\\", "é", `[1,2.5e3,null,true]`)
	f.Add(int64(3), "", "", "")
	f.Fuzz(func(t *testing.T, n int64, s, method, text string) {
		params, err := json.Marshal(map[string]any{"arguments": text, "n": n})
		if err != nil {
			t.Skip()
		}
		for _, raw := range []any{nil, float64(n % (1 << 53)), s} {
			var id jsonrpc.ID
			if raw != nil {
				if id, err = jsonrpc.MakeID(raw); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []json.RawMessage{params, nil} {
				r := &jsonrpc.Request{ID: id, Method: method, Params: p}
				want, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					t.Fatal(err)
				}
				got := AppendRequest(nil, r)
				if got != nil && string(got) != string(want) {
					t.Fatalf("AppendRequest\n got %s\nwant %s", got, want)
				}
				if sid, ok := raw.(string); got == nil && method == "tools/call" && (!ok || sid == "" || Plain(sid)) {
					t.Errorf("AppendRequest left %s to the encoder", want)
				}
				if enc, err := Encode(r); err != nil || string(enc) != string(want) {
					t.Fatalf("Encode\n got %s, %v\nwant %s", enc, err, want)
				}
			}
		}
	})
}

// decodeOne decodes as a stdio line is decoded.
func decodeOne(line []byte) ([]jsonrpc.Message, error) {
	msgs, _, err := Decode(line)
	return msgs, err
}
