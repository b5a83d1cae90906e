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
	sjson "github.com/segmentio/encoding/json"
)

// maxLine bounds one JSON-RPC line from a child, as the SDK's
// DefaultMaxLineLength. Tests lower it (export_test.go).
var maxLine = 16 << 20

// maxDepth bounds the nesting of one message, as the SDK's decoder does.
const maxDepth = 1000

// errLineTooLong ends a connection whose child wrote a line over maxLine.
var errLineTooLong = errors.New("stdout line longer than the 16 MiB limit")

// lineConn is the mcp.Connection of a stdio child: newline-delimited
// JSON-RPC on its stdin and stdout. It replaces the SDK's ioConn for two
// reasons. Cost: ioConn decodes every inbound message up to three times
// (as a batch, as a message, then its method), each with a fresh 32 KiB
// decoder buffer; lineConn parses each line once, in place. Robustness: a
// line that is not a JSON-RPC message (servers that print a banner or a log
// line to stdout) ends an ioConn session; lineConn skips it and reports it
// through noise.
//
// One goroutine reads stdout, so that Read can return as soon as the
// connection closes even while the pipe read blocks.
type lineConn struct {
	w     io.WriteCloser
	close func() error // after stdin is closed: wait for the child, escalate
	noise func(line []byte, err error)

	incoming chan lineMsg
	queue    []jsonrpc.Message // the rest of a batch; Read is called from one goroutine

	wmu       sync.Mutex
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

type lineMsg struct {
	msgs []jsonrpc.Message
	err  error
}

func newLineConn(r io.Reader, w io.WriteCloser, closeFn func() error, noise func([]byte, error)) *lineConn {
	c := &lineConn{
		w: w, close: closeFn, noise: noise,
		incoming: make(chan lineMsg),
		closed:   make(chan struct{}),
	}
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

func (c *lineConn) readLoop(br *bufio.Reader) {
	for {
		line, err := readLine(br)
		var m lineMsg
		switch {
		case err != nil:
			m.err = err
		default:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			msgs, derr := decodeLine(line)
			if derr != nil {
				if c.noise != nil {
					c.noise(line, derr)
				}
				continue
			}
			m.msgs = msgs
		}
		select {
		case c.incoming <- m:
		case <-c.closed:
			return
		}
		if m.err != nil {
			return
		}
	}
}

// readLine returns the next line without its newline, in a slice of its
// own (messages keep sub-slices of it). At EOF, a final unterminated line is
// returned first.
func readLine(br *bufio.Reader) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil {
		return bytes.Clone(frag[:len(frag)-1]), nil
	}
	var line []byte
	for errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		if len(line) > maxLine {
			return nil, errLineTooLong
		}
		frag, err = br.ReadSlice('\n')
	}
	if err == nil {
		return append(line, frag[:len(frag)-1]...), nil
	}
	line = append(line, frag...)
	if len(bytes.TrimSpace(line)) > 0 && errors.Is(err, io.EOF) {
		return line, nil
	}
	return nil, err
}

// wireMsg is one JSON-RPC 2.0 message as sent, decoded as the SDK's own
// decoder does. Method stays raw so that a present method key makes a
// request whatever its value.
type wireMsg struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// parseFlags: field names match exactly, as in the SDK's own decoder; raw
// values and strings alias the line, which readLine gives each message to
// keep.
const parseFlags = sjson.DontMatchCaseInsensitiveStructFields | sjson.DontCopyRawMessage | sjson.DontCopyString

// decodeLine decodes one line: a message, or a batch of them.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	if err := checkDepth(line); err != nil {
		return nil, err
	}
	if line[0] == '[' {
		var raws []json.RawMessage
		if _, err := sjson.Parse(line, &raws, parseFlags); err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMsg
	rest, err := sjson.Parse(data, &w, parseFlags)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("trailing data after the message")
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("jsonrpc version %q, want \"2.0\"", w.Version)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := sjson.Parse(w.Method, &method, parseFlags); err != nil {
			return nil, fmt.Errorf("method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("neither a request nor a response")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// checkDepth refuses messages nested deeper than maxDepth before they reach
// the recursive decoder.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("nested deeper than %d", maxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		if m.err != nil {
			return nil, m.err
		}
		c.queue = m.msgs[1:]
		return m.msgs[0], nil
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err = c.w.Write(data)
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
		c.closeErr = err
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }
