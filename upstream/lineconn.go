package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// maxLine bounds one JSON-RPC line from a child, as the SDK's
// DefaultMaxLineLength. Tests lower it (export_test.go).
var maxLine = wire.MaxLine

// lineConn is the mcp.Connection of a stdio child: newline-delimited
// JSON-RPC on its stdin and stdout. It replaces the SDK's ioConn for two
// reasons. Cost: ioConn decodes every inbound message up to three times
// (as a batch, as a message, then its method), each with a fresh 32 KiB
// decoder buffer; lineConn parses each line once, in place. Robustness: a
// line that is not a JSON-RPC message (servers that print a banner or a log
// line to stdout) ends an ioConn session; lineConn skips it and reports it
// through noise.
//
// Read parses stdout on the caller's goroutine (the client session's read
// loop): no goroutine hand-off per message. Close unblocks a Read stuck on
// the pipe by closing stdout once the child is gone (a grandchild may hold
// the pipe open).
type lineConn struct {
	w     io.WriteCloser
	r     io.Reader
	br    *bufio.Reader
	close func() error // after stdin is closed: wait for the child, escalate
	noise func(line []byte, err error)

	queue   []jsonrpc.Message // the rest of a batch; Read is called from one goroutine
	readErr error             // the error that ended reading; every later Read returns it

	wmu       sync.Mutex
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

func newLineConn(r io.Reader, w io.WriteCloser, closeFn func() error, noise func([]byte, error)) *lineConn {
	return &lineConn{
		w: w, r: r, br: bufio.NewReaderSize(r, 64<<10), close: closeFn, noise: noise,
		closed: make(chan struct{}),
	}
}

// textResult is a tools/call result as the SDK's decoder reads it, for the
// common case of text content only. Unlike CallToolResult's UnmarshalJSON
// it needs no decoder (and its 32 KiB buffer) of its own.
type textResult struct {
	Meta              mcp.Meta        `json:"_meta"`
	Content           []textBlock     `json:"content"`
	StructuredContent any             `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	InputRequests     json.RawMessage `json:"inputRequests"`
	ResultType        json.RawMessage `json:"resultType"`

	// one holds Content's block when there is one, the common case: the
	// decoder fills the room a slice has before it makes a new array,
	// which would be ten blocks.
	one [1]textBlock
}

// textBlock is a content block as the SDK's TextContent takes it from the
// wire: text, _meta and annotations.
type textBlock struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Meta        mcp.Meta         `json:"_meta"`
	Annotations *mcp.Annotations `json:"annotations"`
}

// decodeTextResult decodes a result whose content is all text as
// CallToolResult.UnmarshalJSON would; nil for anything else (other content
// types, the 2026 protocol's fields, a result it cannot parse), which the
// SDK then decodes or refuses in its own words.
func decodeTextResult(raw []byte) *mcp.CallToolResult {
	var w textResult
	w.Content = w.one[:0]
	if rest, err := sjson.Parse(raw, &w, wire.ParseFlags); err != nil || wire.Trailing(rest) {
		return nil
	}
	if len(w.InputRequests) > 0 || len(w.ResultType) > 0 {
		return nil
	}
	content := make([]mcp.Content, 0, len(w.Content))
	for i := range w.Content {
		b := &w.Content[i]
		if b.Type != "text" {
			return nil
		}
		content = append(content, &mcp.TextContent{Text: b.Text, Meta: b.Meta, Annotations: b.Annotations})
	}
	return &mcp.CallToolResult{Meta: w.Meta, Content: content, StructuredContent: w.StructuredContent, IsError: w.IsError}
}

func (c *lineConn) Read(context.Context) (jsonrpc.Message, error) {
	for {
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			return m, nil
		}
		if c.readErr != nil {
			return nil, c.readErr
		}
		line, err := wire.ReadLine(c.br, maxLine)
		if err != nil {
			select {
			case <-c.closed:
				err = io.EOF
			default:
				if errors.Is(err, wire.ErrLineTooLong) {
					err = fmt.Errorf("stdout line longer than the %d MiB limit", maxLine>>20)
				}
			}
			c.readErr = err
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msgs, _, err := wire.Decode(line)
		if err != nil {
			if c.noise != nil {
				c.noise(line, err)
			}
			continue
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := wire.Encode(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	return c.writeLine(append(data, '\n'))
}

// writeLine writes one whole line, or fails once the connection is closed.
func (c *lineConn) writeLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err := c.w.Write(line)
	return err
}

// Close closes the child's stdin, then runs the close function (waiting for
// the child to exit, escalating if it does not).
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		// Not under wmu: closing stdin is what unblocks a Write stuck on a
		// child that stopped reading.
		close(c.closed)
		err := c.w.Close()
		if c.close != nil {
			err = errors.Join(err, c.close())
		}
		// A Read still waiting on the pipe returns now.
		if rc, ok := c.r.(io.Closer); ok {
			_ = rc.Close()
		}
		c.closeErr = err
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }
