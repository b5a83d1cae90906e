package dispatch

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestCallerFound: a caller's requests share one found set; callers do
// not share theirs; a set expires after callerIdle without activity, and
// no more than maxCallers are kept, the least recently active dropped
// first.
func TestCallerFound(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newCallerFound(func() time.Time { return now })
	c.of("a").add([]string{"mcp_x_add"})
	if got := c.of("a").list(); !slices.Equal(got, []string{"mcp_x_add"}) {
		t.Fatalf("the caller's next request sees %v, want [mcp_x_add]", got)
	}
	if got := c.of("b").list(); len(got) != 0 {
		t.Fatalf("another caller sees %v", got)
	}
	now = now.Add(callerIdle - time.Second)
	if got := c.of("a").list(); len(got) != 1 {
		t.Fatalf("within callerIdle of its last use: %v", got)
	}
	now = now.Add(callerIdle + time.Second)
	if got := c.of("a").list(); len(got) != 0 {
		t.Fatalf("after callerIdle without use: %v, want nothing", got)
	}
	c.of("a").add([]string{"mcp_x_add"})
	for i := range maxCallers + 10 {
		now = now.Add(time.Millisecond)
		if i == maxCallers/2 {
			c.of("a") // a is active again: others go before it
		}
		c.of(fmt.Sprint("caller", i))
	}
	if n := c.len(); n != maxCallers {
		t.Errorf("%d callers kept, want %d", n, maxCallers)
	}
	if got := c.of("a").list(); len(got) != 1 {
		t.Errorf("an active caller's set was dropped before idler ones: %v", got)
	}
}
