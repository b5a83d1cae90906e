package upstream

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolError reads the body of a 2026-07-28 request's 4xx answer. SEP-2575
// sends a protocol error with its status, the body the JSON-RPC answer to the
// request: it is handed on as the response. A server of an earlier era
// refuses the request it cannot take with an answer to no request (the
// TypeScript SDK's "Server not initialized": id null), or with a body that is
// no JSON-RPC at all; that is the server's answer to this request too, and
// the call fails at once with the status instead of waiting out its timeout.
func (p *streamablePost) protocolError(resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.c.max)+1))
	resp.Body.Close()
	if err != nil {
		return nil, p.abort(nil, err)
	}
	if len(body) <= p.c.max {
		if msgs, err := decodeBody(body); err == nil {
			for _, m := range msgs {
				if r, ok := m.(*jsonrpc.Response); ok && r.ID == p.modern.ID {
					resp.Body = io.NopCloser(bytes.NewReader(body))
					resp.ContentLength = int64(len(body))
					return resp, nil
				}
			}
		}
	}
	snippet := body[:min(len(body), errorSnippet)]
	return nil, p.abort(nil, &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: string(snippet)})
}

// localError answers the POST's call with err as a JSON-RPC error, as if
// the server had: the answer is read as the server's would be.
func (p *streamablePost) localError(err error) (*http.Response, error) {
	body, eerr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: p.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
	if eerr != nil {
		return nil, p.abort(nil, err)
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}, nil
}

// checkStatus turns a refusal into an error and closes its body. The error
// quotes the status and the start of the body, never headers, which may
// carry credentials.
func checkStatus(resp *http.Response, sentSession bool) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && sentSession {
		// Spec: a server that ended the session answers 404 to its ID.
		return fmt.Errorf("%s: %w", resp.Status, mcp.ErrSessionMissing)
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, errorSnippet))
	return &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: string(snippet)}
}

// StatusError is an HTTP status other than 2xx that an endpoint answered a
// POST with, and the start of its body.
type StatusError struct {
	Code   int
	Status string
	Body   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %q", e.Status, e.Body) }
