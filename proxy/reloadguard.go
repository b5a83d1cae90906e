package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// settleRounds bounds how long settle waits for a file that keeps
// changing: this many debounce periods.
const settleRounds = 50

// hasTrigger reports whether reason (triggers joined by "+") holds t.
func hasTrigger(reason, t string) bool {
	for _, r := range strings.Split(reason, "+") {
		if r == t {
			return true
		}
	}
	return false
}

// deliberate reports whether a reload was asked for by an operator
// (SIGHUP, POST /admin/reload) rather than seen in a file change.
func deliberate(reason string) bool {
	return hasTrigger(reason, "sighup") || hasTrigger(reason, "admin")
}

// settle reads the config file until two reads reloadDebounce apart
// return the same bytes, and returns them; a writer that pauses longer
// than the debounce would otherwise have its half-written file applied.
// Triggers that arrive meanwhile join *reason. A read error is settled
// like content (nil data): reload then reads the file itself and reports
// it. The error is the context's, or errUnsettled.
func (p *Proxy) settle(ctx context.Context, reason *string) ([]byte, error) {
	prev, prevErr := os.ReadFile(p.opts.ConfigPath)
	for range settleRounds {
		t := time.NewTimer(reloadDebounce)
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case r := <-p.reloadReq:
				if !hasTrigger(*reason, r) {
					*reason += "+" + r
				}
			case <-t.C:
				break wait
			}
		}
		cur, err := os.ReadFile(p.opts.ConfigPath)
		if (err == nil) == (prevErr == nil) && bytes.Equal(cur, prev) {
			if err != nil {
				return nil, nil
			}
			return cur, nil
		}
		prev, prevErr = cur, err
	}
	return nil, errUnsettled
}

// errUnsettled is settle's answer for a file that changed at every read;
// the reload is skipped, and the file's next change triggers another.
var errUnsettled = errors.New("config file still changing")

// serverKeys lists the servers c runs (enabled, by handle key: an agent's
// own server is key@agent), sorted.
func serverKeys(c *config.Config) map[string]bool {
	_, specs := view.Plan(c)
	keys := make(map[string]bool, len(specs))
	for k := range specs {
		keys[k] = true
	}
	return keys
}

// removalGuard returns the servers that applying c in place of old
// removes. A file change that removes every server, or more than half of
// them, is refused: it is more likely a half-written or truncated file
// than an edit (a YAML writer that paused after "mcpServers:" once retired
// every server). SIGHUP and POST /admin/reload apply it.
func removalGuard(old, c *config.Config, reason string) ([]string, error) {
	was, now := serverKeys(old), serverKeys(c)
	var removed []string
	for k := range was {
		if !now[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(removed)
	if len(removed) == 0 || deliberate(reason) || 2*len(removed) <= len(was) {
		return removed, nil
	}
	what := "more than half of the servers"
	if len(removed) == len(was) {
		what = "every server"
	}
	return nil, &ConfigError{fmt.Errorf("the changed config file removes %s (%d of %d: %s); refused, as a file still being written looks the same: "+
		"send SIGHUP or POST /admin/reload to apply it", what, len(removed), len(was), strings.Join(removed, ", "))}
}
