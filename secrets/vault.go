package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/vault/api"
	"github.com/hashicorp/vault/api/auth/approle"
	"github.com/hashicorp/vault/api/auth/kubernetes"
)

// DefaultK8sTokenPath is where Kubernetes mounts a pod's ServiceAccount
// token.
const DefaultK8sTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// VaultOptions configures the Vault client. When Options.Vault is nil, every
// field is read from the standard environment variable named in its comment.
// Exactly one way to authenticate is used, in this order: Token, AppRole,
// Kubernetes.
type VaultOptions struct {
	// Address is the Vault URL (VAULT_ADDR). Required.
	Address string
	// Token is a Vault token (VAULT_TOKEN). If empty, AppRole or Kubernetes
	// login is used.
	Token string
	// Namespace is the Vault Enterprise namespace (VAULT_NAMESPACE). If
	// empty, none is sent.
	Namespace string
	// TLS settings (VAULT_CACERT, VAULT_CAPATH, VAULT_CLIENT_CERT,
	// VAULT_CLIENT_KEY, VAULT_TLS_SERVER_NAME, VAULT_SKIP_VERIFY). If zero,
	// the system roots verify the server.
	CACert        string
	CAPath        string
	ClientCert    string
	ClientKey     string
	TLSServerName string
	TLSSkipVerify bool
	// AppRole logs in with the AppRole auth method. If nil, AppRole is not
	// used.
	AppRole *VaultAppRole
	// Kubernetes logs in with the Kubernetes auth method and the pod's
	// ServiceAccount token. If nil, Kubernetes auth is not used.
	Kubernetes *VaultKubernetes
}

// VaultAppRole holds AppRole credentials.
type VaultAppRole struct {
	// RoleID is the role ID (VAULT_ROLE_ID). Required.
	RoleID string
	// SecretID is the secret ID (VAULT_SECRET_ID). If empty, SecretIDFile
	// is read at each login.
	SecretID string
	// SecretIDFile is a file holding the secret ID (VAULT_SECRET_ID_FILE).
	SecretIDFile string
	// MountPath is where AppRole is mounted (VAULT_APPROLE_MOUNT). If empty,
	// "approle" is used.
	MountPath string
}

// VaultKubernetes holds Kubernetes auth settings.
type VaultKubernetes struct {
	// Role is the Vault role to log in as (VAULT_K8S_ROLE). Required.
	Role string
	// TokenPath is the ServiceAccount token file, read at each login so a
	// rotated projected token is picked up (VAULT_K8S_TOKEN_PATH). If empty,
	// DefaultK8sTokenPath is used.
	TokenPath string
	// MountPath is where the Kubernetes auth method is mounted
	// (VAULT_K8S_MOUNT). If empty, "kubernetes" is used.
	MountPath string
}

// vaultOptionsFromEnv reads VaultOptions from the standard variables.
func vaultOptionsFromEnv(env func(string) (string, bool)) *VaultOptions {
	get := func(k string) string { v, _ := env(k); return v }
	o := &VaultOptions{
		Address:       get("VAULT_ADDR"),
		Token:         get("VAULT_TOKEN"),
		Namespace:     get("VAULT_NAMESPACE"),
		CACert:        get("VAULT_CACERT"),
		CAPath:        get("VAULT_CAPATH"),
		ClientCert:    get("VAULT_CLIENT_CERT"),
		ClientKey:     get("VAULT_CLIENT_KEY"),
		TLSServerName: get("VAULT_TLS_SERVER_NAME"),
	}
	o.TLSSkipVerify, _ = strconv.ParseBool(get("VAULT_SKIP_VERIFY"))
	if id := get("VAULT_ROLE_ID"); id != "" {
		o.AppRole = &VaultAppRole{
			RoleID:       id,
			SecretID:     get("VAULT_SECRET_ID"),
			SecretIDFile: get("VAULT_SECRET_ID_FILE"),
			MountPath:    get("VAULT_APPROLE_MOUNT"),
		}
	}
	if role := get("VAULT_K8S_ROLE"); role != "" {
		o.Kubernetes = &VaultKubernetes{
			Role:      role,
			TokenPath: get("VAULT_K8S_TOKEN_PATH"),
			MountPath: get("VAULT_K8S_MOUNT"),
		}
	}
	return o
}

// kvMount is a secrets engine mount found by the preflight request.
type kvMount struct {
	path    string // with a trailing slash, e.g. "kv/" or "team/kv/"
	version int    // 2 for KV v2; 1 for KV v1 and every other engine
}

// vaultProvider resolves secret://vault references. The client is created,
// and logged in, on first use; a renewable login token is kept alive by a
// LifetimeWatcher, and when renewal stops (max TTL, revoked) the next
// resolution logs in again.
type vaultProvider struct {
	opt VaultOptions
	log hclog.Logger

	mu      sync.Mutex
	closed  bool
	client  *api.Client
	token   string // the token in use; "" means log in before the next read
	watcher *api.LifetimeWatcher
	mounts  []kvMount
	wg      sync.WaitGroup
}

func newVaultProvider(opt VaultOptions, log hclog.Logger) *vaultProvider {
	return &vaultProvider{opt: opt, log: log}
}

func (p *vaultProvider) close() {
	p.mu.Lock()
	p.closed = true
	w := p.watcher
	p.watcher = nil
	c := p.client
	p.mu.Unlock()
	if w != nil {
		w.Stop()
	}
	p.wg.Wait()
	if c != nil {
		c.CloneConfig().HttpClient.CloseIdleConnections()
	}
}

func (p *vaultProvider) fetch(ctx context.Context, ref Ref) (string, error) {
	c, tok, err := p.ensure(ctx)
	if err != nil {
		return "", err
	}
	v, err := p.read(ctx, c, ref)
	if err != nil && isVaultStatus(err, 403) && p.loginMethod() != "" {
		// A login token may have been revoked or expired between renewals:
		// log in again once.
		p.invalidate(tok)
		if c, _, err = p.ensure(ctx); err != nil {
			return "", err
		}
		v, err = p.read(ctx, c, ref)
	}
	return v, err
}

// loginMethod names the auth method that can obtain a new token, or "" for
// a static token.
func (p *vaultProvider) loginMethod() string {
	switch {
	case p.opt.Token != "":
		return ""
	case p.opt.AppRole != nil:
		return "approle"
	case p.opt.Kubernetes != nil:
		return "kubernetes"
	}
	return ""
}

// ensure returns a client with a token, creating and logging in as needed.
func (p *vaultProvider) ensure(ctx context.Context) (*api.Client, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, "", ErrClosed
	}
	if p.client == nil {
		c, err := p.newClient()
		if err != nil {
			return nil, "", err
		}
		p.client = c
	}
	if p.token != "" {
		return p.client, p.token, nil
	}
	if p.opt.Token != "" {
		p.client.SetToken(p.opt.Token)
		p.token = p.opt.Token
		p.watchStaticLocked(ctx)
		return p.client, p.token, nil
	}
	method, err := p.authMethod()
	if err != nil {
		return nil, "", err
	}
	s, err := p.client.Auth().Login(ctx, method)
	if err != nil {
		return nil, "", fmt.Errorf("vault: %s login: %w", p.loginMethod(), vaultReason(err))
	}
	if s == nil || s.Auth == nil || s.Auth.ClientToken == "" {
		return nil, "", fmt.Errorf("vault: %s login: no token in response", p.loginMethod())
	}
	p.token = s.Auth.ClientToken
	if s.Auth.Renewable {
		p.watchLocked(s)
	}
	return p.client, p.token, nil
}

func (p *vaultProvider) newClient() (*api.Client, error) {
	if p.opt.Address == "" {
		return nil, errors.New("vault: no address (set VAULT_ADDR)")
	}
	if p.opt.Token == "" && p.opt.AppRole == nil && p.opt.Kubernetes == nil {
		return nil, errors.New("vault: no credentials (set VAULT_TOKEN, VAULT_ROLE_ID and VAULT_SECRET_ID, or VAULT_K8S_ROLE)")
	}
	cfg := api.DefaultConfig()
	cfg.Address = p.opt.Address
	err := cfg.ConfigureTLS(&api.TLSConfig{
		CACert:        p.opt.CACert,
		CAPath:        p.opt.CAPath,
		ClientCert:    p.opt.ClientCert,
		ClientKey:     p.opt.ClientKey,
		TLSServerName: p.opt.TLSServerName,
		Insecure:      p.opt.TLSSkipVerify,
	})
	if err != nil {
		return nil, fmt.Errorf("vault: tls: %w", err)
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("vault: client: %w", err)
	}
	// NewClient reads VAULT_TOKEN and VAULT_NAMESPACE from the process
	// environment; the options are the only source here.
	c.ClearToken()
	if p.opt.Namespace != "" {
		c.SetNamespace(p.opt.Namespace)
	} else {
		c.ClearNamespace()
	}
	return c, nil
}

func (p *vaultProvider) authMethod() (api.AuthMethod, error) {
	if a := p.opt.AppRole; a != nil {
		sid := &approle.SecretID{FromString: a.SecretID}
		if a.SecretID == "" {
			sid = &approle.SecretID{FromFile: a.SecretIDFile}
		}
		var opts []approle.LoginOption
		if a.MountPath != "" {
			opts = append(opts, approle.WithMountPath(a.MountPath))
		}
		m, err := approle.NewAppRoleAuth(a.RoleID, sid, opts...)
		if err != nil {
			return nil, fmt.Errorf("vault: approle: %w", err)
		}
		return m, nil
	}
	k := p.opt.Kubernetes
	path := k.TokenPath
	if path == "" {
		path = DefaultK8sTokenPath
	}
	opts := []kubernetes.LoginOption{kubernetes.WithServiceAccountTokenPath(path)}
	if k.MountPath != "" {
		opts = append(opts, kubernetes.WithMountPath(k.MountPath))
	}
	m, err := kubernetes.NewKubernetesAuth(k.Role, opts...)
	if err != nil {
		return nil, fmt.Errorf("vault: kubernetes: %w", err)
	}
	return m, nil
}

// watchStaticLocked renews a static token when it is renewable (a periodic
// or TTL token); root and non-renewable tokens need nothing. watchStaticLocked
// requires p.mu.
func (p *vaultProvider) watchStaticLocked(ctx context.Context) {
	s, err := p.client.Auth().Token().LookupSelfWithContext(ctx)
	if err != nil || s == nil {
		p.log.Debug("vault token lookup", "error", vaultReason(err))
		return
	}
	renewable, _ := s.TokenIsRenewable()
	ttl, _ := s.TokenTTL()
	if !renewable || ttl <= 0 {
		return
	}
	p.watchLocked(&api.Secret{Auth: &api.SecretAuth{
		ClientToken:   p.token,
		Renewable:     true,
		LeaseDuration: int(ttl.Seconds()),
	}})
}

// watchLocked starts a LifetimeWatcher for the token in s. It requires p.mu.
func (p *vaultProvider) watchLocked(s *api.Secret) {
	w, err := p.client.NewLifetimeWatcher(&api.LifetimeWatcherInput{Secret: s})
	if err != nil {
		p.log.Warn("vault token renewal", "error", err)
		return
	}
	if p.watcher != nil {
		p.watcher.Stop()
	}
	p.watcher = w
	tok := s.Auth.ClientToken
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		w.Start()
	}()
	go func() {
		defer p.wg.Done()
		for {
			select {
			case err := <-w.DoneCh():
				// Renewal stopped: the token reached its max TTL, was revoked,
				// or Close stopped the watcher. Log in again on next use.
				p.mu.Lock()
				closed := p.closed
				if p.token == tok {
					p.token = ""
				}
				if p.watcher == w {
					p.watcher = nil
				}
				p.mu.Unlock()
				if !closed {
					p.log.Info("vault token renewal stopped", "error", err)
				}
				return
			case out := <-w.RenewCh():
				if out != nil && out.Secret != nil && out.Secret.Auth != nil {
					p.log.Debug("vault token renewed", "duration", out.Secret.Auth.LeaseDuration)
				}
			}
		}
	}()
}

func (p *vaultProvider) invalidate(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token == tok {
		p.token = ""
		if p.watcher != nil {
			p.watcher.Stop()
			p.watcher = nil
		}
	}
}

// read fetches ref.Field of the secret at ref.Path.
func (p *vaultProvider) read(ctx context.Context, c *api.Client, ref Ref) (string, error) {
	m, known, err := p.mount(ctx, c, ref.Path)
	if err != nil {
		return "", err
	}
	mount := strings.TrimSuffix(m.path, "/")
	rel := strings.TrimPrefix(ref.Path, m.path)
	if rel == "" || rel == ref.Path {
		return "", fmt.Errorf("vault: %s is the mount %s itself, not a secret in it", ref.Path, m.path)
	}
	var kv *api.KVSecret
	switch {
	case m.version == 2:
		kv, err = c.KVv2(mount).Get(ctx, rel)
	case known:
		kv, err = c.KVv1(mount).Get(ctx, rel)
	default:
		// The mount's version is unknown (the preflight was refused): try
		// KV v2 first, then a plain read.
		kv, err = c.KVv2(mount).Get(ctx, rel)
		if errors.Is(err, api.ErrSecretNotFound) || isVaultStatus(err, 403) || isVaultStatus(err, 404) {
			kv, err = c.KVv1(mount).Get(ctx, rel)
		}
	}
	if errors.Is(err, api.ErrSecretNotFound) {
		return "", notFound("vault: no secret at %s", ref.Path)
	}
	if err != nil {
		return "", fmt.Errorf("vault: read %s: %w", ref.Path, vaultReason(err))
	}
	if kv == nil || kv.Data == nil {
		return "", notFound("vault: no data at %s (deleted or destroyed version?)", ref.Path)
	}
	v, ok := kv.Data[ref.Field]
	if !ok {
		return "", notFound("vault: field %q not found at %s", ref.Field, ref.Path)
	}
	switch t := v.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return "", fmt.Errorf("vault: field %q at %s: cannot encode a %T", ref.Field, ref.Path, t)
		}
		return string(b), nil
	}
}

// mount finds the secrets engine mount holding path and its KV version,
// asking Vault once per mount (the same preflight the vault CLI makes).
// known is false when Vault refused to say; the caller then probes.
func (p *vaultProvider) mount(ctx context.Context, c *api.Client, path string) (m kvMount, known bool, err error) {
	p.mu.Lock()
	for _, m := range p.mounts {
		if strings.HasPrefix(path, m.path) {
			p.mu.Unlock()
			return m, true, nil
		}
	}
	p.mu.Unlock()

	first, _, _ := strings.Cut(path, "/")
	guess := kvMount{path: first + "/", version: 1}
	resp, err := c.Logical().ReadRawWithContext(ctx, "sys/internal/ui/mounts/"+path)
	if resp != nil {
		defer resp.Body.Close()
	}
	switch {
	case err == nil:
	case resp != nil && resp.StatusCode == 404:
		// Vault before 0.10.2 has no preflight endpoint and no KV v2.
		return guess, true, nil
	case resp != nil && resp.StatusCode == 403:
		return guess, false, nil
	default:
		if ctx.Err() != nil {
			return kvMount{}, false, ctx.Err()
		}
		return kvMount{}, false, fmt.Errorf("vault: mount of %s: %w", path, vaultReason(err))
	}
	s, err := api.ParseSecret(resp.Body)
	if err != nil || s == nil || s.Data == nil {
		return guess, false, nil
	}
	mp, _ := s.Data["path"].(string)
	if mp == "" {
		return guess, false, nil
	}
	if !strings.HasSuffix(mp, "/") {
		mp += "/"
	}
	m = kvMount{path: mp, version: 1}
	if opts, ok := s.Data["options"].(map[string]any); ok {
		if v, _ := opts["version"].(string); v == "2" {
			m.version = 2
		}
	}
	if !strings.HasPrefix(path, m.path) {
		// A namespaced answer, or one we do not understand: do not cache.
		return guess, false, nil
	}
	p.mu.Lock()
	p.mounts = append(p.mounts, m)
	p.mu.Unlock()
	return m, true, nil
}

// vaultError is a Vault API failure reduced to its status and messages (the
// library's own message spans several lines and repeats the URL).
type vaultError struct {
	status int
	msgs   []string
	err    error
}

func (e *vaultError) Error() string {
	if len(e.msgs) == 0 {
		return fmt.Sprintf("status %d", e.status)
	}
	return fmt.Sprintf("status %d: %s", e.status, strings.Join(e.msgs, "; "))
}
func (e *vaultError) Unwrap() error { return e.err }

func vaultReason(err error) error {
	var re *api.ResponseError
	if errors.As(err, &re) {
		msgs := make([]string, 0, len(re.Errors))
		for _, m := range re.Errors {
			msgs = append(msgs, truncate(strings.TrimSpace(m), 200))
		}
		return &vaultError{status: re.StatusCode, msgs: msgs, err: err}
	}
	return err
}

func isVaultStatus(err error, status int) bool {
	var re *api.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}
