package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestGoSDKClients is TestTypeScriptClients' matrix for the go-sdk client,
// pinned to 2026-07-28 and to 2025-11-25, against /mcp and serve --stdio:
// tools, a call, a call's progress and a log message, sampling, two rounds
// of elicitation, roots (through a per-client server), a resource, a
// prompt, and a subscribed resource's update.
//
// A 2026-07-28 client in a view with a per-client server is offered a
// legacy session (docs/protocol.md); pinned to 2026-07-28, the go-sdk then
// falls back to 2025-11-25. In a view without one it speaks 2026-07-28,
// and the roots step is left out.
func TestGoSDKClients(t *testing.T) {
	t.Parallel()
	fx := map[string]any{"command": fixture, "args": []string{"--name", "f"}}
	for _, tc := range []struct {
		name    string
		servers map[string]any
		roots   bool
	}{
		{"per-client", map[string]any{"f": fx, "p": map[string]any{"command": fixture, "args": []string{"--name", "p"}, "isolation": "per-client"}}, true},
		{"shared", map[string]any{"f": fx}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startSwitchboard(t, map[string]any{"servers": tc.servers})
			for _, transport := range []string{"http", "stdio"} {
				for _, version := range []string{"2026-07-28", "2025-11-25"} {
					t.Run(transport+"/"+version, func(t *testing.T) {
						var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"}
						if transport == "stdio" {
							cmd := newCmd(switchboard, "serve", "--stdio", "--config", s.config)
							cmd.Stderr = os.Stderr
							tr = &mcp.CommandTransport{Command: cmd}
						}
						want := version
						if tc.roots {
							want = "2025-11-25"
						}
						goSDKSteps(t, tr, version, want, tc.roots)
					})
				}
			}
		})
	}
}

// goSDKSteps connects a go-sdk client pinned to version and runs the
// matrix's steps; the session must speak want.
func goSDKSteps(t *testing.T, tr mcp.Transport, version, want string, roots bool) {
	var progress, logs, updated atomic.Int32
	opts := &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the client"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n := questionRE.FindStringSubmatch(req.Params.Message)
			if n == nil {
				return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "a" + n[1]}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
		ResourceUpdatedHandler:      func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updated.Add(1) },
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-go-" + version, Version: "1"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///go-client-root", Name: "root"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Errorf("protocol %q, want %q", got, want)
	}
	modern := want >= "2026-07-28"
	meta := mcp.Meta{}
	if modern {
		meta["io.modelcontextprotocol/logLevel"] = "info"
	}
	testutil.Eventually(t, 20*time.Second, "the fixture's tools", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_f_echo"] != nil && (!roots || tools["mcp_p_roots"] != nil)
	})
	check := func(step string, res *mcp.CallToolResult, err error, want string) {
		t.Helper()
		switch {
		case err != nil:
			t.Errorf("%s: %v", step, err)
		case res.IsError || !strings.Contains(textOf(res), want):
			t.Errorf("%s: %s, want %q", step, textOf(res), want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_echo", Arguments: map[string]any{"text": "from go"}})
	check("call", res, err, "from go")

	if !modern {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Errorf("logging/setLevel: %v", err)
		}
	}
	pm := mcp.Meta{"progressToken": "p1"}
	for k, v := range meta {
		pm[k] = v
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_progress", Arguments: map[string]any{"steps": 3}, Meta: pm})
	check("progress", res, err, "done")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_log", Arguments: map[string]any{"level": "info", "message": "from the fixture"}, Meta: meta})
	check("log", res, err, "logged")
	testutil.Eventually(t, 10*time.Second, "3 progress notifications and a log message", func() bool { return progress.Load() == 3 && logs.Load() >= 1 })

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_sample", Arguments: map[string]any{"prompt": "hi"}})
	check("sampling", res, err, "sampled by the client")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_elicit_rounds", Arguments: map[string]any{"rounds": 2}})
	check("elicitation in two rounds", res, err, "a1,a2")
	if roots {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_p_roots", Arguments: map[string]any{}})
		check("roots", res, err, "file:///go-client-root")
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://static/hello"})
	if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "hello from f") {
		t.Errorf("resources/read: %v %+v", err, read)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp_f_greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(prompt.Messages) == 0 {
		t.Errorf("prompts/get: %v %+v", err, prompt)
	}

	// Subscribe is resources/subscribe on a legacy session and a
	// subscriptions/listen stream on 2026-07-28, which the go-sdk opens
	// without waiting for its acknowledgement: the resource is touched
	// until an update arrives.
	const uri = "fixture://static/hello"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	testutil.Eventually(t, 10*time.Second, "notifications/resources/updated", func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_f_touch_resource", Arguments: map[string]any{"uri": uri}})
		check("touch_resource", res, err, "")
		return updated.Load() >= 1
	})
}
