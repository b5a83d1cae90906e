package view

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// ResourceContextPrompt is the built-in prompt that returns every visible
// resource of the view, read and wrapped as untrusted, as one context block.
const ResourceContextPrompt = "switchboard_resource_context"

// PromptRoute is one public prompt.
type PromptRoute struct {
	Public   string
	Entry    *ServerEntry
	Original string
	Prompt   *mcp.Prompt // as published
	defHash  string
}

// ResourceRoute is one exposed resource, keyed by its public URI: the
// upstream's, or for a ui:// URI its namespaced form (router.AppURI).
type ResourceRoute struct {
	Entry    *ServerEntry
	URI      string        // the upstream's own
	Resource *mcp.Resource // as published
	defHash  string
}

// TemplateRoute is one exposed resource template.
type TemplateRoute struct {
	Entry    *ServerEntry
	Template *mcp.ResourceTemplate // as published: a ui:// one namespaced
	Compiled *uritemplate.Template // the upstream's
	// App: a ui:// template, published namespaced; its URIs are routed
	// by their prefix (Locate), never matched against other servers'.
	App     bool
	defHash string
}

func defHash(v any, extra string) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]) + extra
}

// buildPrompts builds the view's prompt table: the same naming and policy
// as tools.
func (b *Builder) buildPrompts(snap *Snapshot, spec *Spec, v *View) {
	var items []router.Item
	type src struct {
		entry  *ServerEntry
		prompt *mcp.Prompt
	}
	byItem := map[router.Target]src{}
	for _, e := range spec.Servers {
		cat := catalogOf(e)
		if cat == nil || !e.ListPrompts || !v.ShowsServer(e) {
			continue
		}
		for _, p := range cat.Prompts {
			items = append(items, router.Item{Server: e.Key, Prefix: e.Prefix, Name: p.Name, Bare: e.Bare})
			byItem[router.Target{Server: e.Key, Name: p.Name}] = src{e, p}
		}
	}
	table := buildNames("prompt", items, &v.Notes)
	maxDesc := maxDescriptionChars(snap.Config)
	v.Prompts = map[string]*PromptRoute{}
	for _, en := range table.Entries() {
		s := byItem[en.Target]
		if names := policyNames(en.Public, s.entry, s.prompt.Name); !spec.Prompts.AllowsAny(names...) || !s.entry.Prompts.AllowsAny(names...) {
			continue
		}
		pub, findings := sanitize.Prompt(s.prompt, s.entry.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: b.Redactor})
		if !v.Notes.definitionOK(snap, s.entry.Key, "prompt", s.prompt.Name, findings) {
			continue
		}
		pub.Name = en.Public
		v.Prompts[en.Public] = &PromptRoute{Public: en.Public, Entry: s.entry, Original: s.prompt.Name, Prompt: pub, defHash: defHash(pub, s.entry.HandleKey)}
	}
	builtin := &mcp.Prompt{Name: ResourceContextPrompt, Title: "Resource context",
		Description: "Every resource this endpoint exposes, read and wrapped as untrusted external content, as one context block."}
	v.Prompts[ResourceContextPrompt] = &PromptRoute{Public: ResourceContextPrompt, Prompt: builtin, defHash: defHash(builtin, "")}
}

// buildResources builds the owner map: a URI served by two servers belongs
// to the first in key order (noted as a collision). A ui:// URI is
// published under its server's prefix (router.AppURI), so it never
// collides; one that only tools the view's policy hides name is not
// published.
func (b *Builder) buildResources(snap *Snapshot, spec *Spec, v *View) {
	maxDesc := maxDescriptionChars(snap.Config)
	v.Resources = map[string]*ResourceRoute{}
	v.Templates = nil
	for _, e := range spec.Servers {
		cat := catalogOf(e)
		if cat == nil || !e.Resources || !v.ShowsServer(e) {
			continue
		}
		for _, r := range cat.Resources {
			if r == nil || !keepURI(e.Filter, r.URI) {
				continue
			}
			if v.apps.deniedApp(e, r.URI) {
				continue
			}
			pub, findings := sanitize.Resource(r, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: b.Redactor})
			key := router.AppURI(e.Prefix, r.URI)
			pub.URI = router.AppURI(e.Prefix, pub.URI)
			// Notes reach /status and the log: they name the cleaned
			// URI, never the upstream's (a secret or a marker in it).
			if owner, taken := v.Resources[key]; taken {
				v.Notes.collide("resource", pub.URI, owner.Entry.Key, e.Key, "")
				continue
			}
			if !v.Notes.definitionOK(snap, e.Key, "resource", pub.URI, findings) {
				continue
			}
			pub.Title = serverTitle(pub.Title, pub.Name, e.Key)
			v.Resources[key] = &ResourceRoute{Entry: e, URI: r.URI, Resource: pub, defHash: defHash(pub, e.HandleKey)}
		}
		for _, t := range cat.Templates {
			if t == nil {
				continue
			}
			pub, findings := sanitize.ResourceTemplate(t, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: b.Redactor})
			compiled, err := uritemplate.New(t.URITemplate)
			if err != nil {
				v.Notes.skipped(e.Key, "template", pub.URITemplate, errors.New(sanitize.URI(err.Error(), b.Redactor)))
				continue
			}
			if !v.Notes.definitionOK(snap, e.Key, "template", pub.URITemplate, findings) {
				continue
			}
			pub.Title = serverTitle(pub.Title, pub.Name, e.Key)
			app := router.IsAppURI(t.URITemplate)
			pub.URITemplate = router.AppURI(e.Prefix, pub.URITemplate)
			v.Templates = append(v.Templates, &TemplateRoute{Entry: e, Template: pub, Compiled: compiled, App: app, defHash: defHash(pub, e.HandleKey)})
		}
	}
}

// serverTitle gives a resource's (cleaned) title the server as context.
func serverTitle(title, name, server string) string {
	if title == "" {
		title = name
	}
	return title + " (" + server + ")"
}

func keepURI(filter []string, uri string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.Contains(uri, f) {
			return true
		}
	}
	return false
}

// Locate finds the server that serves uri, as a client names it, and the
// URI that server knows it by: an exact listed URI first; then a public
// ui:// URI (router.AppURI) by its prefix, when the view shows that
// server, its resources are exposed, its resourceFilter keeps the URI and
// the view's policy does not deny it (appIndex.deniedApp), listed or not
// (a tool may name a UI resource its server does not list); then the
// first template that matches (servers in key order). A nil entry: no
// server of the view serves uri.
func (v *View) Locate(uri string) (*ServerEntry, string) {
	if r, ok := v.Resources[uri]; ok {
		return r.Entry, r.URI
	}
	if prefix, own, ok := router.SplitAppURI(uri); ok {
		e := v.apps.byPrefix[prefix]
		if e != nil && v.ShowsServer(e) && e.Resources && keepURI(e.Filter, own) && !v.apps.deniedApp(e, own) {
			return e, own
		}
		return nil, ""
	}
	for _, t := range v.Templates {
		if !t.App && t.Compiled.Match(uri) != nil {
			return t.Entry, uri
		}
	}
	return nil, ""
}

// catalogOf returns the catalog a server entry currently exposes, or nil.
func catalogOf(e *ServerEntry) *upstream.Catalog {
	if e.Handle == nil {
		return nil
	}
	return e.Handle.Catalog()
}
