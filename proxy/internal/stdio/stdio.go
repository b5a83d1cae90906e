package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// batchesUntil is the first protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// maxLoggedRefuse bounds the refused lines logged: a client that writes
// garbage must not flood the log.
const maxLoggedRefuse = 100

// Serve serves ss on r and w until r ends (nil), reading fails, or ctx is
// done (its error). The session's own stream is w. Requests still in
// flight when it returns keep running: the caller drains and closes ss.
func Serve(ctx context.Context, ss *session.Session, r io.Reader, w io.Writer, log hclog.Logger) error {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	out := &lines{w: w}
	ss.SetStream(out)
	s := &server{ss: ss, out: out, log: log}
	type line struct {
		b   []byte
		err error
	}
	in := make(chan line)
	done := make(chan struct{})
	defer close(done)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			b, err := wire.ReadLine(br, wire.MaxLine)
			select {
			case in <- line{b, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// Requests keep ctx's values, not its end: the caller gives them a
	// grace period of their own.
	rctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l := <-in:
			if errors.Is(l.err, io.EOF) {
				return nil
			}
			if l.err != nil {
				return fmt.Errorf("stdin: %w", l.err)
			}
			s.line(rctx, l.b)
		}
	}
}

type server struct {
	ss      *session.Session
	out     *lines
	log     hclog.Logger
	refused int
}

// line handles one line of input.
func (s *server) line(ctx context.Context, b []byte) {
	msgs, isBatch, err := wire.Decode(b)
	if err != nil {
		if len(strings.TrimSpace(string(b))) == 0 {
			return
		}
		s.refuse(b, err)
		return
	}
	if !isBatch {
		s.ss.Go(ctx, msgs[0], s.out)
		return
	}
	if v := s.ss.ProtocolVersion(); v >= batchesUntil {
		s.writeError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("JSON-RPC batches are not supported in protocol version %s and later (session: %s)", batchesUntil, v))
		return
	}
	bs := &batch{out: s.out, index: map[jsonrpc.ID]int{}}
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if _, dup := bs.index[r.ID]; dup {
				s.writeError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("request ID %v appears twice in one batch", r.ID.Raw()))
				return
			}
			bs.index[r.ID] = len(bs.responses)
			bs.responses = append(bs.responses, nil)
		}
	}
	bs.left = len(bs.responses)
	for _, m := range msgs {
		s.ss.Go(ctx, m, bs)
	}
}

// refuse answers and logs a line that is not a JSON-RPC message.
func (s *server) refuse(b []byte, err error) {
	code, msg := int64(jsonrpc.CodeParseError), "parse error"
	if json.Valid(b) {
		code, msg = jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error()
	}
	s.writeError(code, msg)
	// The line itself is not logged: it may carry a tool's arguments.
	switch s.refused++; {
	case s.refused <= maxLoggedRefuse:
		s.log.Warn("stdin line refused: not JSON-RPC", "bytes", len(b), "error", err)
	case s.refused == maxLoggedRefuse+1:
		s.log.Warn("stdin lines refused: not logging more of them", "count", maxLoggedRefuse)
	}
}

func (s *server) writeError(code int64, msg string) {
	e, err := json.Marshal(&jsonrpc.Error{Code: code, Message: msg})
	if err != nil {
		return
	}
	line := append([]byte(`{"jsonrpc":"2.0","id":null,"error":`), e...)
	_ = s.out.line(append(line, '}'))
}

// lines writes one message per line. It is the session's stream.
type lines struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first write error; every later write fails with it
}

func (l *lines) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := wire.Encode(msg)
	if err != nil {
		return err
	}
	return l.line(data)
}

// line writes data and a newline in one write.
func (l *lines) line(data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if _, err := l.w.Write(append(data, '\n')); err != nil {
		l.err = fmt.Errorf("stdout: %w", err)
	}
	return l.err
}

// batch is the stream of one batch's requests: their answers are held and
// written as one batch once the last is in; everything else goes out at
// once.
type batch struct {
	out       *lines
	mu        sync.Mutex
	index     map[jsonrpc.ID]int
	responses []*jsonrpc.Response
	left      int
}

func (b *batch) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		return b.out.Write(ctx, msg)
	}
	b.mu.Lock()
	i, mine := b.index[r.ID]
	if !mine {
		b.mu.Unlock()
		return b.out.Write(ctx, msg)
	}
	delete(b.index, r.ID)
	b.responses[i] = r
	b.left--
	last := b.left == 0
	b.mu.Unlock()
	if !last {
		return nil
	}
	line := []byte{'['}
	for i, r := range b.responses {
		data, err := wire.Encode(r)
		if err != nil {
			return err
		}
		if i > 0 {
			line = append(line, ',')
		}
		line = append(line, data...)
	}
	return b.out.line(append(line, ']'))
}
