package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLineConn runs a connection over pipes: noise is skipped and reported,
// messages arrive in order, writes are one line each, and Close unblocks a
// pending Read and runs the close function once.
// lineSamples are lines a child may write: messages the SDK accepts,
// messages it refuses, and noise.
var lineSamples = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"why":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"jsonrpc":"2.0","id":2,"method":null}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`server ready`,
	`{"jsonrpc":"2.0","id":1,"result":{}`,
}

func TestLineConn(t *testing.T) {
	// In a bubble (pipes only, no real I/O), so that synctest.Wait can tell
	// when the last Read is blocked on the pipe: Close must unblock it.
	synctest.Test(t, func(t *testing.T) {
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
		synctest.Wait() // the Read is blocked on the pipe
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
	})
}
