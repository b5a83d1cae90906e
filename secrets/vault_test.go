package secrets_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/vault/api"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// The Vault tests run a real Vault dev server, built by .ci/tools/vault.sh:
// Vault's minimal build, with Kubernetes auth beside it as an external plugin.
const vaultVersion = "1.21.0"

// kubeAuthPlugin is the Kubernetes auth plugin's command, in the plugins
// directory beside the vault binary (.ci/tools/vault.sh).
const kubeAuthPlugin = "vault-plugin-auth-kubernetes"

// vaultBinary finds the Vault binary: $SWITCHBOARD_VAULT, else the cache
// path .ci/tools/vault.sh builds. Without it the tests skip, unless
// SWITCHBOARD_FULL=1 demands them.
func vaultBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SWITCHBOARD_VAULT"); p != "" {
		return p
	}
	cache := os.Getenv("SWITCHBOARD_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "switchboard")
	}
	p := filepath.Join(cache, "vault-"+vaultVersion+"-minimal", "vault")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("SWITCHBOARD_FULL") == "1" {
			t.Fatalf("vault binary not found at %s (run .ci/tools/vault.sh or set SWITCHBOARD_VAULT)", p)
		}
		t.Skipf("vault binary not found at %s; run .ci/tools/vault.sh (SWITCHBOARD_FULL=1 makes this a failure)", p)
	}
	return p
}

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// vaultLogLevel is the dev server's log level: warn, or $SWITCHBOARD_VAULT_LOG_LEVEL.
func vaultLogLevel() string {
	if l := os.Getenv("SWITCHBOARD_VAULT_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

type devVault struct {
	addr    string
	token   string
	client  *api.Client
	plugins string // the plugin directory it runs with, or ""
}

// pluginDir is the plugins directory beside a vault binary, or "" when it
// has none (a full build from SWITCHBOARD_VAULT has its plugins built in).
func pluginDir(bin string) string {
	dir := filepath.Join(filepath.Dir(bin), "plugins")
	if _, err := os.Stat(filepath.Join(dir, kubeAuthPlugin)); err != nil {
		return ""
	}
	return dir
}

// enableKubernetesAuth enables Kubernetes auth at auth/kubernetes: the
// external plugin beside the binary, registered in Vault's catalog first,
// or else the built-in one of a full build.
func (v *devVault) enableKubernetesAuth(t *testing.T) {
	t.Helper()
	if v.plugins != "" {
		b, err := os.ReadFile(filepath.Join(v.plugins, kubeAuthPlugin))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if err := v.client.Sys().RegisterPlugin(&api.RegisterPluginInput{
			Name: "kubernetes", Type: api.PluginTypeCredential, Command: kubeAuthPlugin, SHA256: hex.EncodeToString(sum[:]),
		}); err != nil {
			t.Fatalf("registering %s: %v", kubeAuthPlugin, err)
		}
	}
	if err := v.client.Sys().EnableAuthWithOptions("kubernetes", &api.EnableAuthOptions{Type: "kubernetes"}); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startVault runs `vault server -dev` on a free loopback port and stops it
// (by PID) when the test ends.
func startVault(t *testing.T) *devVault {
	t.Helper()
	bin := vaultBinary(t)
	plugins := pluginDir(bin)
	token := "root-" + randomHex(t, 12)
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		var out lockedBuffer
		home := t.TempDir()
		args := []string{"server", "-dev", "-dev-root-token-id=" + token, "-dev-listen-address=" + addr}
		if plugins != "" {
			args = append(args, "-dev-plugin-dir="+plugins)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "VAULT_LOG_LEVEL=" + vaultLogLevel()}
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start vault: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}

		cfg := api.DefaultConfig()
		cfg.Address = "http://" + addr
		client, err := api.NewClient(cfg)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		client.SetToken(token)
		ready := false
		deadline := time.Now().Add(60 * time.Second)
		for !ready && time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{}
				continue
			case <-time.After(50 * time.Millisecond):
			}
			h, err := client.Sys().Health()
			ready = err == nil && h.Initialized && !h.Sealed
		}
		if ready {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("vault server output:\n%s", out.String())
				}
			})
			return &devVault{addr: "http://" + addr, token: token, client: client, plugins: plugins}
		}
		stop()
		if attempt < 5 && strings.Contains(out.String(), "address already in use") {
			continue
		}
		t.Fatalf("vault dev server did not become ready:\n%s", out.String())
	}
}

func (v *devVault) write(t *testing.T, path string, data map[string]any) *api.Secret {
	t.Helper()
	s, err := v.client.Logical().Write(path, data)
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return s
}

const readPolicy = `
path "secret/data/app/*" { capabilities = ["read"] }
path "kv1/app/*"         { capabilities = ["read"] }
path "team/kv/data/*"    { capabilities = ["read"] }
`

// setup mounts KV v1 at kv1/ and KV v2 at the nested team/kv/ (the dev
// server already has KV v2 at secret/), writes secrets and a read policy.
func (v *devVault) setup(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sys := v.client.Sys()
	if err := sys.Mount("kv1", &api.MountInput{Type: "kv", Options: map[string]string{"version": "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := sys.Mount("team/kv", &api.MountInput{Type: "kv", Options: map[string]string{"version": "2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.client.KVv2("secret").Put(ctx, "app/github", map[string]any{"token": "ghp-vault-v2-token", "uses": 42, "scopes": []string{"repo"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.client.KVv2("secret").Put(ctx, "other/x", map[string]any{"k": "outside-policy-value"}); err != nil {
		t.Fatal(err)
	}
	if err := v.client.KVv1("kv1").Put(ctx, "app/db", map[string]any{"password": "kv1-db-password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.client.KVv2("team/kv").Put(ctx, "svc", map[string]any{"key": "nested-mount-key"}); err != nil {
		t.Fatal(err)
	}
	if err := sys.PutPolicy("read-app", readPolicy); err != nil {
		t.Fatal(err)
	}
}

// approle enables AppRole with a role bound to read-app and returns a role ID
// and a fresh secret ID.
func (v *devVault) approle(t *testing.T, ttl string) (roleID, secretID string) {
	t.Helper()
	if err := v.client.Sys().EnableAuthWithOptions("approle", &api.EnableAuthOptions{Type: "approle"}); err != nil {
		t.Fatal(err)
	}
	v.write(t, "auth/approle/role/app", map[string]any{"token_policies": "read-app", "token_ttl": ttl, "token_max_ttl": "1h"})
	s, err := v.client.Logical().Read("auth/approle/role/app/role-id")
	if err != nil {
		t.Fatal(err)
	}
	sid := v.write(t, "auth/approle/role/app/secret-id", nil)
	return s.Data["role_id"].(string), sid.Data["secret_id"].(string)
}

func TestVaultToken(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	set := secrets.NewSet()
	r := secrets.NewResolver(secrets.Options{Redact: set, Vault: &secrets.VaultOptions{Address: v.addr, Token: v.token}})
	defer r.Close()
	ctx := context.Background()
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "kv v2", in: "secret://vault/secret/app/github#token", want: "ghp-vault-v2-token"},
		{name: "kv v2 number", in: "secret://vault/secret/app/github#uses", want: "42"},
		{name: "kv v2 list", in: "secret://vault/secret/app/github#scopes", want: `["repo"]`},
		{name: "kv v1", in: "secret://vault/kv1/app/db#password", want: "kv1-db-password"},
		{name: "nested mount", in: "secret://vault/team/kv/svc#key", want: "nested-mount-key"},
		{name: "interpolated", in: "token ${secret://vault/secret/app/github#token}", want: "token ghp-vault-v2-token"},
		{name: "missing field", in: "secret://vault/secret/app/github#nope", wantErr: `secret://vault/secret/app/github#nope: vault: field "nope" not found at secret/app/github`},
		{name: "missing path v2", in: "secret://vault/secret/app/none#token", wantErr: "secret://vault/secret/app/none#token: vault: no secret at secret/app/none"},
		{name: "missing path v1", in: "secret://vault/kv1/app/none#x", wantErr: "vault: no secret at kv1/app/none"},
		{name: "mount itself", in: "secret://vault/no-such-mount/x#y", wantErr: "secret://vault/no-such-mount/x#y: vault:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Expand(ctx, tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Expand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				t.Log(err)
				assertNoSecret(t, err, "ghp-vault-v2-token", "kv1-db-password", v.token)
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if _, err := r.Expand(ctx, "secret://vault/secret/app/github#nope"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("missing field is not ErrNotFound: %v", err)
	}
	if out := set.Redact("ghp-vault-v2-token kv1-db-password"); out != "[REDACTED] [REDACTED]" {
		t.Errorf("Redact = %q", out)
	}

	// Rotation: a new version is seen by the next Expand.
	if _, err := v.client.KVv2("secret").Put(ctx, "app/github", map[string]any{"token": "ghp-rotated-token"}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Expand(ctx, "secret://vault/secret/app/github#token"); err != nil || got != "ghp-rotated-token" {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
	if err := v.client.KVv1("kv1").Put(ctx, "app/db", map[string]any{"password": "kv1-rotated"}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Expand(ctx, "secret://vault/kv1/app/db#password"); err != nil || got != "kv1-rotated" {
		t.Fatalf("kv1 after rotation: %q, %v", got, err)
	}

	// A deleted latest version reads as not found.
	if err := v.client.KVv2("secret").Delete(ctx, "app/github"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Expand(ctx, "secret://vault/secret/app/github#token"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("deleted version: %v", err)
	}
}

func TestVaultBadToken(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	r := secrets.NewResolver(secrets.Options{Vault: &secrets.VaultOptions{Address: v.addr, Token: "not-a-valid-token"}})
	defer r.Close()
	_, err := r.Expand(context.Background(), "secret://vault/secret/app/github#token")
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("err = %v", err)
	}
	assertNoSecret(t, err, "not-a-valid-token")
}

func TestVaultAppRole(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	roleID, secretID := v.approle(t, "1h")
	ctx := context.Background()

	// The standard environment drives the client when Options.Vault is nil.
	r := secrets.NewResolver(secrets.Options{Env: envMap(map[string]string{
		"VAULT_ADDR": v.addr, "VAULT_ROLE_ID": roleID, "VAULT_SECRET_ID": secretID,
	})})
	defer r.Close()
	got, err := r.ExpandMap(ctx, map[string]string{
		"GH": "secret://vault/secret/app/github#token",
		"DB": "secret://vault/kv1/app/db#password",
		"NS": "secret://vault/team/kv/svc#key",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["GH"] != "ghp-vault-v2-token" || got["DB"] != "kv1-db-password" || got["NS"] != "nested-mount-key" {
		t.Fatalf("got %v", got)
	}
	// Outside the role's policy.
	_, err = r.Expand(ctx, "secret://vault/secret/other/x#k")
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("outside policy: %v", err)
	}
	assertNoSecret(t, err, "outside-policy-value", secretID)

	// Revoke every AppRole token: the next read logs in again.
	if err := v.client.Sys().RevokePrefix("auth/approle"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Expand(ctx, "secret://vault/secret/app/github#token"); err != nil || got != "ghp-vault-v2-token" {
		t.Fatalf("after revocation: %q, %v", got, err)
	}

	// A wrong secret ID fails with the login's reason.
	r2 := secrets.NewResolver(secrets.Options{Vault: &secrets.VaultOptions{
		Address: v.addr, AppRole: &secrets.VaultAppRole{RoleID: roleID, SecretID: "wrong-secret-id"},
	}})
	defer r2.Close()
	_, err = r2.Expand(ctx, "secret://vault/secret/app/github#token")
	if err == nil || !strings.Contains(err.Error(), "vault: approle login:") {
		t.Fatalf("wrong secret id: %v", err)
	}
	assertNoSecret(t, err, "wrong-secret-id")
}

// TestVaultTokenRenewal gives the AppRole token a short TTL and waits for
// the LifetimeWatcher to renew it.
func TestVaultTokenRenewal(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	roleID, secretID := v.approle(t, "3s")
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	r := secrets.NewResolver(secrets.Options{Logger: log, Vault: &secrets.VaultOptions{
		Address: v.addr, AppRole: &secrets.VaultAppRole{RoleID: roleID, SecretID: secretID},
	}})
	defer r.Close()
	ctx := context.Background()
	if _, err := r.Expand(ctx, "secret://vault/secret/app/github#token"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "vault token renewed") {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal logged:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Past the original TTL the same login still reads.
	if got, err := r.Expand(ctx, "secret://vault/secret/app/github#token"); err != nil || got != "ghp-vault-v2-token" {
		t.Fatalf("after renewal: %q, %v", got, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), secretID) {
		t.Fatal("secret ID in logs")
	}
}

// TestVaultKubernetes logs in with the Kubernetes auth method. Vault checks
// the ServiceAccount JWT's signature against the configured key and asks a
// fake Kubernetes TokenReview API whether it is valid.
func TestVaultKubernetes(t *testing.T) {
	v := startVault(t)
	v.setup(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwt := signJWT(t, key, map[string]any{
		"aud": []string{"https://kubernetes.default.svc"},
		"iat": time.Now().Unix(),
		"exp": time.Now().Add(time.Hour).Unix(),
		"iss": "https://kubernetes.default.svc",
		"sub": "system:serviceaccount:apps:switchboard",
		"kubernetes.io": map[string]any{
			"namespace":      "apps",
			"serviceaccount": map[string]any{"name": "switchboard", "uid": "7f1c9a4e-0000-4000-8000-000000000001"},
		},
	})
	var reviews int
	var mu sync.Mutex
	k8s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tr struct {
			Spec struct {
				Token     string   `json:"token"`
				Audiences []string `json:"audiences"`
			} `json:"spec"`
		}
		if r.URL.Path != "/apis/authentication.k8s.io/v1/tokenreviews" || json.NewDecoder(r.Body).Decode(&tr) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		reviews++
		mu.Unlock()
		status := map[string]any{"authenticated": false}
		if tr.Spec.Token == jwt {
			// The token is valid for the audiences in its aud claim, which
			// Vault asks about.
			status = map[string]any{"authenticated": true, "audiences": tr.Spec.Audiences, "user": map[string]any{
				"username": "system:serviceaccount:apps:switchboard", "uid": "7f1c9a4e-0000-4000-8000-000000000001",
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status})
	}))
	defer k8s.Close()

	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	v.enableKubernetesAuth(t)
	v.write(t, "auth/kubernetes/config", map[string]any{
		"kubernetes_host":        k8s.URL,
		"disable_local_ca_jwt":   true,
		"disable_iss_validation": true,
		"pem_keys":               []string{string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))},
	})
	v.write(t, "auth/kubernetes/role/switchboard", map[string]any{
		"bound_service_account_names":      "switchboard",
		"bound_service_account_namespaces": "apps",
		"token_policies":                   "read-app",
		"token_ttl":                        "1h",
	})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(jwt), 0o600); err != nil {
		t.Fatal(err)
	}
	r := secrets.NewResolver(secrets.Options{Env: envMap(map[string]string{
		"VAULT_ADDR": v.addr, "VAULT_K8S_ROLE": "switchboard", "VAULT_K8S_TOKEN_PATH": tokenFile,
	})})
	defer r.Close()
	if got, err := r.Expand(context.Background(), "secret://vault/kv1/app/db#password"); err != nil || got != "kv1-db-password" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	mu.Lock()
	n := reviews
	mu.Unlock()
	if n == 0 {
		t.Fatal("Vault never asked the TokenReview API")
	}

	// A token for another ServiceAccount is refused.
	other := signJWT(t, key, map[string]any{
		"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:apps:intruder",
		"kubernetes.io": map[string]any{"namespace": "apps", "serviceaccount": map[string]any{"name": "intruder", "uid": "u2"}},
	})
	if err := os.WriteFile(tokenFile, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	r2 := secrets.NewResolver(secrets.Options{Vault: &secrets.VaultOptions{
		Address: v.addr, Kubernetes: &secrets.VaultKubernetes{Role: "switchboard", TokenPath: tokenFile},
	}})
	defer r2.Close()
	_, err = r2.Expand(context.Background(), "secret://vault/kv1/app/db#password")
	if err == nil || !strings.Contains(err.Error(), "vault: kubernetes login:") {
		t.Fatalf("intruder: %v", err)
	}
	assertNoSecret(t, err, other)
}

// signJWT returns an RS256 JWT.
func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	unsigned := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "test"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(unsigned))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestVaultMisconfigured(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "no address", env: map[string]string{"VAULT_TOKEN": "x"}, wantErr: "vault: no address (set VAULT_ADDR)"},
		{name: "no credentials", env: map[string]string{"VAULT_ADDR": "http://127.0.0.1:1"}, wantErr: "vault: no credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secrets.NewResolver(secrets.Options{Env: envMap(tt.env)})
			defer r.Close()
			_, err := r.Expand(context.Background(), "secret://vault/kv/x#y")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
