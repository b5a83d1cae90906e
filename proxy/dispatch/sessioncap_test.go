package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// TestTakeWait: a place under maxSessions held by a session is waited for
// and taken once it is given back; with none given back the wait ends in
// ErrSessionLimit saying how many are held.
func TestTakeWait(t *testing.T) {
	var c sessionCounts
	pr := Principal{TokenID: "t", Holder: Holder{1}}
	if err := c.take(pr, 1); err != nil {
		t.Fatal(err)
	}
	held, err := c.takeWait(context.Background(), pr, 1, 10*time.Millisecond)
	if !errors.Is(err, session.ErrSessionLimit) || held != 1 {
		t.Fatalf("takeWait over the limit: %d, %v; want 1 and ErrSessionLimit", held, err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.takeWait(context.Background(), pr, 1, time.Minute)
		got <- err
	}()
	c.give(pr)
	if err := <-got; err != nil {
		t.Fatalf("takeWait after a place was given back: %v", err)
	}
	if _, err := c.takeWait(context.Background(), Principal{TokenID: "other", Holder: Holder{2}}, 1, time.Minute); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.takeWait(ctx, pr, 1, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("takeWait of a cancelled request: %v", err)
	}
}

// TestCountsKeyedByTokenValue: the places a token holds are the token
// value's, whatever its place in auth.tokens (TokenID) is after a reload.
func TestCountsKeyedByTokenValue(t *testing.T) {
	var c sessionCounts
	if err := c.take(Principal{TokenID: "auth.tokens[1]", Holder: Holder{7}}, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.take(Principal{TokenID: "auth.tokens[0]", Holder: Holder{7}}, 1); !errors.Is(err, session.ErrSessionLimit) {
		t.Fatalf("the same token at another place in auth.tokens: %v, want ErrSessionLimit", err)
	}
	if err := c.take(Principal{TokenID: "auth.tokens[1]", Holder: Holder{8}}, 1); err != nil {
		t.Fatalf("another token at the place the first had: %v", err)
	}
}
