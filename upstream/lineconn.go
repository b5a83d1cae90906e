package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// connection closes even while the pipe read blocks; it hands each line's
// messages on in order.
type lineConn struct {
	w     io.WriteCloser
	close func() error // after stdin is closed: wait for the child, escalate
	noise func(line []byte, err error)

	incoming chan lineMsg
	queue    []jsonrpc.Message // the rest of a batch; Read is called from one goroutine

	// The server side (ServerTransport): batch replies, and the protocol
	// version the session negotiated, read from its initialize response.
	server  bool
	take    func(mcp.Connection, *jsonrpc.Request) bool // server: requests answered beside the session
	bmu     sync.Mutex
	batches map[jsonrpc.ID]*batchReply
	initID  jsonrpc.ID
	proto   string

	wmu       sync.Mutex
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

type lineMsg struct {
	msgs  []jsonrpc.Message
	batch bool
	err   error
}

// batchReply collects the responses to one batch of requests, written as
// one batch when the last is in.
type batchReply struct {
	index     map[jsonrpc.ID]int
	responses []*jsonrpc.Response
	left      int
}

func newLineConn(r io.Reader, w io.WriteCloser, closeFn func() error, noise func([]byte, error)) *lineConn {
	c := makeLineConn(w, closeFn, noise)
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

func makeLineConn(w io.WriteCloser, closeFn func() error, noise func([]byte, error)) *lineConn {
	return &lineConn{
		w: w, close: closeFn, noise: noise,
		incoming: make(chan lineMsg),
		closed:   make(chan struct{}),
	}
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
			m.msgs, m.batch = msgs, line[0] == '['
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
	if rest, err := sjson.Parse(raw, &w, parseFlags); err != nil || len(bytes.TrimSpace(rest)) > 0 {
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

// AppendResponse appends a result response to dst as the SDK's encoder
// writes it (jsonrpc.EncodeMessage), without encoding the result a second
// time; nil when the response is not that simple (an error, no result, an
// ID that needs escaping, a result with a line break, which would end an
// SSE data line), for the encoder to write. The result must be JSON as an
// encoder wrote it.
func AppendResponse(dst []byte, r *jsonrpc.Response) []byte {
	if r.Error != nil || len(r.Result) == 0 || bytes.ContainsAny(r.Result, "\r\n") {
		return nil
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	switch id := r.ID.Raw().(type) {
	case int64:
		dst = strconv.AppendInt(dst, id, 10)
	case string:
		for i := 0; i < len(id); i++ {
			if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return nil
			}
		}
		dst = append(append(append(dst, '"'), id...), '"')
	default:
		return nil
	}
	dst = append(dst, `,"result":`...)
	dst = append(dst, r.Result...)
	return append(dst, '}')
}

// DecodeMessages decodes one JSON-RPC message, or a batch of them, as the
// line connection decodes a line: one pass, no decoder buffer, strings and
// raw values aliasing data (which the messages then keep). A streamable
// HTTP POST body is the same thing as a line.
func DecodeMessages(data []byte) (msgs []jsonrpc.Message, batch bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, false, errors.New("empty message")
	}
	msgs, err = decodeLine(data)
	return msgs, data[0] == '[', err
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
	for {
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
			if c.server && !c.admit(m) {
				continue
			}
			if c.take != nil {
				m.msgs = c.untaken(m.msgs)
			}
			if len(m.msgs) == 0 {
				continue
			}
			c.queue = m.msgs[1:]
			return m.msgs[0], nil
		case <-c.closed:
			return nil, io.EOF
		}
	}
}

// untaken is msgs without the requests take answers.
func (c *lineConn) untaken(msgs []jsonrpc.Message) []jsonrpc.Message {
	var rest []jsonrpc.Message // nil until a message is taken
	for i, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && c.take(c, req) {
			if rest == nil {
				rest = append(make([]jsonrpc.Message, 0, len(msgs)), msgs[:i]...)
			}
			continue
		}
		if rest != nil {
			rest = append(rest, m)
		}
	}
	if rest == nil {
		return msgs
	}
	return rest
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r, ok := msg.(*jsonrpc.Response); ok && c.server {
		if batch, held := c.reply(r); held {
			if batch == nil {
				return nil // more of its batch to come
			}
			return c.writeBatch(batch)
		}
	}
	if r, ok := msg.(*jsonrpc.Response); ok {
		if line := AppendResponse(make([]byte, 0, len(r.Result)+48), r); line != nil {
			return c.writeLine(append(line, '\n'))
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
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
		c.closeErr = err
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }

// PipeTransport speaks newline-delimited JSON-RPC over r and w on the
// connection switchboard uses for a stdio child, to a server in the same
// process (benchmarks and tests). Close closes w.
func PipeTransport(r io.Reader, w io.WriteCloser) mcp.Transport { return pipeTransport{r, w} }

type pipeTransport struct {
	r io.Reader
	w io.WriteCloser
}

func (t pipeTransport) Connect(context.Context) (mcp.Connection, error) {
	return newLineConn(t.r, t.w, nil, nil), nil
}

// ServerTransport serves MCP over newline-delimited JSON-RPC on r and w
// (switchboard's own stdio mode) on the line connection, which parses each
// line once. Unlike the SDK's stdio connection, a line that is not a
// JSON-RPC message does not end the session: it is answered with a
// JSON-RPC error (parse error, or invalid request; id null) as JSON-RPC 2.0
// prescribes, and logged at warn with the caps of child stderr. A batch is
// answered with one batch under protocol versions before 2025-06-18, and
// refused with an error from 2025-06-18 on, which has no batches. Close
// closes w.
//
// take, when not nil, sees each request before the server does; one it
// takes (returns true for) the server never reads, and take must answer it
// itself, on the connection it is given. It runs on the server's read
// goroutine, so it must not block.
func ServerTransport(r io.Reader, w io.WriteCloser, log hclog.Logger, take func(mcp.Connection, *jsonrpc.Request) bool) mcp.Transport {
	refused := newRefusedWriter(log)
	return serverTransport{r, w, func(line []byte, _ error) { refused.Line(line) }, take}
}

type serverTransport struct {
	r     io.Reader
	w     io.WriteCloser
	noise func([]byte, error)
	take  func(mcp.Connection, *jsonrpc.Request) bool
}

func (t serverTransport) Connect(context.Context) (mcp.Connection, error) {
	var c *lineConn
	c = makeLineConn(t.w, nil, func(line []byte, err error) {
		c.refuse(line, err)
		t.noise(line, err)
	})
	c.server = true
	c.take = t.take
	c.batches = map[jsonrpc.ID]*batchReply{}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10))
	return c, nil
}

// batchesUntil is the first protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// refuse answers a line that is not a JSON-RPC message.
func (c *lineConn) refuse(line []byte, err error) {
	code, msg := int64(jsonrpc.CodeParseError), "parse error"
	if json.Valid(line) {
		code, msg = jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error()
	}
	_ = c.writeError(code, msg)
}

func (c *lineConn) writeError(code int64, msg string) error {
	e, err := json.Marshal(&jsonrpc.Error{Code: code, Message: msg})
	if err != nil {
		return err
	}
	line := append([]byte(`{"jsonrpc":"2.0","id":null,"error":`), e...)
	return c.writeLine(append(line, "}\n"...))
}

// admit notes an initialize request (its response names the protocol
// version) and registers a batch's requests, or refuses the batch.
func (c *lineConn) admit(m lineMsg) bool {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	for _, msg := range m.msgs {
		if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() && r.Method == "initialize" {
			c.initID = r.ID
		}
	}
	if !m.batch {
		return true
	}
	if c.proto >= batchesUntil {
		_ = c.writeError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("JSON-RPC batches are not supported in protocol version %s and later (session: %s)", batchesUntil, c.proto))
		return false
	}
	b := &batchReply{index: map[jsonrpc.ID]int{}}
	for _, msg := range m.msgs {
		r, ok := msg.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			continue
		}
		if _, dup := b.index[r.ID]; dup || c.batches[r.ID] != nil {
			_ = c.writeError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("request ID %v is already in use", r.ID.Raw()))
			return false
		}
		b.index[r.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	b.left = len(b.responses)
	for id := range b.index {
		c.batches[id] = b
	}
	return true
}

// reply notes the protocol version from the initialize response, and holds
// a response that belongs to a batch: held reports whether it did, and
// batch is the whole batch once its last response is in.
func (c *lineConn) reply(r *jsonrpc.Response) (batch []*jsonrpc.Response, held bool) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.initID.IsValid() && r.ID == c.initID {
		c.initID = jsonrpc.ID{}
		var ir struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if r.Error == nil && json.Unmarshal(r.Result, &ir) == nil {
			c.proto = ir.ProtocolVersion
		}
	}
	b := c.batches[r.ID]
	if b == nil {
		return nil, false
	}
	delete(c.batches, r.ID)
	b.responses[b.index[r.ID]] = r
	if b.left--; b.left > 0 {
		return nil, true
	}
	return b.responses, true
}

func (c *lineConn) writeBatch(rs []*jsonrpc.Response) error {
	line := []byte{'['}
	for i, r := range rs {
		data, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return fmt.Errorf("encoding message: %w", err)
		}
		if i > 0 {
			line = append(line, ',')
		}
		line = append(line, data...)
	}
	return c.writeLine(append(line, "]\n"...))
}
