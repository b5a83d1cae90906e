package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sjson "github.com/segmentio/encoding/json"
)

// MaxLine is the longest line a stdio peer may write, as the SDK's
// DefaultMaxLineLength.
const MaxLine = 16 << 20

// maxDepth bounds the nesting of one message, as the SDK's decoder does.
const maxDepth = 1000

// ErrLineTooLong is ReadLine's error for a line over its limit.
var ErrLineTooLong = errors.New("line longer than the limit")

// ReadLine returns the next line without its newline, in a slice of its
// own (messages keep sub-slices of it); a line over limit bytes is
// ErrLineTooLong. At EOF, a final unterminated line is returned first.
func ReadLine(br *bufio.Reader, limit int) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil {
		if len(frag)-1 > limit {
			return nil, ErrLineTooLong
		}
		return bytes.Clone(frag[:len(frag)-1]), nil
	}
	var line []byte
	for errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		if len(line) > limit {
			return nil, ErrLineTooLong
		}
		frag, err = br.ReadSlice('\n')
	}
	if err == nil {
		line = append(line, frag[:len(frag)-1]...)
	} else {
		line = append(line, frag...)
		if len(bytes.TrimSpace(line)) == 0 || !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	if len(line) > limit {
		return nil, ErrLineTooLong
	}
	return line, nil
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

// ParseFlags are the flags of every decode here: field names match exactly, as in the SDK's own decoder; raw
// values and strings alias the line, which readLine gives each message to
// keep.
const ParseFlags = sjson.DontMatchCaseInsensitiveStructFields | sjson.DontCopyRawMessage | sjson.DontCopyString

// decode decodes one trimmed, non-empty message or batch.
func decode(line []byte) ([]jsonrpc.Message, error) {
	if err := checkDepth(line); err != nil {
		return nil, err
	}
	if line[0] == '[' {
		var raws []json.RawMessage
		if _, err := sjson.Parse(line, &raws, ParseFlags); err != nil {
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
	dst = appendID(dst, r.ID)
	if dst == nil {
		return nil
	}
	dst = append(dst, `,"result":`...)
	dst = append(dst, r.Result...)
	return append(dst, '}')
}

// AppendRequest appends a request or a notification to dst as the SDK's
// encoder writes it, without encoding the params a second time (the
// encoder compacts them again: a pass over every byte of a forwarded
// call's arguments); nil when it is not that simple (a method or an ID
// that needs escaping, params with a line break), for the encoder to
// write. The params must be JSON as an encoder wrote it.
func AppendRequest(dst []byte, r *jsonrpc.Request) []byte {
	if !Plain(r.Method) || bytes.ContainsAny(r.Params, "\r\n") {
		return nil
	}
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if r.ID.IsValid() {
		dst = appendID(append(dst, `,"id":`...), r.ID)
		if dst == nil {
			return nil
		}
	}
	dst = append(dst, `,"method":"`...)
	dst = append(dst, r.Method...)
	dst = append(dst, '"')
	if len(r.Params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, r.Params...)
	}
	return append(dst, '}')
}

// appendID appends an ID as the encoder writes it; nil for one that is
// neither a number nor a plain string.
func appendID(dst []byte, id jsonrpc.ID) []byte {
	switch id := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, id, 10)
	case string:
		if !Plain(id) && id != "" {
			return nil
		}
		return append(append(append(dst, '"'), id...), '"')
	}
	return nil
}

// Plain reports whether s is non-empty printable ASCII that a JSON string
// holds as it is.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// Decode decodes one JSON-RPC message, or a batch of them (batch
// reports which), exactly as the SDK's jsonrpc.DecodeMessage reads a
// message: one pass, no decoder buffer, field names matched exactly,
// strings and raw values aliasing data (which the messages then keep). A
// stdio line, a streamable HTTP body and an SSE event's data are all one
// such value.
func Decode(data []byte) (msgs []jsonrpc.Message, batch bool, err error) {
	data = bytes.Trim(data, jsonSpace)
	if len(data) == 0 {
		return nil, false, errors.New("empty message")
	}
	msgs, err = decode(data)
	return msgs, data[0] == '[', err
}

// Encode is msg as the SDK's jsonrpc.EncodeMessage writes it; a result
// response is written around its result without encoding it again.
func Encode(msg jsonrpc.Message) ([]byte, error) {
	switch r := msg.(type) {
	case *jsonrpc.Response:
		if data := AppendResponse(make([]byte, 0, len(r.Result)+48), r); data != nil {
			return data, nil
		}
	case *jsonrpc.Request:
		// +1: room for the newline a stdio line adds.
		if data := AppendRequest(make([]byte, 0, len(r.Params)+len(r.Method)+64+1), r); data != nil {
			return data, nil
		}
	}
	return jsonrpc.EncodeMessage(msg)
}

// jsonSpace is JSON's white space: bytes.TrimSpace would also take
// Unicode's (a vertical tab, U+0085), which json.Unmarshal refuses.
const jsonSpace = " \t\r\n"

// Trailing reports whether what a decoder left after a value is more than
// JSON's white space.
func Trailing(rest []byte) bool { return len(bytes.TrimLeft(rest, jsonSpace)) > 0 }

func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMsg
	rest, err := sjson.Parse(data, &w, ParseFlags)
	if err != nil {
		return nil, err
	}
	if Trailing(rest) {
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
		if _, err := sjson.Parse(w.Method, &method, ParseFlags); err != nil {
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
	if bytes.Count(data, []byte{'{'})+bytes.Count(data, []byte{'['}) <= maxDepth {
		return nil // no deeper than its brackets, strings' included: the common case, counted fast
	}
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
