package sessionid

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// State is what an ID carries.
type State struct {
	Version string          `json:"v"`
	Caps    json.RawMessage `json:"c,omitempty"`  // the client's capabilities, as it sent them
	Client  string          `json:"n,omitempty"`  // clientInfo.name
	ClientV string          `json:"cv,omitempty"` // clientInfo.version
	View    string          `json:"a,omitempty"`  // the agent ("": the default view)
	Holder  []byte          `json:"h,omitempty"`  // a keyed digest of the token's value (Sealer.Holder; nil: none)
	Issued  int64           `json:"i,omitempty"`  // when the session was opened, in Unix seconds
}

// ErrInvalid is an ID that does not open: malformed, altered, or sealed
// under another key.
var ErrInvalid = errors.New("session ID does not open under this deployment's key")

// MaxLen bounds an ID this package opens, and mints: larger states are
// cut (see Seal).
const MaxLen = 4096

// b64 is the ID's encoding, strict: one encoding per token.
var b64 = base64.RawURLEncoding.Strict()

// info separates this key from every other use of the same secret;
// holderInfo the key of holder digests.
const (
	info       = "switchboard streamable-HTTP session ID v1"
	holderInfo = "switchboard session holder digest v1"
)

// holderLen is the length of a holder digest: 128 bits of HMAC-SHA256.
const holderLen = 16

// Sealer mints and opens IDs under one key, as one replica.
type Sealer struct {
	aead    cipher.AEAD
	holder  []byte // keys Holder
	replica string
}

// New returns a Sealer keyed by secret (any length; expanded with HKDF,
// not stretched: the secret must have its own entropy) for the replica
// named replica (a DNS label, see Replica; "": IDs without a name).
func New(secret []byte, replica string) (*Sealer, error) {
	if replica != "" && Replica(replica) != replica {
		return nil, fmt.Errorf("replica name %q: want a DNS label (lower-case letters, digits and '-', at most 63)", replica)
	}
	return newSealer(secret, replica), nil
}

// Rekey returns a Sealer for the same replica under secret.
func (s *Sealer) Rekey(secret []byte) *Sealer { return newSealer(secret, s.replica) }

func newSealer(secret []byte, replica string) *Sealer {
	// None of these fails: SHA-256 gives HKDF up to 8160 bytes, AES takes
	// a 32-byte key, GCM a 16-byte block.
	key, err := hkdf.Key(sha256.New, secret, nil, info, 32)
	if err != nil {
		panic(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	holder, err := hkdf.Key(sha256.New, secret, nil, holderInfo, 32)
	if err != nil {
		panic(err)
	}
	return &Sealer{aead: aead, holder: holder, replica: replica}
}

// Holder is the digest of a credential (a token's value, or a digest of
// it) that an ID carries as State.Holder: an HMAC under this Sealer's key,
// so the same credential gives the same digest on every replica and after
// a restart, and nothing without the key can tell whose it is.
func (s *Sealer) Holder(credential []byte) []byte {
	m := hmac.New(sha256.New, s.holder)
	m.Write(credential)
	return m.Sum(nil)[:holderLen]
}

// NewRandom returns a Sealer under a key made for this process alone: its
// IDs open nowhere else.
func NewRandom(replica string) (*Sealer, error) {
	return New([]byte(rand.Text()+rand.Text()), replica)
}

// Replica is the name a replica's IDs carry, and by which a proxy routes
// to it: name lower-cased, every character outside [a-z0-9-] turned into
// '-', cut to 63 characters and trimmed of '-' at either end.
func Replica(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), 63)]), "-")
}

// ReplicaOf is the replica an ID names ("": none).
func ReplicaOf(id string) string {
	r, _, ok := strings.Cut(id, ".")
	if !ok {
		return ""
	}
	return r
}

// ad is the additional data of replica's IDs.
func ad(replica string) []byte { return []byte(info + "\x00" + replica) }

// Seal mints a new ID for st. Every call gives another ID (the nonce is
// random). A state too large for MaxLen loses the client's name, then its
// capabilities: a resumed session then has none (a client that sends
// kilobytes of capabilities is not expected).
func (s *Sealer) Seal(st State) string {
	for {
		id := s.seal(st)
		if len(id) <= MaxLen {
			return id
		}
		switch {
		case st.Client != "" || st.ClientV != "":
			st.Client, st.ClientV = "", ""
		case st.Caps != nil:
			st.Caps = nil
		default:
			return id // the view's name and a digest alone: short
		}
	}
}

func (s *Sealer) seal(st State) string {
	plain, _ := json.Marshal(st) // strings and raw JSON: cannot fail
	buf := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(buf)
	buf = s.aead.Seal(buf, buf, plain, ad(s.replica))
	tok := b64.EncodeToString(buf)
	if s.replica == "" {
		return tok
	}
	return s.replica + "." + tok
}

// Open returns the state id was minted with, by any replica that shares
// this Sealer's key; ErrInvalid for anything else.
func (s *Sealer) Open(id string) (State, error) {
	var st State
	// The decoder skips CR and LF: an ID with one would open as the ID
	// without, one session under two names.
	if len(id) > MaxLen || strings.ContainsAny(id, "\r\n") {
		return st, ErrInvalid
	}
	replica, tok, ok := strings.Cut(id, ".")
	if !ok {
		replica, tok = "", id
	}
	raw, err := b64.DecodeString(tok)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return st, ErrInvalid
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], ad(replica))
	if err != nil {
		return st, ErrInvalid
	}
	if err := json.Unmarshal(plain, &st); err != nil || st.Version == "" {
		return State{}, ErrInvalid // sealed by us but not a state: another version's
	}
	return st, nil
}
