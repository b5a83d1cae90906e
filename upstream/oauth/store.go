package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Key names one token in a Store: the server's config key and the
// principal it acts for ("" for a single-user sidecar; a downstream
// caller's identity when tokens are per caller).
type Key struct {
	Server    string `json:"server"`
	Principal string `json:"principal,omitempty"`
}

func (k Key) id() string { return k.Server + "\x00" + k.Principal }

// Entry is what a Store keeps for one Key: the token and what refreshing
// it needs (the client the authorization server knows and its token
// endpoint), so a restart keeps the consent.
type Entry struct {
	Token        *oauth2.Token `json:"token"`
	ClientID     string        `json:"clientId,omitempty"`
	ClientSecret string        `json:"clientSecret,omitempty"`
	TokenURL     string        `json:"tokenUrl,omitempty"`
	AuthStyle    int           `json:"authStyle,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Grant        string        `json:"grant,omitempty"`
	// DPoPKey is the key Token is bound to (RFC 9449), PKCS#8 DER in
	// base64url: refreshing a DPoP-bound token needs it.
	DPoPKey string    `json:"dpopKey,omitempty"`
	Saved   time.Time `json:"saved"`
}

// Store keeps tokens. Load returns nil, nil when it has none for k.
type Store interface {
	Load(k Key) (*Entry, error)
	Save(k Key, e *Entry) error
	Delete(k Key) error
	Keys() ([]Key, error)
}

// MemoryStore keeps tokens for the life of the process.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]*Entry
	k  map[string]Key
}

func NewMemoryStore() *MemoryStore {
	return &MemoryStore{m: map[string]*Entry{}, k: map[string]Key{}}
}

func (s *MemoryStore) Load(k Key) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k.id()], nil
}

func (s *MemoryStore) Save(k Key, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k.id()], s.k[k.id()] = e, k
	return nil
}

func (s *MemoryStore) Delete(k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k.id())
	delete(s.k, k.id())
	return nil
}

func (s *MemoryStore) Keys() ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Key, 0, len(s.k))
	for _, k := range s.k {
		out = append(out, k)
	}
	sortKeys(out)
	return out, nil
}

// DirEnv overrides the directory of the file store's tokens and key
// (default: switchboard under os.UserConfigDir).
const DirEnv = "SWITCHBOARD_TOKEN_DIR"

// DefaultDir is where the file store keeps tokens.enc and tokens.key.
func DefaultDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("token store: no user config directory (set %s): %w", DirEnv, err)
	}
	return filepath.Join(d, "switchboard"), nil
}

// FileStore keeps every entry in one file, sealed with AES-256-GCM. Its
// key is given (a resolved secret, hashed to 32 bytes) or read from
// tokens.key beside it, made with mode 0600 on first use. Writes go to a
// temporary file renamed over the old one. Several processes (serve and
// auth login) share the file: each read and write takes it whole.
type FileStore struct {
	path string
	aead cipher.AEAD
	mu   sync.Mutex
}

// NewFileStore opens the store in dir; secret, when not "", is its key.
func NewFileStore(dir, secret string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	var key []byte
	if secret != "" {
		sum := sha256.Sum256([]byte(secret))
		key = sum[:]
	} else {
		var err error
		if key, err = keyFile(filepath.Join(dir, "tokens.key")); err != nil {
			return nil, err
		}
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return &FileStore{path: filepath.Join(dir, "tokens.enc"), aead: aead}, nil
}

// newAEAD is AES-256-GCM under key (32 bytes), as the stores seal.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// keyFile reads the 32-byte key at path, or makes it.
func keyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("token store: %s holds %d bytes, want 32", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("token store: %w", err)
	}
	b = make([]byte, 32)
	rand.Read(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return keyFile(path) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("token store: %w", err)
	}
	return b, f.Close()
}

// Path is the sealed file's.
func (s *FileStore) Path() string { return s.path }

func (s *FileStore) read() (map[string]*stored, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*stored{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	n := s.aead.NonceSize()
	if len(b) < n {
		return nil, fmt.Errorf("token store: %s is truncated", s.path)
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return nil, fmt.Errorf("token store: %s does not open with this key", s.path)
	}
	m := map[string]*stored{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, fmt.Errorf("token store: %s: %w", s.path, err)
	}
	return m, nil
}

func (s *FileStore) write(m map[string]*stored) error {
	plain, err := json.Marshal(m)
	if err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, plain, nil)
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, sealed, 0o600); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// stored is one entry in the file, with its key.
type stored struct {
	Key   Key    `json:"key"`
	Entry *Entry `json:"entry"`
}

func (s *FileStore) Load(k Key) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	if e := m[k.id()]; e != nil {
		return e.Entry, nil
	}
	return nil, nil
}

func (s *FileStore) Save(k Key, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return err
	}
	m[k.id()] = &stored{Key: k, Entry: e}
	return s.write(m)
}

func (s *FileStore) Delete(k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return err
	}
	if _, ok := m[k.id()]; !ok {
		return nil
	}
	delete(m, k.id())
	return s.write(m)
}

func (s *FileStore) Keys() ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]Key, 0, len(m))
	for _, e := range m {
		out = append(out, e.Key)
	}
	sortKeys(out)
	return out, nil
}

func sortKeys(ks []Key) {
	sort.Slice(ks, func(i, j int) bool { return ks[i].id() < ks[j].id() })
}
