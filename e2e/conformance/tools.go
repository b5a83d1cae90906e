package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Texts the scenarios name. A transparent proxy returns them unchanged.
const (
	simpleText            = "This is a simple text response for testing."
	errorText             = "This tool intentionally returns an error for testing"
	embeddedResourceURI   = "test://embedded-resource"
	embeddedResourceText  = "This is an embedded resource content."
	mixedIntroText        = "Multiple content types test:"
	mixedResourceURI      = "test://mixed-content-resource"
	mixedResourceJSON     = `{"test":"data","value":123}`
	reconnectionDoneText  = "Reconnection test completed: the result arrived after the server closed the request stream."
	jsonSchema202012Tool  = "json_schema_2020_12_tool"
	jsonSchema202012Draft = "https://json-schema.org/draft/2020-12/schema"
)

// stepDelay separates the log and progress notifications of one call, as
// the scenarios describe (~50ms).
const stepDelay = 50 * time.Millisecond

var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// jsonSchema202012 uses the 2020-12 keywords the scenario looks for in
// tools/list ($schema, $defs, additionalProperties: SEP-1613) and the ones
// later suite versions add ($anchor, allOf/anyOf, if/then/else: SEP-2106).
// It is sent as written; a proxy must pass these keywords on unmodified.
const jsonSchema202012 = `{"$schema":"` + jsonSchema202012Draft + `","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},` +
	`"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
	`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
	`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},` +
	`"then":{"required":["phone"]},"else":{"required":["email"]},` +
	`"additionalProperties":false}`

// tool is one tools/list entry and its handler.
type tool struct {
	name, title, description string
	schema                   json.RawMessage
	handler                  mcp.ToolHandler
}

var tools = []tool{
	{"test_simple_text", "Simple text", "Returns one text content block.", noArgs, simpleTextTool},
	{"test_image_content", "Image content", "Returns a 1x1 red PNG as image content.", noArgs, imageTool},
	{"test_audio_content", "Audio content", "Returns a short silent WAV as audio content.", noArgs, audioTool},
	{"test_embedded_resource", "Embedded resource", "Returns an embedded text resource.", noArgs, embeddedResourceTool},
	{"test_multiple_content_types", "Mixed content", "Returns text, image and embedded resource content.", noArgs, mixedContentTool},
	{"test_tool_with_logging", "Logging", "Sends three info log notifications, 50ms apart, while it runs.", noArgs, loggingTool},
	{"test_tool_with_progress", "Progress", "Reports progress 0, 50 and 100 of 100, 50ms apart, when the call carries a progress token.", noArgs, progressTool},
	{"test_error_handling", "Error", "Always fails with isError: true.", noArgs, errorTool},
	{"test_sampling", "Sampling", "Asks the client for an LLM completion of the prompt (sampling/createMessage).",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		samplingTool},
	{"test_elicitation", "Elicitation", "Asks the client for a username and an email address (elicitation/create).",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		elicitationTool},
	{"test_elicitation_sep1034_defaults", "Elicitation defaults", "Elicits a form whose string, integer, number, enum and boolean fields have defaults (SEP-1034).", noArgs, elicitationDefaultsTool},
	{"test_elicitation_sep1330_enums", "Elicitation enums", "Elicits a form with the five enum variants of SEP-1330.", noArgs, elicitationEnumsTool},
	{jsonSchema202012Tool, "JSON Schema 2020-12", "Tool with JSON Schema 2020-12 features",
		json.RawMessage(jsonSchema202012), jsonSchemaTool},
	{"test_reconnection", "Reconnection", "Closes its SSE response stream mid-call and answers after the client resumes it (SEP-1699).", noArgs, reconnectionTool},
}

func addTools(srv *mcp.Server) {
	for _, t := range slices.Concat(tools, mrtrTools) {
		srv.AddTool(&mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: t.schema}, t.handler)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// toolError is a tool-level failure: a result with isError, not a
// JSON-RPC error.
func toolError(format string, args ...any) *mcp.CallToolResult {
	r := text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// stringArg decodes the required string argument name.
func stringArg(req *mcp.CallToolRequest, name string) (string, error) {
	var args map[string]any
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return "", fmt.Errorf("arguments: %v", err)
		}
	}
	s, ok := args[name].(string)
	if !ok {
		return "", fmt.Errorf("missing string argument %q", name)
	}
	return s, nil
}

// pause waits d unless the call is cancelled first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func simpleTextTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return text(simpleText), nil
}

func imageTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"}}}, nil
}

func audioTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: silentWAV, MIMEType: "audio/wav"}}}, nil
}

func embeddedResourceTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
		URI: embeddedResourceURI, MIMEType: "text/plain", Text: embeddedResourceText,
	}}}}, nil
}

func mixedContentTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: mixedIntroText},
		&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: mixedResourceURI, MIMEType: "application/json", Text: mixedResourceJSON,
		}},
	}}, nil
}

// loggingTool sends its notifications with the handler's context, so that
// over streamable HTTP they travel on the call's own response stream.
func loggingTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	msgs := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
	for i, m := range msgs {
		if i > 0 {
			if err := pause(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "test_tool_with_logging", Data: m}); err != nil {
			return nil, err
		}
	}
	return text("Tool with logging executed successfully"), nil
}

func progressTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		if token == nil {
			continue
		}
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("%.0f/100", p),
		}); err != nil {
			return nil, err
		}
	}
	return text("Tool with progress executed successfully"), nil
}

func errorTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return toolError("%s", errorText), nil
}

func samplingTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	prompt, err := stringArg(req, "prompt")
	if err != nil {
		return toolError("%v", err), nil
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
		return toolError("the client does not support sampling"), nil
	}
	params := &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
		MaxTokens: 100,
	}
	var res *mcp.CreateMessageResult
	if modernRequest(req) {
		// A 2026-07-28 request is asked in its result (SEP-2322).
		in, ok := req.Params.InputResponses["sampling"]
		if !ok {
			return askInput(mcp.InputRequestMap{"sampling": params}, ""), nil
		}
		switch r := in.(type) {
		case *mcp.CreateMessageResult:
			res = r
		case *mcp.CreateMessageWithToolsResult:
			// How the SDK decodes an answer of several blocks, or any.
			res = &mcp.CreateMessageResult{Model: r.Model, Role: r.Role}
			if len(r.Content) > 0 {
				res.Content = r.Content[0]
			}
		default:
			return toolError("sampling failed: the answer is a %T", in), nil
		}
	} else {
		res, err = req.Session.CreateMessage(ctx, params)
	}
	if err != nil {
		return toolError("sampling failed: %v", err), nil
	}
	reply := "(non-text content)"
	if tc, ok := res.Content.(*mcp.TextContent); ok {
		reply = tc.Text
	}
	return text("LLM response: " + reply), nil
}

func elicitationTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	msg, err := stringArg(req, "message")
	if err != nil {
		return toolError("%v", err), nil
	}
	res, ask, err := elicit(ctx, req, msg, `{"type":"object","properties":{`+
		`"username":{"type":"string","description":"User's response"},`+
		`"email":{"type":"string","description":"User's email address"}},`+
		`"required":["username","email"]}`)
	if err != nil {
		return toolError("elicitation failed: %v", err), nil
	}
	if ask != nil {
		return ask, nil
	}
	return text("User response: " + describeElicitation(res)), nil
}

func elicitationDefaultsTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, ask, err := elicit(ctx, req, "Please review and update the form fields with defaults", `{"type":"object","properties":{`+
		`"name":{"type":"string","description":"User name","default":"John Doe"},`+
		`"age":{"type":"integer","description":"User age","default":30},`+
		`"score":{"type":"number","description":"User score","default":95.5},`+
		`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},`+
		`"verified":{"type":"boolean","description":"Verification status","default":true}}}`)
	if err != nil {
		return toolError("elicitation failed: %v", err), nil
	}
	if ask != nil {
		return ask, nil
	}
	return text("Elicitation completed: " + describeElicitation(res)), nil
}

func elicitationEnumsTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, ask, err := elicit(ctx, req, "Please select options from the enum fields", `{"type":"object","properties":{`+
		`"untitledSingle":{"type":"string","description":"Untitled single-select","enum":["option1","option2","option3"]},`+
		`"titledSingle":{"type":"string","description":"Titled single-select","oneOf":[`+
		`{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
		`"legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
		`"untitledMulti":{"type":"array","description":"Untitled multi-select","items":{"type":"string","enum":["option1","option2","option3"]}},`+
		`"titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[`+
		`{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`)
	if err != nil {
		return toolError("elicitation failed: %v", err), nil
	}
	if ask != nil {
		return ask, nil
	}
	return text("Elicitation completed: " + describeElicitation(res)), nil
}

// elicit sends a form elicitation with a literal requested schema, so that
// the request carries the schema exactly as written. A 2026-07-28 request
// cannot be sent requests during the call: it gets the elicitation in an
// input_required result (ask), and the retry brings the answer.
func elicit(ctx context.Context, req *mcp.CallToolRequest, message, schema string) (res *mcp.ElicitResult, ask *mcp.CallToolResult, err error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return nil, nil, errors.New("the client does not support elicitation")
	}
	params := &mcp.ElicitParams{Message: message, RequestedSchema: json.RawMessage(schema)}
	if !modernRequest(req) {
		res, err = req.Session.Elicit(ctx, params)
		return res, nil, err
	}
	in, ok := req.Params.InputResponses["elicitation"]
	if !ok {
		return nil, askInput(mcp.InputRequestMap{"elicitation": params}, ""), nil
	}
	if res, ok = in.(*mcp.ElicitResult); !ok {
		return nil, nil, fmt.Errorf("the answer is a %T", in)
	}
	return res, nil, nil
}

// modernRequest reports whether req is of protocol 2026-07-28, which asks
// for input in results rather than with requests to the client.
func modernRequest(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.GetMeta()[mcp.MetaKeyProtocolVersion].(string); ok {
		return v >= "2026-07-28"
	}
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

func describeElicitation(res *mcp.ElicitResult) string {
	content, err := json.Marshal(res.Content)
	if err != nil || res.Content == nil {
		content = []byte("{}")
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

func jsonSchemaTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := string(req.Params.Arguments)
	if args == "" {
		args = "{}"
	}
	return text("JSON Schema 2020-12 tool called with: " + args), nil
}

// reconnectionTool closes the call's SSE stream (with a retry hint) and
// answers a little later; with the event store the answer is replayed to the
// client when it resumes the stream with Last-Event-ID.
//
// Streams are resumable (they start with a priming event that carries an
// event ID) only from protocol 2025-11-25 on, and the SDK decides that from
// the request's MCP-Protocol-Version header. For an older header, closing the
// stream would lose the answer, so the tool just answers; likewise on stdio.
func reconnectionTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Extra != nil && req.Extra.CloseSSEStream != nil && req.Extra.Header.Get("Mcp-Protocol-Version") >= "2025-11-25" {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
	}
	if err := pause(ctx, 200*time.Millisecond); err != nil {
		return nil, err
	}
	return text(reconnectionDoneText), nil
}
