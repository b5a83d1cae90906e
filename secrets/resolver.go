package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// ErrClosed is returned by a Resolver after Close.
var ErrClosed = errors.New("secrets: resolver closed")

// ErrNotFound matches (with errors.Is) every error that says a secret, a
// field, a key or an environment variable does not exist.
var ErrNotFound = errors.New("secret not found")

// notFoundError is a not-found error with its own message.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(format string, args ...any) error {
	return &notFoundError{msg: fmt.Sprintf(format, args...)}
}

// ResolveError is the error for one reference that could not be resolved.
// Its message is the reference followed by the provider's reason; it never
// contains a secret value.
type ResolveError struct {
	Ref Ref
	Err error
}

func (e *ResolveError) Error() string { return e.Ref.String() + ": " + e.Err.Error() }
func (e *ResolveError) Unwrap() error { return e.Err }

// Options configures a Resolver. The zero value resolves env and file
// references from the process environment and the local file system, and
// reaches Vault, GCP and AWS through their standard environment and
// credential chains when a reference needs them.
type Options struct {
	// Env looks up environment variables for secret://env/NAME, ${NAME},
	// GOOGLE_CLOUD_PROJECT and, when Vault is nil, the VAULT_* variables.
	// If nil, os.LookupEnv is used.
	Env func(string) (string, bool)
	// Redact receives every resolved secret:// value. If nil, values are not
	// registered anywhere. Values of ${NAME} interpolations are not
	// registered: ${NAME} is plain configuration (use secret://env/NAME for
	// a credential).
	Redact *Set
	// Vault configures the Vault client. If nil, it is read from the VAULT_*
	// environment (see VaultOptions).
	Vault *VaultOptions
	// GCP configures GCP Secret Manager. If nil, the application-default
	// credential chain and GOOGLE_CLOUD_PROJECT are used.
	GCP *GCPOptions
	// Helper configures the secrets helper, which reads secret://aws
	// references with the AWS SDK's standard config chain (environment,
	// shared config, web identity). If nil, the zero HelperOptions.
	Helper *HelperOptions
	// Logger receives Vault token renewal events. If nil, nothing is logged.
	Logger hclog.Logger
	// Concurrency bounds the references ExpandMap resolves at once. If zero,
	// 8 is used.
	Concurrency int
}

// Resolver expands secret references in config values when a server starts.
// It caches nothing between calls, so every start sees rotated values;
// within one ExpandMap call each distinct reference is fetched once.
// Clients for Vault, GCP and AWS are created on first use and kept.
//
// A Resolver is safe for concurrent use.
type Resolver struct {
	opt Options
	env func(string) (string, bool)
	log hclog.Logger

	mu     sync.Mutex
	closed bool
	vault  *vaultProvider
	gcp    *gcpProvider
	helper *helperProc
}

// NewResolver returns a Resolver. It does not contact any backend.
func NewResolver(opt Options) *Resolver {
	r := &Resolver{opt: opt, env: opt.Env, log: opt.Logger}
	if r.env == nil {
		r.env = os.LookupEnv
	}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.opt.Concurrency <= 0 {
		r.opt.Concurrency = 8
	}
	return r
}

// Close stops background work (Vault token renewal) and releases idle
// connections. It is idempotent and safe to call concurrently; Expand fails
// with ErrClosed afterwards.
func (r *Resolver) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	v, g, h := r.vault, r.gcp, r.helper
	r.mu.Unlock()
	if v != nil {
		v.close()
	}
	if g != nil {
		g.close()
	}
	if h != nil {
		h.close()
	}
	return nil
}

// Expand resolves every reference in value and returns the expanded value.
// A value without references is returned with its $${ escapes undone.
// Errors name the reference (or the variable) and the provider's reason,
// never a value.
func (r *Resolver) Expand(ctx context.Context, value string) (string, error) {
	if r.isClosed() {
		return "", ErrClosed
	}
	segs, err := parseTemplate(value)
	if err != nil {
		return "", err
	}
	vals := map[Ref]string{}
	for _, s := range segs {
		if s.kind != segRef {
			continue
		}
		if _, ok := vals[s.ref]; ok {
			continue
		}
		v, err := r.resolve(ctx, s.ref)
		if err != nil {
			return "", err
		}
		vals[s.ref] = v
	}
	return r.assemble(segs, vals)
}

// ExpandMap expands every value of m (an env or headers map). Distinct
// references are resolved in parallel, each once. On failure it returns nil
// and errors.Join of one error per failing key, each prefixed by the key, in
// key order.
func (r *Resolver) ExpandMap(ctx context.Context, m map[string]string) (map[string]string, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	parsed, refs, err := parseValues(m, keys)
	if err != nil {
		return nil, err
	}
	vals, fails := r.resolveAll(ctx, refs)
	return r.assembleValues(keys, parsed, vals, fails)
}

// parseValues parses the value of every key of m, in the order of keys, and
// lists the distinct references they hold in order of first use.
func parseValues(m map[string]string, keys []string) (map[string][]segment, []Ref, error) {
	parsed := make(map[string][]segment, len(m))
	var errs []error
	var refs []Ref
	seen := map[Ref]bool{}
	for _, k := range keys {
		segs, err := parseTemplate(m[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		parsed[k] = segs
		for _, s := range segs {
			if s.kind == segRef && !seen[s.ref] {
				seen[s.ref] = true
				refs = append(refs, s.ref)
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return parsed, refs, nil
}

// resolveAll resolves refs in parallel, at most Options.Concurrency at once.
// It returns the values, and the error of each reference that failed.
func (r *Resolver) resolveAll(ctx context.Context, refs []Ref) (map[Ref]string, map[Ref]error) {
	vals := make(map[Ref]string, len(refs))
	fails := make(map[Ref]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.opt.Concurrency)
	for _, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				mu.Lock()
				fails[ref] = &ResolveError{Ref: ref, Err: ctx.Err()}
				mu.Unlock()
				return
			}
			v, err := r.resolve(ctx, ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fails[ref] = err
			} else {
				vals[ref] = v
			}
		}()
	}
	wg.Wait()
	return vals, fails
}

// assembleValues builds the expanded value of every key, in the order of
// keys. A key whose references failed gets one error per distinct failure.
func (r *Resolver) assembleValues(keys []string, parsed map[string][]segment, vals map[Ref]string, fails map[Ref]error) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	var errs []error
	for _, k := range keys {
		segs := parsed[k]
		var kerrs []error
		for _, s := range segs {
			if s.kind == segRef && fails[s.ref] != nil && !slices.Contains(kerrs, fails[s.ref]) {
				kerrs = append(kerrs, fails[s.ref])
			}
		}
		if len(kerrs) > 0 {
			for _, e := range kerrs {
				errs = append(errs, fmt.Errorf("%s: %w", k, e))
			}
			continue
		}
		v, err := r.assemble(segs, vals)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		out[k] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// assemble joins segments with resolved values and environment lookups.
func (r *Resolver) assemble(segs []segment, vals map[Ref]string) (string, error) {
	if len(segs) == 1 && segs[0].kind == segRef {
		return vals[segs[0].ref], nil
	}
	var b strings.Builder
	var errs []error
	for _, s := range segs {
		switch s.kind {
		case segLiteral:
			b.WriteString(s.text)
		case segRef:
			b.WriteString(vals[s.ref])
		case segEnv:
			v, ok := r.env(s.text)
			if !ok {
				errs = append(errs, notFound("${%s}: environment variable %s is not set", s.text, s.text))
				continue
			}
			b.WriteString(v)
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}

// resolve fetches one reference and registers its value with the redactor.
func (r *Resolver) resolve(ctx context.Context, ref Ref) (string, error) {
	v, err := r.fetch(ctx, ref)
	if err != nil {
		return "", &ResolveError{Ref: ref, Err: err}
	}
	if r.opt.Redact != nil {
		r.opt.Redact.Add(v)
	}
	return v, nil
}

func (r *Resolver) fetch(ctx context.Context, ref Ref) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	switch ref.Provider {
	case ProviderEnv:
		return r.fetchEnv(ref)
	case ProviderFile:
		return fetchFile(ctx, ref)
	case ProviderVault:
		p, err := r.vaultProvider()
		if err != nil {
			return "", err
		}
		return p.fetch(ctx, ref)
	case ProviderGCP:
		p, err := r.gcpProvider()
		if err != nil {
			return "", err
		}
		return p.fetch(ctx, ref)
	case ProviderAWS:
		p, err := r.helperProc()
		if err != nil {
			return "", err
		}
		return p.fetch(ctx, ProviderAWS, ref)
	}
	return "", fmt.Errorf("unknown provider %q", ref.Provider)
}

func (r *Resolver) vaultProvider() (*vaultProvider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.vault == nil {
		opt := r.opt.Vault
		if opt == nil {
			opt = vaultOptionsFromEnv(r.env)
		}
		r.vault = newVaultProvider(*opt, r.log.Named("vault"))
	}
	return r.vault, nil
}

func (r *Resolver) gcpProvider() (*gcpProvider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.gcp == nil {
		var opt GCPOptions
		if r.opt.GCP != nil {
			opt = *r.opt.GCP
		}
		if opt.Project == "" {
			opt.Project, _ = r.env("GOOGLE_CLOUD_PROJECT")
		}
		r.gcp = newGCPProvider(opt)
	}
	return r.gcp, nil
}

func (r *Resolver) helperProc() (*helperProc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.helper == nil {
		var opt HelperOptions
		if r.opt.Helper != nil {
			opt = *r.opt.Helper
		}
		r.helper = newHelperProc(opt, r.env, r.log.Named("helper"))
	}
	return r.helper, nil
}

func (r *Resolver) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
