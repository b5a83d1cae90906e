package session

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestClientCache: a client's capabilities and info are decoded once and
// shared; invalid ones are refused every time; past the bound, nothing
// more is kept, and decoding still answers.
func TestClientCache(t *testing.T) {
	var c clientCache
	caps, info := json.RawMessage(`{"sampling":{},"roots":{"listChanged":true}}`), json.RawMessage(`{"name":"c","version":"1"}`)
	c1, i1, err := c.of(caps, info)
	if err != nil || c1.Sampling == nil || c1.RootsV2 == nil || !c1.RootsV2.ListChanged || i1.Name != "c" {
		t.Fatalf("decoded %+v %+v %v", c1, i1, err)
	}
	if c2, i2, _ := c.of(caps, info); c2 != c1 || i2 != i1 {
		t.Error("the same client's capabilities were decoded again")
	}
	for range 2 {
		if _, _, err := c.of(json.RawMessage(`[]`), info); err == nil {
			t.Error("capabilities that are no object were accepted")
		}
		if _, _, err := c.of(caps, json.RawMessage(`"x"`)); err == nil {
			t.Error("client info that is no object was accepted")
		}
	}
	for i := range maxClientCache + 10 {
		if _, _, err := c.of(caps, json.RawMessage(fmt.Sprintf(`{"name":"c%d","version":"1"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.n.Load(); n != maxClientCache {
		t.Errorf("%d clients kept, want %d", n, maxClientCache)
	}
	// The last client found answers without a lookup; another client is
	// never taken for it, even when their bytes run together alike.
	other := json.RawMessage(`{"name":"c0","version":"1"}`)
	o1, oi1, _ := c.of(caps, other)
	for range 3 {
		if c2, i2, _ := c.of(caps, info); c2 != c1 || i2 != i1 {
			t.Fatal("the first client's capabilities were decoded again, or another's returned")
		}
		if c2, i2, _ := c.of(caps, other); c2 != o1 || i2 != oi1 || i2.Name != "c0" {
			t.Fatalf("client c0 got %+v", i2)
		}
	}
	shifted, _, _ := c.of(json.RawMessage(`{}`), json.RawMessage(`{"name":"x","version":"1"}`))
	if c.last.Load().is(json.RawMessage(`{}`), json.RawMessage(`{"name":"x","version":"2"}`)) || shifted == nil {
		t.Error("a client with other info matched the last one")
	}
}
