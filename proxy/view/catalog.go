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

// ResourceRoute is one exposed resource, keyed by its upstream URI.
type ResourceRoute struct {
	Entry    *ServerEntry
	Resource *mcp.Resource // as published
	defHash  string
}

// TemplateRoute is one exposed resource template.
type TemplateRoute struct {
	Entry    *ServerEntry
	Template *mcp.ResourceTemplate
	Compiled *uritemplate.Template
	defHash  string
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
// to the first in key order (noted as a collision).
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
			pub, findings := sanitize.Resource(r, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: b.Redactor})
			// Notes reach /status and the log: they name the cleaned
			// URI, never the upstream's (a secret or a marker in it).
			if owner, taken := v.Resources[r.URI]; taken {
				v.Notes.collide("resource", pub.URI, owner.Entry.Key, e.Key, "")
				continue
			}
			if !v.Notes.definitionOK(snap, e.Key, "resource", pub.URI, findings) {
				continue
			}
			pub.Title = serverTitle(pub.Title, pub.Name, e.Key)
			v.Resources[r.URI] = &ResourceRoute{Entry: e, Resource: pub, defHash: defHash(pub, e.HandleKey)}
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
			v.Templates = append(v.Templates, &TemplateRoute{Entry: e, Template: pub, Compiled: compiled, defHash: defHash(pub, e.HandleKey)})
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

// OwnerOf finds the route that serves uri: an exact listed URI first, then
// the first template that matches (servers in key order).
func (v *View) OwnerOf(uri string) *ServerEntry {
	if r, ok := v.Resources[uri]; ok {
		return r.Entry
	}
	for _, t := range v.Templates {
		if t.Compiled.Match(uri) != nil {
			return t.Entry
		}
	}
	return nil
}

// catalogOf returns the catalog a server entry currently exposes, or nil.
func catalogOf(e *ServerEntry) *upstream.Catalog {
	if e.Handle == nil {
		return nil
	}
	return e.Handle.Catalog()
}
