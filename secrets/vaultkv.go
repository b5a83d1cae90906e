package secrets

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/vault/api"
)

// VaultKV keeps data in Vault KV v2 with the Resolver's Vault client and
// login (the ones secret://vault references use): the OAuth token store,
// tokenStore "vault:…". Paths start with the mount, as in references
// ("secret/switchboard/tokens/x"); the mount is found the same way, and
// must be KV v2. Errors name the path and Vault's reason, never the data
// or the Vault token.
//
// A VaultKV is safe for concurrent use; it fails with ErrClosed once its
// Resolver is closed.
type VaultKV struct{ r *Resolver }

// VaultKV returns the Resolver's Vault KV v2 access. It contacts nothing
// until used.
func (r *Resolver) VaultKV() *VaultKV { return &VaultKV{r: r} }

// Get returns the data of the latest version of the secret at path, or
// nil, nil when there is none (never written, or deleted).
func (k *VaultKV) Get(ctx context.Context, path string) (map[string]any, error) {
	var out map[string]any
	err := k.do(ctx, "read", path, func(c *api.Client, mount, rel string) error {
		s, err := c.KVv2(mount).Get(ctx, rel)
		if errors.Is(err, api.ErrSecretNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if s != nil {
			out = s.Data
		}
		return nil
	})
	return out, err
}

// Put writes data as a new version of the secret at path.
func (k *VaultKV) Put(ctx context.Context, path string, data map[string]any) error {
	return k.do(ctx, "write", path, func(c *api.Client, mount, rel string) error {
		_, err := c.KVv2(mount).Put(ctx, rel, data)
		return err
	})
}

// Delete removes the secret at path with all its versions (its metadata);
// a path without a secret is no error.
func (k *VaultKV) Delete(ctx context.Context, path string) error {
	return k.do(ctx, "delete", path, func(c *api.Client, mount, rel string) error {
		return c.KVv2(mount).DeleteMetadata(ctx, rel)
	})
}

// List returns the names directly under path, sorted: a secret's name,
// and a folder's with a trailing slash. A path with nothing under it
// lists none.
func (k *VaultKV) List(ctx context.Context, path string) ([]string, error) {
	var out []string
	err := k.do(ctx, "list", path, func(c *api.Client, mount, rel string) error {
		s, err := c.Logical().ListWithContext(ctx, mount+"/metadata/"+rel)
		if err != nil || s == nil || s.Data == nil {
			return err
		}
		keys, _ := s.Data["keys"].([]any)
		for _, v := range keys {
			if name, ok := v.(string); ok {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return nil
	})
	return out, err
}

// do runs op on the KV v2 mount holding path, with rel the path inside
// it; a login token refused (403) is replaced by a new login once, as
// for references.
func (k *VaultKV) do(ctx context.Context, what, path string, op func(c *api.Client, mount, rel string) error) error {
	if path == "" || strings.HasPrefix(path, "/") || strings.Contains(path, "//") {
		return fmt.Errorf("vault: %s %q: not a path below a mount", what, path)
	}
	p, err := k.r.vaultProvider()
	if err != nil {
		return err
	}
	run := func() (string, error) {
		c, tok, err := p.ensure(ctx)
		if err != nil {
			return "", err
		}
		mount, rel, err := p.kv2(ctx, c, path)
		if err != nil {
			return tok, err
		}
		if err := op(c, mount, rel); err != nil {
			return tok, fmt.Errorf("vault: %s %s: %w", what, path, vaultReason(err))
		}
		return tok, nil
	}
	tok, err := run()
	if err != nil && isVaultStatus(err, 403) && p.loginMethod() != "" {
		p.invalidate(tok)
		_, err = run()
	}
	return err
}

// kv2 splits path into its KV v2 mount (without the slash) and the path
// inside it. When Vault does not say where the mount is, its first
// segment is taken, as KV v2.
func (p *vaultProvider) kv2(ctx context.Context, c *api.Client, path string) (mount, rel string, err error) {
	m, known, err := p.mount(ctx, c, path)
	if err != nil {
		return "", "", err
	}
	if known && m.version != 2 {
		return "", "", fmt.Errorf("vault: %s is in %s, which is not a KV v2 mount", path, m.path)
	}
	rel = strings.TrimPrefix(path, m.path)
	if rel == "" || rel == path {
		return "", "", fmt.Errorf("vault: %s is the mount %s itself, not a path in it", path, m.path)
	}
	return strings.TrimSuffix(m.path, "/"), rel, nil
}
