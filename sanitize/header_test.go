package sanitize

import (
	"strconv"
	"strings"
	"testing"
)

// TestToolHeaderCache: a tool source's header is built once and is the
// header newHeader builds; a prompt's or a resource's is not kept, and
// the cache stops growing at maxToolHeaders.
func TestToolHeaderCache(t *testing.T) {
	src := Source{Server: "cache-test", Tool: "echo<x>"}
	first := toolHeader(src)
	if *first != newHeader(src) {
		t.Fatalf("cached header %q, built %q", first.attrs, newHeader(src).attrs)
	}
	if again := toolHeader(src); again != first {
		t.Error("a tool's header was built again")
	}
	for _, s := range []Source{{Server: "cache-test", Prompt: "p"}, {Server: "cache-test", Resource: "file:///x"}, {Server: "cache-test", Tool: strings.Repeat("t", 2*maxAttrLen)}} {
		if h := toolHeader(s); *h != newHeader(s) {
			t.Errorf("%+v: header %q, want %q", s, h.attrs, newHeader(s).attrs)
		}
		if _, kept := toolHeaders.Load(s); kept {
			t.Errorf("%+v: kept", s)
		}
	}
	for i := 0; toolHeaderLen.Load() < maxToolHeaders; i++ {
		toolHeader(Source{Server: "fill", Tool: strconv.Itoa(i)})
	}
	over := Source{Server: "fill", Tool: "one-more"}
	if h := toolHeader(over); *h != newHeader(over) {
		t.Errorf("header past the bound %q", h.attrs)
	}
	if _, kept := toolHeaders.Load(over); kept || toolHeaderLen.Load() != maxToolHeaders {
		t.Errorf("cache grew past %d: %d", maxToolHeaders, toolHeaderLen.Load())
	}
}
