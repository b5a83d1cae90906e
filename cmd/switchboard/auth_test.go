package main

import (
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// TestForgetEveryCaller: auth logout NAME forgets the server's own token
// and every caller's (token_exchange keeps one per caller), and no other
// server's.
func TestForgetEveryCaller(t *testing.T) {
	st := oauth.NewMemoryStore()
	for _, k := range []oauth.Key{{Server: "up"}, {Server: "up", Principal: "a1"}, {Server: "up", Principal: "b2"}, {Server: "other"}} {
		if err := st.Save(k, &oauth.Entry{Token: &oauth2.Token{AccessToken: "t"}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := callers(st, "up"); n != 2 {
		t.Errorf("callers: %d, want 2", n)
	}
	n, err := forget(st, "up")
	if err != nil || n != 3 {
		t.Fatalf("forget: %d, %v; want 3", n, err)
	}
	ks, _ := st.Keys()
	if len(ks) != 1 || ks[0].Server != "other" {
		t.Errorf("left: %v, want only other's", ks)
	}
}
