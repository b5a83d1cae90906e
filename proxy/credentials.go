package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/accesstoken"
)

// resolveAuth resolves every downstream token and credential (they may be
// secret references) and builds the identity provider's token check.
// Resolution happens at load and reload, never per request.
func (p *Proxy) resolveAuth(ctx context.Context, c *config.Config) (dispatch.Access, error) {
	t := &dispatch.Tokens{}
	var errs []error
	resolve := func(path, ref string) (string, bool) {
		v, err := p.resolver.Expand(ctx, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return "", false
		}
		p.redactor.Add(v)
		return v, true
	}
	add := func(path, ref, view string, any bool) {
		if v, ok := resolve(path, ref); ok && v == "" {
			errs = append(errs, fmt.Errorf("%s: resolved to an empty token", path))
		} else if ok {
			t.Add(v, path, view, any)
		}
	}
	if c.Auth != nil {
		for i, tok := range c.Auth.Tokens {
			add(fmt.Sprintf("auth.tokens[%d]", i), tok, "", true)
		}
	}
	if c.Agents != nil {
		for i, ag := range c.Agents.List {
			if ag == nil {
				continue
			}
			for j, tok := range ag.Tokens {
				add(fmt.Sprintf("agents.list[%d].tokens[%d]", i, j), tok, ag.ID, false)
			}
		}
	}
	acc := dispatch.Access{Tokens: t}
	if c.Admin != nil && c.Admin.ReloadToken != "" {
		acc.ReloadToken, _ = resolve("admin.reloadToken", c.Admin.ReloadToken)
	}
	if c.Auth != nil && c.Auth.OAuth != nil { // built once per config, its caches kept for the generation
		acc.OAuth = accesstoken.FromConfig(c.Auth.OAuth, resolve)
	}
	return acc, errors.Join(errs...)
}

// minKey is the fewest bytes requestStateKey and sessionKey may resolve to.
const minKey = 32

// resolveKey resolves the key field names, whose value is ref ("":
// unset); the key is redacted from then on.
func (p *Proxy) resolveKey(ctx context.Context, field, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	v, err := p.resolver.Expand(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if len(v) < minKey {
		return "", fmt.Errorf("%s: resolved to %d bytes; at least %d are needed (e.g. openssl rand -base64 48)", field, len(v), minKey)
	}
	p.redactor.Add(v)
	return v, nil
}
