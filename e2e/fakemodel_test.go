package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeModel is a scripted model API on a loopback port, so a test can drive
// a real agent CLI offline and see what the agent sent the model (its tools
// above all). It answers the Anthropic Messages API (POST /v1/messages,
// streamed or not, with scripted text or tool_use turns) for Claude Code,
// and with text only the Gemini API (generateContent and
// streamGenerateContent) for Gemini CLI and the OpenAI Responses API
// (POST /v1/responses, streamed) for Codex CLI. It records every request.
type fakeModel struct {
	t   *testing.T
	URL string // http://127.0.0.1:PORT, the agent's base URL

	mu      sync.Mutex
	reqs    []*modelRequest
	respond func(r *modelRequest) modelReply
}

// modelRequest is one request the agent made.
type modelRequest struct {
	At       time.Time // when it arrived
	API      string    // "anthropic", "gemini" or "responses"
	Path     string
	Model    string
	Stream   bool
	Tools    []string // the names in the tools array, in order (see toolNames)
	Messages []modelMessage
	Raw      []byte
}

// modelMessage is one message of a request, with its content blocks.
type modelMessage struct {
	Role    string
	Blocks  []modelBlock
	Content string // the content when it is a plain string
}

// modelBlock is one content block of a message.
type modelBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// modelReply is the assistant turn the fake answers with: a tool_use when
// Tool is set, else Text (which defaults to "done").
type modelReply struct {
	Text  string
	Tool  string
	Input map[string]any
}

// hasTool reports whether the request offered a tool of that name.
func (r *modelRequest) hasTool(name string) bool {
	for _, n := range r.Tools {
		if n == name {
			return true
		}
	}
	return false
}

// toolResults returns the tool_result blocks of the request's last message.
func (r *modelRequest) toolResults() []modelBlock {
	if len(r.Messages) == 0 {
		return nil
	}
	var out []modelBlock
	for _, b := range r.Messages[len(r.Messages)-1].Blocks {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// resultOf reports whether the tool_result block answers a tool_use of
// the named tool that the fake scripted.
func (b modelBlock) resultOf(tool string) bool {
	return b.Type == "tool_result" && strings.HasSuffix(b.ToolUseID, "_"+tool)
}

// resultText is the text of a tool_result block (its content is a string or
// an array of blocks).
func (b modelBlock) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []modelBlock
	_ = json.Unmarshal(b.Content, &blocks)
	var sb strings.Builder
	for _, c := range blocks {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// startFakeModel serves the fake on 127.0.0.1:0 until the test ends.
// respond picks each Messages API answer; nil answers every request with
// "done" (the other APIs always get "done").
func startFakeModel(t *testing.T, respond func(r *modelRequest) modelReply) *fakeModel {
	t.Helper()
	m := &fakeModel{t: t, respond: respond}
	ln := listenLoopback(t)
	m.URL = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

// requests returns the requests made so far.
func (m *fakeModel) requests() []*modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*modelRequest(nil), m.reqs...)
}

// turns returns the requests of the agent's conversation: those that
// offered tools (side requests, such as a title or Gemini CLI's model
// router, offer none).
func (m *fakeModel) turns() []*modelRequest {
	var out []*modelRequest
	for _, r := range m.requests() {
		if len(r.Tools) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": len(body) / 4})
		return
	case req.Method == http.MethodPost && strings.HasPrefix(req.URL.Path, "/v1beta/models/"):
		m.serveGemini(w, req, body)
		return
	case req.Method == http.MethodPost && req.URL.Path == "/v1/responses":
		m.serveResponses(w, req, body)
		return
	case req.Method != http.MethodPost || req.URL.Path != "/v1/messages":
		m.t.Logf("fake model: %s %s: not found", req.Method, req.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "not found"}})
		return
	}
	r, err := parseModelRequest(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	r.API, r.Path = "anthropic", req.URL.Path
	n, reply := m.record(r)
	content, stop := reply.content(n)
	if r.Stream {
		writeStream(w, r.Model, n, content, stop)
		return
	}
	writeJSON(w, map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": r.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10},
	})
}

// record keeps r and returns its number (from 1) and the scripted reply.
func (m *fakeModel) record(r *modelRequest) (int, modelReply) {
	r.At = time.Now()
	m.mu.Lock()
	m.reqs = append(m.reqs, r)
	n := len(m.reqs)
	respond := m.respond
	m.mu.Unlock()
	reply := modelReply{Text: "done"}
	if respond != nil && r.API == "anthropic" {
		reply = respond(r)
	}
	m.t.Logf("fake model: request %d: %s %s, model %s, stream %v, %d tools, %d messages -> %+v", n, r.API, r.Path, r.Model, r.Stream, len(r.Tools), len(r.Messages), reply)
	return n, reply
}

// content is the reply's content blocks and stop reason.
func (rp modelReply) content(n int) ([]map[string]any, string) {
	if rp.Tool != "" {
		input := rp.Input
		if input == nil {
			input = map[string]any{}
		}
		// The ID names the tool, so a script can tell whose result a
		// tool_result is (see modelBlock.resultOf).
		return []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%s", n, rp.Tool), "name": rp.Tool, "input": input}}, "tool_use"
	}
	text := rp.Text
	if text == "" {
		text = "done"
	}
	return []map[string]any{{"type": "text", "text": text}}, "end_turn"
}

func parseModelRequest(body []byte) (*modelRequest, error) {
	var in struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	if in.Model == "" || len(in.Messages) == 0 {
		return nil, errors.New("model and messages are required")
	}
	r := &modelRequest{Model: in.Model, Stream: in.Stream, Raw: body}
	for _, tool := range in.Tools {
		r.Tools = append(r.Tools, tool.Name)
	}
	for _, msg := range in.Messages {
		mm := modelMessage{Role: msg.Role}
		if json.Unmarshal(msg.Content, &mm.Content) != nil {
			if err := json.Unmarshal(msg.Content, &mm.Blocks); err != nil {
				return nil, fmt.Errorf("decode message content: %w", err)
			}
		}
		r.Messages = append(r.Messages, mm)
	}
	return r, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeStream answers as the streaming Messages API does: message_start,
// each block as start, delta(s) and stop, message_delta, message_stop.
func writeStream(w http.ResponseWriter, model string, n int, content []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1},
	}})
	for i, block := range content {
		switch block["type"] {
		case "tool_use":
			input, _ := json.Marshal(block["input"])
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{},
			}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
				"type": "input_json_delta", "partial_json": string(input),
			}})
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
