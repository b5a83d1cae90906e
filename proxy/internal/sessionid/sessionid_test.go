package sessionid

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func sealer(t *testing.T, secret, replica string) *Sealer {
	t.Helper()
	s, err := New([]byte(secret), replica)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const key = "0123456789abcdef0123456789abcdef-deployment"

var state = State{
	Version: "2025-11-25",
	Caps:    json.RawMessage(`{"roots":{"listChanged":true},"sampling":{}}`),
	Client:  "secret-client-name",
	ClientV: "9.9.9",
	View:    "billing-agent",
	Holder:  []byte("0123456789abcdef"),
	Issued:  1764300000,
}

func TestRoundTripAcrossReplicas(t *testing.T) {
	r1, r2 := sealer(t, key, "r1"), sealer(t, key, "r2")
	id := r1.Seal(state)
	if !strings.HasPrefix(id, "r1.") || ReplicaOf(id) != "r1" {
		t.Fatalf("ID %q does not name its replica", id)
	}
	for name, s := range map[string]*Sealer{"minting replica": r1, "another replica": r2} {
		got, err := s.Open(id)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got.Caps) != string(state.Caps) || got.Version != state.Version || got.View != state.View ||
			!bytes.Equal(got.Holder, state.Holder) || got.Issued != state.Issued || got.Client != state.Client || got.ClientV != state.ClientV {
			t.Fatalf("%s: opened %+v, want %+v", name, got, state)
		}
	}
	rekeyed := sealer(t, "another key of at least thirty-two bytes", "r1").Rekey([]byte(key))
	if got, err := rekeyed.Open(id); err != nil || got.View != state.View || ReplicaOf(rekeyed.Seal(state)) != "r1" {
		t.Fatalf("a Sealer rekeyed to the deployment's key: opened %+v, %v", got, err)
	}
	if again := r1.Seal(state); again == id {
		t.Fatal("two IDs for one state are equal: the nonce is not fresh")
	}
}

func TestRefused(t *testing.T) {
	r1 := sealer(t, key, "r1")
	id := r1.Seal(state)
	foreign := sealer(t, key+"-other", "r1")
	cases := map[string]string{
		"empty":               "",
		"no token":            "r1.",
		"not base64":          "r1.!!!!",
		"padded":              id + "==",
		"short":               "r1." + b64.EncodeToString(make([]byte, 20)),
		"replica moved":       "r2" + id[2:],
		"replica dropped":     id[3:],
		"foreign key":         foreign.Seal(state),
		"too long":            "r1." + strings.Repeat("A", MaxLen),
		"sealed but no state": r1.sealRaw(t, []byte(`{"c":{}}`)),
	}
	for name, bad := range cases {
		if _, err := r1.Open(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Open(%q) = %v, want ErrInvalid", name, bad, err)
		}
	}
	// Every one-character change of the token is refused.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := len("r1."); i < len(id); i++ {
		for _, c := range []byte{alphabet[(strings.IndexByte(alphabet, id[i])+1)%64], alphabet[(strings.IndexByte(alphabet, id[i])+33)%64]} {
			bad := id[:i] + string(c) + id[i+1:]
			if _, err := r1.Open(bad); err == nil {
				t.Fatalf("changing character %d of %q to %q still opens", i, id, c)
			}
		}
	}
}

// sealRaw seals plain as Seal seals a state, to test what Open does with
// a sealed message that is not one.
func (s *Sealer) sealRaw(t *testing.T, plain []byte) string {
	t.Helper()
	nonce := make([]byte, s.aead.NonceSize())
	return s.replica + "." + b64.EncodeToString(s.aead.Seal(nonce, nonce, plain, ad(s.replica)))
}

func TestRevealsNothing(t *testing.T) {
	id := sealer(t, key, "r1").Seal(state)
	raw, err := b64.DecodeString(id[len("r1."):])
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{state.Version, state.Client, state.View, string(state.Holder), "roots", "listChanged"} {
		if strings.Contains(id, secret) || strings.Contains(string(raw), secret) {
			t.Errorf("ID %q reveals %q", id, secret)
		}
	}
}

func TestLargeStateCut(t *testing.T) {
	s := sealer(t, key, "r1")
	big := state
	big.Client = strings.Repeat("n", 2*MaxLen)
	id := s.Seal(big)
	got, err := s.Open(id)
	if err != nil || len(id) > MaxLen || got.Client != "" || string(got.Caps) != string(state.Caps) {
		t.Fatalf("large client name: ID of %d bytes, opened %+v, %v; want the name cut, the caps kept", len(id), got, err)
	}
	big.Caps = json.RawMessage(`{"x":"` + strings.Repeat("c", 2*MaxLen) + `"}`)
	id = s.Seal(big)
	if got, err = s.Open(id); err != nil || len(id) > MaxLen || got.Caps != nil || got.View != state.View {
		t.Fatalf("large caps: ID of %d bytes, opened %+v, %v; want the caps cut, the view kept", len(id), got, err)
	}
}

// TestHolderDigest: a credential's digest is the same on every replica of
// a deployment, and another under another key; two credentials never share
// one.
func TestHolderDigest(t *testing.T) {
	r1, r2, other := sealer(t, key, "r1"), sealer(t, key, "r2"), sealer(t, key+"-other", "r1")
	a, b := []byte("token-a"), []byte("token-b")
	if d := r1.Holder(a); len(d) != holderLen || !bytes.Equal(d, r2.Holder(a)) || !bytes.Equal(d, r1.Rekey([]byte(key)).Holder(a)) {
		t.Errorf("one credential under one key: %x and %x, want the same %d bytes", d, r2.Holder(a), holderLen)
	}
	if bytes.Equal(r1.Holder(a), r1.Holder(b)) || bytes.Equal(r1.Holder(a), other.Holder(a)) || bytes.Contains(r1.Holder(a), a) {
		t.Error("digests of two credentials, or of one under two keys, are equal (or show the credential)")
	}
}

func TestReplicaNames(t *testing.T) {
	for in, want := range map[string]string{
		"r1":                         "r1",
		"Switchboard-7d9f_abc.local": "switchboard-7d9f-abc-local",
		"-x-":                        "x",
		strings.Repeat("a", 80):      strings.Repeat("a", 63),
	} {
		if got := Replica(in); got != want {
			t.Errorf("Replica(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := New([]byte(key), "Not A Label"); err == nil {
		t.Error("New accepted a replica name that is no DNS label")
	}
	if id := sealer(t, key, "").Seal(state); ReplicaOf(id) != "" || strings.Contains(id, ".") {
		t.Errorf("an unnamed replica's ID %q names one", id)
	}
}

func FuzzOpen(f *testing.F) {
	s, _ := New([]byte(key), "r1")
	f.Add(s.Seal(state))
	f.Add("r1.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, id string) {
		st, err := s.Open(id)
		if err != nil {
			return
		}
		// What opens is what was sealed: it seals and opens again alike.
		again, err := s.Open(s.Seal(st))
		if err != nil || again.Version != st.Version || again.View != st.View || !bytes.Equal(again.Holder, st.Holder) || again.Issued != st.Issued {
			t.Fatalf("opened %+v; resealed opens as %+v, %v", st, again, err)
		}
	})
}

// TestOpenRefusesLineBreaks: the decoder skips CR and LF, so an ID with
// one inserted would open as the ID without; it is refused.
func TestOpenRefusesLineBreaks(t *testing.T) {
	s := sealer(t, key, "r1")
	id := s.Seal(state)
	for _, br := range []string{"\n", "\r"} {
		if _, err := s.Open(id[:len(id)-4] + br + id[len(id)-4:]); err == nil {
			t.Errorf("an ID with %q inside opens", br)
		}
	}
	if _, err := s.Open(id); err != nil {
		t.Fatal(err)
	}
}
