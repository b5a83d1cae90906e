package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestStdio drives the fixture over stdio with the Go SDK client, pinned to
// protocol 2025-11-25 (the version the conformance scenarios negotiate), and
// checks the behaviours the scenarios rely on.
func TestStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	var logs []string
	var progress []float64
	updated := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "echo " + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "u", "email": "u@example.com"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, req.Params.Data.(string))
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Progress)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(fixtureBin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	init := cs.InitializeResult()
	if init.ServerInfo.Name != serverName {
		t.Errorf("serverInfo.name = %q, want %q", init.ServerInfo.Name, serverName)
	}
	caps := init.Capabilities
	if caps.Logging == nil || caps.Completions == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Tools == nil || caps.Prompts == nil {
		t.Errorf("capabilities = %+v, want logging, completions, tools, prompts and resources with subscribe", caps)
	}

	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(tools) + len(mrtrTools) + len(taskTools); len(lt.Tools) != want {
		t.Errorf("tools/list has %d tools, want %d", len(lt.Tools), want)
	}
	for _, tl := range lt.Tools {
		if tl.Name == jsonSchema202012Tool {
			var want any
			if err := json.Unmarshal([]byte(jsonSchema202012), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tl.InputSchema, want) {
				t.Errorf("%s inputSchema = %v, want %s", tl.Name, tl.InputSchema, jsonSchema202012)
			}
		}
	}

	callText := func(name string, args any, meta mcp.Meta) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if got, _ := callText("test_simple_text", nil, nil); got != simpleText {
		t.Errorf("test_simple_text = %q", got)
	}
	if got, isErr := callText("test_error_handling", nil, nil); !isErr || got != errorText {
		t.Errorf("test_error_handling = %q, isError %v", got, isErr)
	}
	if got, _ := callText("test_sampling", map[string]any{"prompt": "hi"}, nil); got != "LLM response: echo hi" {
		t.Errorf("test_sampling = %q", got)
	}
	if got, _ := callText("test_elicitation", map[string]any{"message": "who?"}, nil); !strings.HasPrefix(got, "User response: action=accept, content=") || !strings.Contains(got, `"username":"u"`) {
		t.Errorf("test_elicitation = %q", got)
	}
	if got, _ := callText("test_reconnection", nil, nil); got != reconnectionDoneText {
		t.Errorf("test_reconnection = %q", got)
	}

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	callText("test_tool_with_logging", nil, nil)
	callText("test_tool_with_progress", nil, mcp.Meta{"progressToken": "p1"})
	// Notifications are written before the result on the single stdio
	// stream; give the client's dispatcher a moment.
	testutil.Eventually(t, 5*time.Second, "3 log messages and 3 progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) == 3 && len(progress) == 3
	})
	mu.Lock()
	if strings.Join(logs, "|") != "Tool execution started|Tool processing data|Tool execution completed" {
		t.Errorf("log messages = %q", logs)
	}
	if progress[0] != 0 || progress[1] != 50 || progress[2] != 100 {
		t.Errorf("progress = %v", progress)
	}
	mu.Unlock()

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/123/data"})
	if err != nil {
		t.Fatal(err)
	}
	if c := rr.Contents[0]; c.MIMEType != "application/json" || c.Text != `{"id":"123","templateTest":true,"data":"Data for ID: 123"}` {
		t.Errorf("template read = %+v", c)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://no-such-resource"}); err == nil {
		t.Error("reading an unknown resource succeeded")
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: watchedURI}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != watchedURI {
			t.Errorf("resources/updated for %q", uri)
		}
	case <-time.After(5 * time.Second):
		t.Error("no notifications/resources/updated after subscribing")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: watchedURI}); err != nil {
		t.Fatal(err)
	}

	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: argsPromptName, Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := gp.Messages[0].Content.(*mcp.TextContent).Text; got != "Prompt with arguments: arg1='a', arg2='b'" {
		t.Errorf("prompt text = %q", got)
	}

	cr, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: argsPromptName},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "par"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cr.Completion.Values, ",") != "paris,park,party" {
		t.Errorf("completion values = %q", cr.Completion.Values)
	}
}

// TestStdioModernInput: over protocol 2026-07-28 the legacy scenarios'
// sampling and elicitation tools ask in an input_required result (the
// protocol forbids requests to the client during a call), and the SDK
// client's retry with the answer completes them.
func TestStdioModernInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-modern-test", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "echo " + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "u", "email": "u@example.com"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(fixtureBin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"test_sampling", map[string]any{"prompt": "hi"}, "LLM response: echo hi"},
		{"test_elicitation", map[string]any{"message": "who?"}, `User response: action=accept, content={"email":"u@example.com","username":"u"}`},
		{"test_elicitation_sep1034_defaults", nil, "Elicitation completed: action=accept"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		got := ""
		if len(res.Content) > 0 {
			got = res.Content[0].(*mcp.TextContent).Text
		}
		if res.IsError || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q (error %v), want %q", tc.tool, got, res.IsError, tc.want)
		}
	}
}
