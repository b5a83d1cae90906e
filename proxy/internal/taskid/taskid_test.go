package taskid

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	c := New()
	ref := Ref{Tool: "mcp_a_slow", Server: "a", Upstream: "task-1.2/x"}
	id, err := c.Seal(ref, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(id, ref.Upstream) {
		t.Errorf("the ID %q shows the upstream's ID in the clear", id)
	}
	got, err := c.Open(id, "alice")
	if err != nil || got != ref {
		t.Fatalf("Open = %+v, %v; want %+v", got, err, ref)
	}
	// Another caller, another key: unknown, as a never-issued ID.
	if _, err := c.Open(id, "bob"); !errors.Is(err, ErrUnknown) {
		t.Errorf("another caller's Open: %v, want ErrUnknown", err)
	}
	if _, err := New().Open(id, "alice"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Open under another key: %v, want ErrUnknown", err)
	}
	// A forged namespace: the server part of another ID.
	other, _ := c.Seal(Ref{Tool: "mcp_b_slow", Server: "b", Upstream: "task-1.2/x"}, "alice")
	p, q := strings.Split(id, "."), strings.Split(other, ".")
	p[2] = q[2]
	if _, err := c.Open(strings.Join(p, "."), "alice"); !errors.Is(err, ErrUnknown) {
		t.Errorf("forged server: %v, want ErrUnknown", err)
	}
	for _, bad := range []string{"", "task-1", "swt1.", "swt1.a.b.c", "swt1.a.b.c.d.e", id + "=", "swt1.YQ.YQ..AAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := c.Open(bad, "alice"); !errors.Is(err, ErrMalformed) {
			t.Errorf("Open(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestSealRefusesLongIDs(t *testing.T) {
	c := New()
	if _, err := c.Seal(Ref{Upstream: strings.Repeat("x", MaxUpstreamID+1)}, "a"); err == nil {
		t.Error("an over-long upstream ID was sealed")
	}
	if _, err := c.Seal(Ref{}, "a"); err == nil {
		t.Error("an empty upstream ID was sealed")
	}
}

func TestSharedKey(t *testing.T) {
	a, b := WithKey([]byte("s")), WithKey([]byte("s"))
	id, _ := a.Seal(Ref{Tool: "t", Server: "s", Upstream: "u"}, "c")
	if _, err := b.Open(id, "c"); err != nil {
		t.Errorf("a replica with the same key: %v", err)
	}
}

func TestFollowing(t *testing.T) {
	secret := []byte("one")
	a, b := Following(func() []byte { return secret }), Following(func() []byte { return secret })
	id, _ := a.Seal(Ref{Tool: "t", Server: "s", Upstream: "u"}, "c")
	if _, err := b.Open(id, "c"); err != nil {
		t.Errorf("a replica following the same key: %v", err)
	}
	if _, err := WithKey([]byte("one")).Open(id, "c"); err != nil {
		t.Errorf("WithKey of the same secret: %v", err)
	}
	secret = []byte("two") // a reload changed it
	if _, err := b.Open(id, "c"); !errors.Is(err, ErrUnknown) {
		t.Errorf("an ID sealed under the key before: %v, want ErrUnknown", err)
	}
}

// FuzzOpen: Open never panics, and what opens is what was sealed.
func FuzzOpen(f *testing.F) {
	c := WithKey([]byte("fuzz"))
	seed, _ := c.Seal(Ref{Tool: "t", Server: "s", Upstream: "u-1"}, "c")
	f.Add(seed, "t", "s", "u-1")
	f.Add("swt1.....", "", "", "x")
	f.Add("swt1.YQ.YQ.YQ.AAAAAAAAAAAAAAAAAAAAAA", "a", "a", "a")
	f.Fuzz(func(t *testing.T, id, tool, server, up string) {
		if ref, err := c.Open(id, "c"); err == nil {
			again, _ := c.Seal(ref, "c")
			if again != id {
				t.Fatalf("%q opened to %+v, which seals to %q", id, ref, again)
			}
		}
		ref := Ref{Tool: tool, Server: server, Upstream: up}
		sealed, err := c.Seal(ref, "c")
		if err != nil {
			return
		}
		got, err := c.Open(sealed, "c")
		if err != nil || got != ref {
			t.Fatalf("Seal/Open(%+v) = %+v, %v", ref, got, err)
		}
	})
}
