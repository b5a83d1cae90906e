package oauth

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KV is where a VaultStore keeps its entries: Vault KV v2, at paths that
// start with the mount (proxy passes secrets.VaultKV, the client of
// secret://vault references). Its methods are safe for concurrent use and
// return when ctx ends.
type KV interface {
	// Get returns the latest data at path; nil, nil when there is none.
	Get(ctx context.Context, path string) (map[string]any, error)
	// Put writes data at path.
	Put(ctx context.Context, path string, data map[string]any) error
	// Delete removes path with every version; no secret there is no error.
	Delete(ctx context.Context, path string) error
	// List names what is directly under path: "x" a secret, "x/" a folder.
	List(ctx context.Context, path string) ([]string, error)
}

// VaultPrefix starts a tokenStore that names a Vault KV v2 path:
// "vault:MOUNT/PREFIX".
const VaultPrefix = "vault:"

// VaultTimeout bounds each Vault request of a VaultStore (the Store
// interface has no context).
const VaultTimeout = 10 * time.Second

// ErrStoreUnreachable matches a failure of the store's backend (Vault
// unreachable, sealed or refusing): it may pass, so a server whose start
// meets it is started again, unlike one whose store is misconfigured.
var ErrStoreUnreachable = errors.New("token store unreachable")

// unreachable marks err as ErrStoreUnreachable; its message is err's
// after "token store: ".
type unreachable struct{ err error }

func (u unreachable) Error() string        { return "token store: " + u.err.Error() }
func (u unreachable) Unwrap() error        { return u.err }
func (u unreachable) Is(target error) bool { return target == ErrStoreUnreachable }

// VaultStore keeps each token as one KV v2 secret under a prefix, so that
// replicas share them and a restart keeps consent:
//
//	PREFIX/SERVER             the server's own token (principal "")
//	PREFIX/SERVER/PRINCIPAL   a caller's token (token_exchange)
//
// SERVER and PRINCIPAL are escaped (PathSegment), so that any config key
// is one segment. A secret's data is {"server", "principal", "entry"}
// with the Entry as a JSON object; with a key, "entry" is replaced by
// "sealed": the Entry's JSON sealed with AES-256-GCM (the key hashed to
// 32 bytes, the server and principal as additional data), base64, so no
// token is in Vault in plaintext. Nothing is logged; errors name the
// Vault path, never a token.
//
// A VaultStore is safe for concurrent use; processes sharing it see each
// other's writes at the next Load (the last Save wins).
type VaultStore struct {
	kv     KV
	prefix string      // without a trailing slash
	aead   cipher.AEAD // nil: entries are plain KV data
}

// NewVaultStore opens the store at prefix (the tokenStore value without
// "vault:": a mount and a path in it) in kv; secret, when not "", seals
// every entry.
func NewVaultStore(kv KV, prefix, secret string) (*VaultStore, error) {
	if kv == nil {
		return nil, errors.New("token store vault: no Vault client")
	}
	if err := checkVaultPath(prefix); err != nil {
		return nil, err
	}
	s := &VaultStore{kv: kv, prefix: prefix}
	if secret != "" {
		sum := sha256.Sum256([]byte(secret))
		var err error
		if s.aead, err = newAEAD(sum[:]); err != nil {
			return nil, fmt.Errorf("token store vault:%s: %w", prefix, err)
		}
	}
	return s, nil
}

// checkVaultPath refuses a prefix without a path in its mount, or with a
// segment a path would read otherwise (config validation says the same,
// with the field's path).
func checkVaultPath(prefix string) error {
	segs := strings.Split(prefix, "/")
	if len(segs) < 2 {
		return fmt.Errorf("token store vault:%s: want vault:MOUNT/PREFIX (a KV v2 mount and a path in it)", prefix)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("token store vault:%s: want vault:MOUNT/PREFIX without empty, . or .. segments", prefix)
		}
	}
	return nil
}

// PathSegment escapes s into one path segment that Vault and URLs keep as
// is: ASCII letters, digits, '-' and '_' stand for themselves, every other
// byte is '~' and two upper-case hex digits. Distinct strings get distinct
// segments, and no segment is empty, "." or "..": "" is "~".
func PathSegment(s string) string {
	if s == "" {
		return "~"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "~%02X", c)
	}
	return b.String()
}

// unescapeSegment is PathSegment's inverse; ok is false for a name
// PathSegment does not make (something else written under the prefix).
func unescapeSegment(seg string) (string, bool) {
	if seg == "~" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '~' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		x, err := strconv.ParseUint(seg[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(x))
		i += 2
	}
	out := b.String()
	return out, out != "" && PathSegment(out) == seg
}

// path is where k's secret is.
func (s *VaultStore) path(k Key) string {
	p := s.prefix + "/" + PathSegment(k.Server)
	if k.Principal != "" {
		p += "/" + PathSegment(k.Principal)
	}
	return p
}

// Path is where the store keeps k's token, the mount first.
func (s *VaultStore) Path(k Key) string { return s.path(k) }

func (s *VaultStore) Load(k Key) (*Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), VaultTimeout)
	defer cancel()
	p := s.path(k)
	data, err := s.kv.Get(ctx, p)
	if err != nil {
		return nil, unreachable{err}
	}
	if data == nil {
		return nil, nil
	}
	var raw []byte
	switch {
	case s.aead != nil:
		sealed, _ := data["sealed"].(string)
		b, err := base64.StdEncoding.DecodeString(sealed)
		n := s.aead.NonceSize()
		if sealed == "" || err != nil || len(b) < n {
			return nil, fmt.Errorf("token store: vault %s holds no sealed entry (written without tokenStoreKey?)", p)
		}
		if raw, err = s.aead.Open(nil, b[:n], b[n:], []byte(k.id())); err != nil {
			return nil, fmt.Errorf("token store: vault %s does not open with this tokenStoreKey", p)
		}
	default:
		e, ok := data["entry"]
		if !ok {
			return nil, fmt.Errorf("token store: vault %s holds no plain entry (sealed with a tokenStoreKey?)", p)
		}
		if raw, err = json.Marshal(e); err != nil {
			return nil, fmt.Errorf("token store: vault %s: %w", p, err)
		}
	}
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		// The decoder's message may quote the data: say only where.
		return nil, fmt.Errorf("token store: vault %s: the entry is not a token entry", p)
	}
	return &e, nil
}

func (s *VaultStore) Save(k Key, e *Entry) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	data := map[string]any{"server": k.Server, "principal": k.Principal}
	if s.aead != nil {
		nonce := make([]byte, s.aead.NonceSize())
		rand.Read(nonce)
		data["sealed"] = base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, raw, []byte(k.id())))
	} else {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("token store: %w", err)
		}
		data["entry"] = obj
	}
	ctx, cancel := context.WithTimeout(context.Background(), VaultTimeout)
	defer cancel()
	if err := s.kv.Put(ctx, s.path(k), data); err != nil {
		return unreachable{err}
	}
	return nil
}

func (s *VaultStore) Delete(k Key) error {
	ctx, cancel := context.WithTimeout(context.Background(), VaultTimeout)
	defer cancel()
	if err := s.kv.Delete(ctx, s.path(k)); err != nil {
		return unreachable{err}
	}
	return nil
}

// Keys lists the prefix, and the folder of every server with callers'
// tokens; names PathSegment does not make are not the store's and are
// left out.
func (s *VaultStore) Keys() ([]Key, error) {
	ctx, cancel := context.WithTimeout(context.Background(), VaultTimeout)
	defer cancel()
	names, err := s.kv.List(ctx, s.prefix)
	if err != nil {
		return nil, unreachable{err}
	}
	var out []Key
	for _, n := range names {
		dir := strings.HasSuffix(n, "/")
		server, ok := unescapeSegment(strings.TrimSuffix(n, "/"))
		if !ok {
			continue
		}
		if !dir {
			out = append(out, Key{Server: server})
			continue
		}
		subs, err := s.kv.List(ctx, s.prefix+"/"+strings.TrimSuffix(n, "/"))
		if err != nil {
			return nil, unreachable{err}
		}
		for _, sub := range subs {
			if p, ok := unescapeSegment(sub); ok && !strings.HasSuffix(sub, "/") {
				out = append(out, Key{Server: server, Principal: p})
			}
		}
	}
	sortKeys(out)
	return out, nil
}
