package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 scenarios' tools (SEP-2322 input_required results and the
// SEP-2575 diagnostics), as the scenarios describe them: a call without
// inputResponses asks for input in its result; the retry with the answers
// (and the state, signed here) completes it. They are written for
// 2026-07-28 requests; the go-sdk asks a legacy client the questions of
// one round itself.

// stateKey signs this process's requestStates.
var stateKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

// signState is state as an opaque string: JSON, then an HMAC over it.
func signState(state map[string]any) string {
	b, _ := json.Marshal(state)
	m := hmac.New(sha256.New, stateKey)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openState checks a signed state and decodes it.
func openState(s string) (map[string]any, bool) {
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return nil, false
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	m := hmac.New(sha256.New, stateKey)
	m.Write(b)
	if !hmac.Equal(got, m.Sum(nil)) {
		return nil, false
	}
	var state map[string]any
	return state, json.Unmarshal(b, &state) == nil
}

var errTamperedState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState integrity check failed"}

func elicitFor(message, field, typ string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{field: map[string]any{"type": typ}}, "required": []string{field},
	}}
}

func sampleFor(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}, MaxTokens: maxTokens}
}

// elicited is the string field of an elicitation answer ("unknown" when
// there is none).
func elicited(resp mcp.InputResponse, field string) string {
	if r, ok := resp.(*mcp.ElicitResult); ok {
		if s, ok := r.Content[field].(string); ok {
			return s
		}
	}
	return "unknown"
}

func askInput(inputs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: inputs, RequestState: state}
}

var mrtrTools = []tool{
	{"test_input_required_result_elicitation", "Input: elicitation", "Asks for a name (input_required), then greets it.", noArgs, mrtrElicitation},
	{"test_input_required_result_sampling", "Input: sampling", "Asks for a sampled answer (input_required), then returns it.", noArgs, mrtrSampling},
	{"test_input_required_result_list_roots", "Input: roots", "Asks for the client's roots (input_required), then counts them.", noArgs, mrtrRoots},
	{"test_input_required_result_request_state", "Input: request state", "Asks for a confirmation with a signed requestState, checked on the retry.", noArgs, mrtrRequestState},
	{"test_input_required_result_multiple_inputs", "Input: several", "Asks for an elicitation, a sampling and the roots at once.", noArgs, mrtrMultiple},
	{"test_input_required_result_multi_round", "Input: rounds", "Asks two questions in two rounds, the state changing between them.", noArgs, mrtrMultiRound},
	{"test_input_required_result_tampered_state", "Input: tampered state", "Asks for a name with a signed requestState; an altered state is refused.", noArgs, mrtrTampered},
	{"test_input_required_result_capabilities", "Input: capabilities", "Asks only for the input kinds the client declared.", noArgs, mrtrCapabilities},
	{"test_missing_capability", "Missing capability", "Needs the sampling capability: refused with -32021 without it.", noArgs, missingCapability},
	{"test_logging_tool", "Logging by level", "Logs only when the request set a log level.", noArgs, loggingByLevel},
	{"test_streaming_elicitation", "Input, never a request", "Asks for input in its result, never with a request on the stream.", noArgs, streamingElicitation},
}

func mrtrElicitation(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r, ok := req.Params.InputResponses["user_name"]; ok {
		return text(fmt.Sprintf("Hello, %s!", elicited(r, "name"))), nil
	}
	return askInput(mcp.InputRequestMap{"user_name": elicitFor("What is your name?", "name", "string")}, ""), nil
}

func mrtrSampling(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for _, r := range req.Params.InputResponses {
		answer := "no response"
		if m, ok := r.(*mcp.CreateMessageResult); ok {
			if t, ok := m.Content.(*mcp.TextContent); ok {
				answer = t.Text
			}
		}
		return text("Sampling result: " + answer), nil
	}
	return askInput(mcp.InputRequestMap{"capital_question": sampleFor("What is the capital of France?", 100)}, ""), nil
}

func mrtrRoots(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for _, r := range req.Params.InputResponses {
		n := 0
		if l, ok := r.(*mcp.ListRootsResult); ok {
			n = len(l.Roots)
		}
		return text(fmt.Sprintf("Found %d root(s)", n)), nil
	}
	return askInput(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil
}

func mrtrRequestState(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s := req.Params.RequestState; s != "" && len(req.Params.InputResponses) > 0 {
		state, ok := openState(s)
		if !ok || state["kind"] != "request-state" {
			return nil, errTamperedState
		}
		return text("state-ok: requestState validated"), nil
	}
	return askInput(mcp.InputRequestMap{"confirm": elicitFor("Please confirm", "ok", "boolean")}, signState(map[string]any{"kind": "request-state"})), nil
}

func mrtrMultiple(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in := req.Params.InputResponses
	if s := req.Params.RequestState; s != "" && len(in) > 0 {
		if state, ok := openState(s); !ok || state["kind"] != "multiple-inputs" {
			return nil, errTamperedState
		}
		roots := 0
		if l, ok := in["client_roots"].(*mcp.ListRootsResult); ok {
			roots = len(l.Roots)
		}
		return text(fmt.Sprintf("Name: %s; Roots: %d; answers: %d", elicited(in["user_name"], "name"), roots, len(in))), nil
	}
	return askInput(mcp.InputRequestMap{
		"user_name":    elicitFor("What is your name?", "name", "string"),
		"greeting":     sampleFor("Generate a greeting", 50),
		"client_roots": &mcp.ListRootsParams{},
	}, signState(map[string]any{"kind": "multiple-inputs"})), nil
}

func mrtrMultiRound(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in := req.Params.InputResponses
	state, ok := openState(req.Params.RequestState)
	switch {
	case req.Params.RequestState != "" && !ok:
		return nil, errTamperedState
	case ok && state["round"] == float64(1) && in["step1"] != nil:
		return askInput(mcp.InputRequestMap{"step2": elicitFor("Step 2: What is your favorite color?", "color", "string")},
			signState(map[string]any{"round": 2, "name": elicited(in["step1"], "name")})), nil
	case ok && state["round"] == float64(2) && in["step2"] != nil:
		return text(fmt.Sprintf("Multi-round complete for %v who likes %s", state["name"], elicited(in["step2"], "color"))), nil
	}
	return askInput(mcp.InputRequestMap{"step1": elicitFor("Step 1: What is your name?", "name", "string")}, signState(map[string]any{"round": 1})), nil
}

func mrtrTampered(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s := req.Params.RequestState; s != "" {
		if _, ok := openState(s); !ok {
			return nil, errTamperedState
		}
		return text("Signed state verified."), nil
	}
	return askInput(mcp.InputRequestMap{"user_name": elicitFor("What is your name?", "name", "string")}, signState(map[string]any{"marker": "fixture-state"})), nil
}

func mrtrCapabilities(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if len(req.Params.InputResponses) > 0 {
		return text(fmt.Sprintf("capabilities-ok: %d answer(s)", len(req.Params.InputResponses))), nil
	}
	caps := req.ClientCapabilities()
	inputs := mcp.InputRequestMap{}
	if caps != nil && caps.Sampling != nil {
		inputs["capital_question"] = sampleFor("What is the capital of France?", 100)
	}
	if caps != nil && caps.Elicitation != nil {
		inputs["user_name"] = elicitFor("What is your name?", "name", "string")
	}
	if len(inputs) == 0 {
		return text("No input kind the client declared; completing without input."), nil
	}
	return askInput(inputs, ""), nil
}

func missingCapability(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}})
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs the sampling capability", Data: data}
	}
	return text("Sampling capability was declared."), nil
}

func loggingByLevel(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// The SDK sends a log message only to a request that set a level.
	_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-fixture", Data: "logLevel was set"})
	return text("Logging fixture executed."), nil
}

func streamingElicitation(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r, ok := req.Params.InputResponses["stream_input"]; ok {
		return text("Input received: " + elicited(r, "value")), nil
	}
	return askInput(mcp.InputRequestMap{"stream_input": elicitFor("Any value", "value", "string")}, ""), nil
}

// mrtrPrompt asks for context before it is given (input-required-result-
// non-tool-request).
func mrtrPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if r, ok := req.Params.InputResponses["user_context"]; ok {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Prompt with context: " + elicited(r, "context")}}}}, nil
	}
	return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": elicitFor("What context should the prompt use?", "context", "string")}}, nil
}
