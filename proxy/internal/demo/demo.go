package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers names the demo servers `switchboard demo-server` can run.
var Servers = []string{"clock", "notes"}

// Run serves one demo MCP server over stdin/stdout, naming version as its own.
func Run(ctx context.Context, name, version string) error {
	var s *mcp.Server
	switch name {
	case "clock":
		s = clockServer(version)
	case "notes":
		s = notesServer(version)
	default:
		return fmt.Errorf("unknown demo server %q (have %s)", name, strings.Join(Servers, ", "))
	}
	return s.Run(ctx, &mcp.StdioTransport{})
}

type nowArgs struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone such as Europe/Paris; default UTC"`
}

type diffArgs struct {
	From string `json:"from" jsonschema:"RFC 3339 time"`
	To   string `json:"to" jsonschema:"RFC 3339 time"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func clockServer(version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "now", Description: "Current time in a time zone, RFC 3339."},
		func(_ context.Context, _ *mcp.CallToolRequest, a nowArgs) (*mcp.CallToolResult, any, error) {
			loc := time.UTC
			if a.Timezone != "" {
				l, err := time.LoadLocation(a.Timezone)
				if err != nil {
					return nil, nil, fmt.Errorf("unknown time zone %q", a.Timezone)
				}
				loc = l
			}
			return text(time.Now().In(loc).Format(time.RFC3339)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "unix", Description: "Current Unix time in seconds."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(time.Now().Unix())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "between", Description: "Duration between two RFC 3339 times."},
		func(_ context.Context, _ *mcp.CallToolRequest, a diffArgs) (*mcp.CallToolResult, any, error) {
			from, err := time.Parse(time.RFC3339, a.From)
			if err != nil {
				return nil, nil, fmt.Errorf("from: %w", err)
			}
			to, err := time.Parse(time.RFC3339, a.To)
			if err != nil {
				return nil, nil, fmt.Errorf("to: %w", err)
			}
			return text(to.Sub(from).String()), nil, nil
		})
	return s
}

type noteArgs struct {
	Title string `json:"title" jsonschema:"note title"`
	Text  string `json:"text" jsonschema:"note body"`
}

type titleArgs struct {
	Title string `json:"title" jsonschema:"note title"`
}

func notesServer(version string) *mcp.Server {
	var mu sync.Mutex
	notes := map[string]string{}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Store a note under a title (replaces an existing one)."},
		func(_ context.Context, _ *mcp.CallToolRequest, a noteArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			notes[a.Title] = a.Text
			return text(fmt.Sprintf("stored note %q", a.Title)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list", Description: "List note titles."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			titles := make([]string, 0, len(notes))
			for t := range notes {
				titles = append(titles, t)
			}
			sort.Strings(titles)
			if len(titles) == 0 {
				return text("no notes yet"), nil, nil
			}
			return text(strings.Join(titles, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get", Description: "Read the note with a title."},
		func(_ context.Context, _ *mcp.CallToolRequest, a titleArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			n, ok := notes[a.Title]
			if !ok {
				return nil, nil, fmt.Errorf("no note titled %q", a.Title)
			}
			return text(n), nil, nil
		})
	return s
}
