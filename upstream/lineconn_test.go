package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

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
		got, err := decodeLine([]byte(line))
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

func TestDecodeLineBatch(t *testing.T) {
	msgs, err := decodeLine([]byte(`[` + lineSamples[0] + `,` + lineSamples[1] + `]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch: %v, %v", msgs, err)
	}
	if _, err := decodeLine([]byte(`[]`)); err == nil {
		t.Error("an empty batch decoded")
	}
	if _, err := decodeLine([]byte(`[` + lineSamples[0] + `,"x"]`)); err == nil {
		t.Error("a batch with a non-message decoded")
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if _, err := decodeLine([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("a", 200<<10) // several bufio buffers
	br := bufio.NewReaderSize(strings.NewReader("one\r\n"+long+"\nlast"), 16)
	for _, want := range []string{"one\r", long, "last"} {
		got, err := readLine(br)
		if err != nil || string(got) != want {
			t.Fatalf("line %.10q…: %.10q…, %v", want, got, err)
		}
	}
	if _, err := readLine(br); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, want EOF", err)
	}

	defer func(old int) { maxLine = old }(maxLine)
	maxLine = 1 << 10
	br = bufio.NewReaderSize(strings.NewReader(strings.Repeat("b", 4<<10)+"\n"), 16)
	if _, err := readLine(br); !errors.Is(err, errLineTooLong) {
		t.Errorf("over-long line: %v", err)
	}
}

// TestLineConn runs a connection over pipes: noise is skipped and reported,
// messages arrive in order, writes are one line each, and Close unblocks a
// pending Read and runs the close function once.
func TestLineConn(t *testing.T) {
	childOut, toConn := io.Pipe()
	fromConn, childIn := io.Pipe()
	var (
		mu     sync.Mutex
		noise  []string
		closes int
	)
	c := newLineConn(childOut, childIn,
		func() error { closes++; return nil },
		func(line []byte, _ error) { mu.Lock(); noise = append(noise, string(line)); mu.Unlock() })

	go func() {
		io.WriteString(toConn, "banner line\n\n"+lineSamples[0]+"\n["+lineSamples[1]+","+lineSamples[2]+"]\n")
	}()
	ctx := context.Background()
	var got []jsonrpc.Message
	for range 3 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if r, ok := got[0].(*jsonrpc.Request); !ok || r.Method != "tools/call" {
		t.Errorf("first message: %#v", got[0])
	}
	if r, ok := got[2].(*jsonrpc.Response); !ok || r.Error == nil {
		t.Errorf("third message: %#v", got[2])
	}
	mu.Lock()
	if len(noise) != 1 || noise[0] != "banner line" {
		t.Errorf("noise: %q", noise)
	}
	mu.Unlock()

	id, _ := jsonrpc.MakeID(float64(9))
	done := make(chan []byte)
	go func() {
		line, _ := bufio.NewReader(fromConn).ReadBytes('\n')
		done <- line
	}()
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "ping"}); err != nil {
		t.Fatal(err)
	}
	line := <-done
	var w map[string]any
	if err := json.Unmarshal(line, &w); err != nil || w["method"] != "ping" || line[len(line)-1] != '\n' {
		t.Errorf("written line %q: %v", line, err)
	}

	readErr := make(chan error)
	go func() { _, err := c.Read(ctx); readErr <- err }()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	c.Close()
	select {
	case err := <-readErr:
		if !errors.Is(err, io.EOF) {
			t.Errorf("read after close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if closes != 1 {
		t.Errorf("close function ran %d times", closes)
	}
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "ping"}); err == nil {
		t.Error("write after close succeeded")
	}
	toConn.Close()
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
		got, err := decodeLine(bytes.Clone(line))
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
