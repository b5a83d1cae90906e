package oauth

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// The stores a process opened, so that every server (and auth login)
// shares one per file and key.
var (
	storesMu sync.Mutex
	stores   = map[string]Store{}
	memory   = NewMemoryStore()
)

// Expander resolves a reference (the token store's key).
type Expander interface {
	Expand(ctx context.Context, v string) (string, error)
}

// OpenStore returns the opener of the store a server's config names:
// tokenStore "memory" is the process's memory store; "vault:MOUNT/PREFIX"
// a VaultStore in kv, its entries sealed with tokenStoreKey when given;
// "file" (or unset) the encrypted file in DefaultDir, keyed by
// tokenStoreKey or by the key file beside it. tokenStoreKey is resolved
// through x.
func OpenStore(x Expander, kv KV) func(ctx context.Context, c *Config) (Store, error) {
	return func(ctx context.Context, c *Config) (Store, error) {
		if c.TokenStore == "memory" {
			return memory, nil
		}
		key := ""
		if c.TokenStoreKey != "" {
			var err error
			if key, err = x.Expand(ctx, c.TokenStoreKey); err != nil {
				return nil, fmt.Errorf("oauth.tokenStoreKey: %w", err)
			}
		}
		if prefix, ok := strings.CutPrefix(c.TokenStore, VaultPrefix); ok {
			// Nothing to share in the process: every request goes to Vault.
			return NewVaultStore(kv, prefix, key)
		}
		dir, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		storesMu.Lock()
		defer storesMu.Unlock()
		id := dir + "\x00" + key
		if s := stores[id]; s != nil {
			return s, nil
		}
		s, err := NewFileStore(dir, key)
		if err != nil {
			return nil, err
		}
		stores[id] = s
		return s, nil
	}
}
