package upstream_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// orderPeer records whether a progress notification arrived, and whether
// it was still the call's turn when it did.
type orderPeer struct {
	progress atomic.Int32
	returned atomic.Bool
	late     atomic.Int32 // notifications that came after the call returned
}

func (p *orderPeer) Notify(_ context.Context, _ *upstream.Handle, params any) {
	if _, ok := params.(*mcp.ProgressNotificationParams); ok {
		time.Sleep(20 * time.Millisecond) // a slow downstream write
		if p.returned.Load() {
			p.late.Add(1)
		}
		p.progress.Add(1)
	}
}

func (p *orderPeer) Request(context.Context, *upstream.Handle, *mcp.ClientSession, string, mcp.Params) (mcp.Result, error) {
	return nil, nil
}

// TestCallReturnsAfterItsNotifications: a stdio tools/call that bypasses the
// SDK session returns only after the progress notification the server sent
// before its result was handled, and the session reported it as handled
// (no wait ran out).
func TestCallReturnsAfterItsNotifications(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "order", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, err
		})
	peer := &orderPeer{}
	log, _ := testLogger(t)
	spec := fakeSpec("order")
	h := upstream.New(spec, upstream.Options{Logger: log, Peer: peer,
		Dial: func(upstream.Spec) (mcp.Transport, error) {
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			if _, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil); err != nil {
				return nil, err
			}
			return upstream.PipeTransport(cr, cw), nil
		}})
	t.Cleanup(func() { h.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for i := range 5 {
		res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "work", Arguments: map[string]any{},
			Meta: mcp.Meta{"progressToken": i}})
		peer.returned.Store(true)
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		if got := peer.progress.Load(); got != int32(i+1) {
			t.Fatalf("call %d returned with %d progress notifications handled, want %d", i, got, i+1)
		}
		peer.returned.Store(false)
	}
	direct, late := upstream.LineCall(h)
	if !direct {
		t.Fatal("the stdio session does not send tools/call over its line connection")
	}
	if late != 0 || peer.late.Load() != 0 {
		t.Errorf("%d calls waited out the bound, %d notifications came after their call", late, peer.late.Load())
	}
}
