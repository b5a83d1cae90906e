package dispatch

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// setLevel gives every upstream of view id the most verbose level any of
// its sessions asked for; each session still gets only what its own level
// lets through.
func (d *Dispatcher) setLevel(ctx context.Context, id string) {
	var min mcp.LoggingLevel
	d.EachSession(func(ss *session.Session, viewID string) {
		if l := ss.LogLevel(); viewID == id && l != "" && (min == "" || session.LevelRank(l) < session.LevelRank(min)) {
			min = l
		}
	})
	if min == "" {
		return
	}
	vs, ok := d.serving.Load().Snap.Views[id]
	if !ok {
		return
	}
	var wg sync.WaitGroup
	for _, e := range vs.Servers {
		if e.Handle == nil {
			continue
		}
		wg.Go(func() {
			if err := e.Handle.SetLoggingLevel(ctx, min); err != nil {
				d.log.Debug("upstream logging level", "upstream", e.Key, "error", err)
			}
		})
	}
	wg.Wait()
}
