package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// serveGemini answers the Gemini API as Gemini CLI calls it:
// POST /v1beta/models/MODEL:generateContent (its model router asks for a
// JSON complexity score, without tools) and
// POST /v1beta/models/MODEL:streamGenerateContent?alt=sse (the
// conversation). Every answer is one candidate; the conversation's is the
// text "done".
func (m *fakeModel) serveGemini(w http.ResponseWriter, req *http.Request, body []byte) {
	var in struct {
		Contents []json.RawMessage `json:"contents"`
		Tools    []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	model, method, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/v1beta/models/"), ":")
	r := &modelRequest{API: "gemini", Path: req.URL.Path, Model: model, Stream: method == "streamGenerateContent", Raw: body}
	for _, tool := range in.Tools {
		for _, fd := range tool.FunctionDeclarations {
			r.Tools = append(r.Tools, fd.Name)
		}
	}
	for range in.Contents {
		r.Messages = append(r.Messages, modelMessage{})
	}
	m.record(r)
	text := "done"
	if !r.Stream {
		// The model router's generateJson: a valid score keeps it from
		// retrying.
		text = `{"complexity_reasoning": "scripted", "complexity_score": 10}`
	}
	answer := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  model,
	}
	if !r.Stream {
		writeJSON(w, answer)
		return
	}
	b, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
}

// serveResponses answers the OpenAI Responses API as Codex CLI calls it
// (POST /v1/responses, streamed): one assistant message, "done". Codex
// sends each MCP server's tools as a namespace tool (name "mcp__<server>")
// holding function tools; they are recorded as "mcp__<server>__<tool>", the
// name Codex gives them.
func (m *fakeModel) serveResponses(w http.ResponseWriter, req *http.Request, body []byte) {
	type tool struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []tool `json:"tools"`
	}
	var in struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []tool            `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r := &modelRequest{API: "responses", Path: req.URL.Path, Model: in.Model, Stream: in.Stream, Raw: body}
	for _, t := range in.Tools {
		if t.Type == "namespace" {
			for _, inner := range t.Tools {
				r.Tools = append(r.Tools, t.Name+"__"+inner.Name)
			}
			continue
		}
		if t.Name == "" {
			r.Tools = append(r.Tools, t.Type) // a hosted tool, such as web_search
			continue
		}
		r.Tools = append(r.Tools, t.Name)
	}
	for range in.Input {
		r.Messages = append(r.Messages, modelMessage{})
	}
	n, _ := m.record(r)
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	event := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	id := fmt.Sprintf("resp_%d", n)
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
		"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%d", n),
		"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}},
	}})
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 1, "output_tokens_details": nil, "total_tokens": 11,
	}}})
}
