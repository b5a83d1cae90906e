package secrets_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// TestVaultKV: the resolver's Vault client writes, reads, lists and
// deletes KV v2 secrets (the OAuth token store, issue 35), in the dev
// server's secret/ and in a nested mount; a KV v1 mount and a bad token
// are refused with errors that name the path, never the token or data.
func TestVaultKV(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	r := secrets.NewResolver(secrets.Options{Vault: &secrets.VaultOptions{Address: v.addr, Token: v.token}})
	defer r.Close()
	kv := r.VaultKV()
	ctx := context.Background()

	for _, base := range []string{"secret/sb/tokens", "team/kv/sb/tokens"} {
		t.Run(base, func(t *testing.T) {
			if d, err := kv.Get(ctx, base+"/a"); d != nil || err != nil {
				t.Fatalf("Get before Put = %v, %v; want nil, nil", d, err)
			}
			if names, err := kv.List(ctx, base); names != nil || err != nil {
				t.Fatalf("List of nothing = %v, %v; want nil, nil", names, err)
			}
			for _, p := range []string{"a", "a/c1", "b~2Fx"} {
				if err := kv.Put(ctx, base+"/"+p, map[string]any{"entry": map[string]any{"token": "kv-" + p}, "n": 1}); err != nil {
					t.Fatal(err)
				}
			}
			d, err := kv.Get(ctx, base+"/a")
			if err != nil || d["entry"].(map[string]any)["token"] != "kv-a" {
				t.Fatalf("Get = %v, %v", d, err)
			}
			if names, err := kv.List(ctx, base); err != nil || !slices.Equal(names, []string{"a", "a/", "b~2Fx"}) {
				t.Fatalf("List = %v, %v", names, err)
			}
			if names, err := kv.List(ctx, base+"/a"); err != nil || !slices.Equal(names, []string{"c1"}) {
				t.Fatalf("List a = %v, %v", names, err)
			}
			// Delete takes every version: nothing is left to read or list.
			kv.Put(ctx, base+"/a/c1", map[string]any{"token": "kv-a-c1-v2"})
			for _, p := range []string{"a/c1", "a/c1", "b~2Fx"} {
				if err := kv.Delete(ctx, base+"/"+p); err != nil {
					t.Fatalf("Delete %s: %v", p, err)
				}
			}
			if names, err := kv.List(ctx, base); err != nil || !slices.Equal(names, []string{"a"}) {
				t.Fatalf("List after Delete = %v, %v", names, err)
			}
			if d, err := kv.Get(ctx, base+"/a/c1"); d != nil || err != nil {
				t.Fatalf("Get after Delete = %v, %v", d, err)
			}
		})
	}

	if err := kv.Put(ctx, "kv1/sb/tokens/a", map[string]any{"x": "kv1-data"}); err == nil || !strings.Contains(err.Error(), "kv1/sb/tokens/a is in kv1/, which is not a KV v2 mount") {
		t.Errorf("Put in a KV v1 mount: %v", err)
	}
	if _, err := kv.Get(ctx, "/x"); err == nil || !strings.Contains(err.Error(), `"/x"`) {
		t.Errorf("Get of /x: %v", err)
	}

	bad := secrets.NewResolver(secrets.Options{Vault: &secrets.VaultOptions{Address: v.addr, Token: "not-a-valid-token-kv"}})
	defer bad.Close()
	err := bad.VaultKV().Put(ctx, "secret/sb/tokens/z", map[string]any{"token": "kv-never-written"})
	if err == nil || !strings.Contains(err.Error(), "secret/sb/tokens/z") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Put with a bad token: %v", err)
	}
	assertNoSecret(t, err, "not-a-valid-token-kv", "kv-never-written", v.token)
}
