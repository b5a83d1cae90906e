package taskid

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// prefix starts every ID this package mints (its format's version).
const prefix = "swt1."

// MaxUpstreamID bounds the length of an upstream's task ID switchboard
// takes (the IDs it mints grow with it).
const MaxUpstreamID = 512

// maxID bounds the length of an ID, sealed or opened.
const maxID = 4 * MaxUpstreamID

// macSize is the length of an ID's MAC (truncated HMAC-SHA256).
const macSize = 16

// b64 decodes strictly: only the encoding Seal wrote opens.
var b64 = base64.RawURLEncoding.Strict()

// ErrMalformed is an ID that is not of the shape Seal writes.
var ErrMalformed = errors.New("not a task ID switchboard issued")

// ErrUnknown is a well-formed ID that does not open for the caller: never
// issued, altered, or issued to another caller or under another key.
var ErrUnknown = errors.New("unknown task")

// Ref is what an ID names.
type Ref struct {
	Tool     string // the public tool whose call created the task
	Server   string // the key of the server that owns it
	Upstream string // the server's own task ID
}

// Codec seals and opens IDs under a key.
type Codec struct{ key func() []byte }

// New is a Codec under a fresh random key: its IDs open only in this
// process.
func New() *Codec {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &Codec{key: func() []byte { return k }}
}

// WithKey is a Codec under secret (several replicas that share it open
// each other's IDs).
func WithKey(secret []byte) *Codec {
	k := derive(secret)
	return &Codec{key: func() []byte { return k }}
}

// Following is a Codec under the secret current returns at each use (a
// key a reload may change: the IDs sealed before no longer open).
func Following(current func() []byte) *Codec {
	return &Codec{key: func() []byte { return derive(current()) }}
}

// derive is the key of task IDs from secret, apart from what else secret
// keys.
func derive(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("switchboard task IDs"))
	return m.Sum(nil)
}

// Seal is the ID of ref for caller. It fails for an upstream ID that is
// empty or longer than MaxUpstreamID, and for an ID that would be longer
// than Open takes.
func (c *Codec) Seal(ref Ref, caller string) (string, error) {
	if ref.Upstream == "" || len(ref.Upstream) > MaxUpstreamID {
		return "", fmt.Errorf("the server's task ID is %d bytes long; switchboard takes 1 to %d", len(ref.Upstream), MaxUpstreamID)
	}
	enc := base64.RawURLEncoding.EncodeToString
	head := prefix + enc([]byte(ref.Tool)) + "." + enc([]byte(ref.Server)) + "." + enc([]byte(ref.Upstream))
	id := head + "." + enc(c.mac(head, caller))
	if len(id) > maxID {
		return "", fmt.Errorf("the task ID of tool %q would be %d bytes long; switchboard issues at most %d", ref.Tool, len(id), maxID)
	}
	return id, nil
}

// Open is what id names, if it was sealed for caller under c's key.
func (c *Codec) Open(id, caller string) (Ref, error) {
	rest, ok := strings.CutPrefix(id, prefix)
	// The decoder skips CR and LF, so an ID with one would open as the
	// ID without: one task, two names.
	if !ok || len(id) > maxID || strings.ContainsAny(id, "\r\n") {
		return Ref{}, ErrMalformed
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return Ref{}, ErrMalformed
	}
	var dec [4][]byte
	for i, p := range parts {
		b, err := b64.DecodeString(p)
		if err != nil {
			return Ref{}, ErrMalformed
		}
		dec[i] = b
	}
	if len(dec[3]) != macSize || len(dec[2]) == 0 {
		return Ref{}, ErrMalformed
	}
	if !hmac.Equal(dec[3], c.mac(id[:len(id)-len(parts[3])-1], caller)) {
		return Ref{}, ErrUnknown
	}
	return Ref{Tool: string(dec[0]), Server: string(dec[1]), Upstream: string(dec[2])}, nil
}

// mac binds head to caller (length-prefixed, so no two pairs collide).
func (c *Codec) mac(head, caller string) []byte {
	m := hmac.New(sha256.New, c.key())
	fmt.Fprintf(m, "%d:%s", len(head), head)
	m.Write([]byte(caller))
	return m.Sum(nil)[:macSize]
}
