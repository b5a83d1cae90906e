package proxy

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// TestUnresolvedSecretIsPermanent: a reference that does not resolve
// fails an upstream's start for good (no restarts); other failures of the
// resolver stay transient. See "First contact", item 6.
func TestUnresolvedSecretIsPermanent(t *testing.T) {
	env := map[string]string{"SET": "value"}
	u := upstreamSecrets{secrets.NewResolver(secrets.Options{Env: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, Vault: &secrets.VaultOptions{}})}
	for _, tc := range []struct {
		name, value string
		permanent   bool
	}{
		{name: "env unset", value: "secret://env/UNSET", permanent: true},
		{name: "env unset inside a value", value: "Bearer ${secret://env/UNSET}", permanent: true},
		{name: "variable unset", value: "x-${UNSET}", permanent: true},
		{name: "file missing", value: "secret://file" + filepath.Join(t.TempDir(), "missing"), permanent: true},
		{name: "vault not configured", value: "secret://vault/kv/app#token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := u.Expand(context.Background(), tc.value)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, upstream.ErrPermanent); got != tc.permanent {
				t.Errorf("%v: permanent %v, want %v", err, got, tc.permanent)
			}
		})
	}
	if v, err := u.Expand(context.Background(), "secret://env/SET"); err != nil || v != "value" {
		t.Errorf("a set variable: %q, %v", v, err)
	}
}
