package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on listing a catalog: a server that paginates forever, or lists
// without end, is refused rather than followed.
const (
	maxListPages = 100
	maxListItems = 10000
	// maxListBytes bounds the JSON of one list, all pages together: a
	// real server's tools/list is well under 1 MiB.
	maxListBytes = 4 << 20
)

// The lists a catalog is made of, by their methods. Only ListTools decides
// whether a start succeeds; the others may fail and leave the catalog
// partial (see Catalog.Errors).
const (
	ListTools     = "tools/list"
	ListPrompts   = "prompts/list"
	ListResources = "resources/list"
	ListTemplates = "resources/templates/list"
)

// Catalog is what an upstream offers, listed through all pages. It is
// immutable once published.
type Catalog struct {
	Tools     []*mcp.Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// Errors holds, by method (ListPrompts, ListResources, ListTemplates),
	// the upstream's message for each list that failed at the last
	// attempt; nil when the catalog is complete. A failed list keeps the
	// items it had in the catalog before (none at the first start), and is
	// asked for again on the server's next list_changed or after a backoff
	// of 5 s doubling to 5 min. A failing tools/list fails the start.
	Errors map[string]string
	// Extensions are the extensions the server declared in its
	// capabilities (io.modelcontextprotocol/ui, ...), as it declared them.
	Extensions map[string]any

	// params are the Mcp-Param-* bindings of the tools of a 2026-07-28
	// server (paramheaders.go), by tool name.
	params map[string][]paramBinding
}

// Catalog completeness, as Status reports it.
const (
	CatalogComplete = "complete"
	CatalogPartial  = "partial"
)

// listRetryBase is the delay before a failed list (other than tools/list)
// is asked for again; it doubles after each failed retry up to listRetryMax.
const (
	listRetryBase = 5 * time.Second
	listRetryMax  = 5 * time.Minute
)

// listRetryDelay is the delay before retry n (1-based) of the failing lists,
// ±10 %.
func listRetryDelay(n int) time.Duration { return backoffDelay(n, listRetryBase, listRetryMax) }

// Complete reports whether every list the server advertises was listed at
// the last attempt. See #23.
func (c *Catalog) Complete() bool { return len(c.Errors) == 0 }

// failedLists is the set of lists to ask for again.
func (c *Catalog) failedLists() map[string]bool {
	only := make(map[string]bool, len(c.Errors))
	for m := range c.Errors {
		only[m] = true
	}
	return only
}

// list is one of the catalog's lists while it is being listed.
type list struct {
	method string
	listed bool         // advertised by the server and not skipped by the spec
	fetch  func() error // lists into a fresh slice
	keep   func()       // publishes the fresh slice
	clear  func()       // the list is not listed: empty
	err    error
}

// listCatalog lists the server's catalog, following every page. It starts
// from prev (nil: nothing known yet) and asks only for the lists in only
// (nil: every list); a list that fails keeps prev's items and its error goes
// to the result's Errors, except a failing tools/list, which fails the whole
// listing. Lists the server does not advertise, or that the spec skips, are
// empty and never asked for.
func listCatalog(ctx context.Context, cl *client, sp *Spec, prev *Catalog, only map[string]bool) (*Catalog, error) {
	caps := serverCaps(cl)
	cat := &Catalog{}
	if caps != nil {
		cat.Extensions = relayable(caps.Extensions, cl.isModern())
	}
	if prev != nil {
		cat.Tools, cat.Prompts, cat.Resources, cat.Templates, cat.params = prev.Tools, prev.Prompts, prev.Resources, prev.Templates, prev.params
	}
	var (
		tools     []*mcp.Tool
		prompts   []*mcp.Prompt
		resources []*mcp.Resource
		templates []*mcp.ResourceTemplate
	)
	resourcesListed := caps != nil && caps.Resources != nil && !sp.SkipResources
	lists := []*list{
		{
			method: ListTools, listed: caps == nil || caps.Tools != nil,
			fetch: func() error {
				return listAll(ctx, cl, ListTools, func(r *mcp.ListToolsResult) ([]*mcp.Tool, string) { return r.Tools, r.NextCursor }, &tools)
			},
			keep: func() { cat.Tools, cat.params = tools, toolParams(cl, tools) }, clear: func() { cat.Tools, cat.params = nil, nil },
		},
		{
			method: ListPrompts, listed: caps != nil && caps.Prompts != nil && !sp.SkipPrompts,
			fetch: func() error {
				return listAll(ctx, cl, ListPrompts, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor }, &prompts)
			},
			keep: func() { cat.Prompts = prompts }, clear: func() { cat.Prompts = nil },
		},
		{
			method: ListResources, listed: resourcesListed,
			fetch: func() error {
				return listAll(ctx, cl, ListResources, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor }, &resources)
			},
			keep: func() { cat.Resources = resources }, clear: func() { cat.Resources = nil },
		},
		{
			method: ListTemplates, listed: resourcesListed,
			fetch: func() error {
				return listAll(ctx, cl, ListTemplates, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
					return r.ResourceTemplates, r.NextCursor
				}, &templates)
			},
			keep: func() { cat.Templates = templates }, clear: func() { cat.Templates = nil },
		},
	}
	// The lists are independent: ask for them at once, so a remote server's
	// catalog costs one round trip per page rather than one per list.
	var wg sync.WaitGroup
	for _, l := range lists {
		if only != nil && !only[l.method] {
			continue
		}
		if !l.listed {
			l.clear()
			continue
		}
		wg.Go(func() { l.err = l.fetch() })
	}
	wg.Wait()
	for _, l := range lists {
		if only != nil && !only[l.method] {
			if msg := prev.errorOf(l.method); msg != "" {
				cat.setError(l.method, msg) // not asked again: still failing
			}
			continue
		}
		if !l.listed {
			continue
		}
		switch {
		case l.err == nil:
			l.keep()
		case l.method == ListTools:
			return nil, fmt.Errorf("%s: %w", l.method, l.err)
		default:
			cat.setError(l.method, timeoutCause(ctx, l.err).Error())
		}
	}
	return cat, nil
}

// errorOf is why method failed at the last attempt, or "". c may be nil.
func (c *Catalog) errorOf(method string) string {
	if c == nil {
		return ""
	}
	return c.Errors[method]
}

func (c *Catalog) setError(method, msg string) {
	if c.Errors == nil {
		c.Errors = map[string]string{}
	}
	c.Errors[method] = msg
}

// listAll appends every item of a paginated list to dst. A server that does
// not implement the method (-32601) has an empty list. Errors do not name
// the method: a JSON-RPC error is the upstream's own message.
func listAll[R any, T any](ctx context.Context, cl *client, method string, page func(*R) ([]T, string), dst *[]T) error {
	cursor := ""
	size := 0
	for pages := 0; ; pages++ {
		if pages == maxListPages {
			return fmt.Errorf("more than %d pages", maxListPages)
		}
		params := &mcp.ListToolsParams{Cursor: cursor}
		raw, err := cl.call(ctx, method, params, nil)
		if err != nil {
			var we *jsonrpc.Error
			if errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound && pages == 0 {
				return nil
			}
			return err
		}
		if size += len(raw); size > maxListBytes {
			return fmt.Errorf("more than %d MiB over %d pages", maxListBytes>>20, pages+1)
		}
		var r R
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		items, next := page(&r)
		if len(*dst)+len(items) > maxListItems {
			return fmt.Errorf("more than %d items", maxListItems)
		}
		*dst = append(*dst, items...)
		if next == "" {
			return nil
		}
		if next == cursor {
			return errors.New("the server returned the same cursor again")
		}
		cursor = next
	}
}

// relayable are the extensions of a server that switchboard can relay to
// its clients. A legacy server is told at initialize only the extensions
// switchboard relays for every client (RelayedExtensions), never a
// caller's own, so it creates no task for anyone: its tasks extension is
// not one to declare downstream. A 2026-07-28 server gets each caller's
// extensions with the request.
func relayable(ext map[string]any, modern bool) map[string]any {
	if _, ok := ext[TasksExtension]; !ok || modern {
		return ext
	}
	out := maps.Clone(ext)
	delete(out, TasksExtension)
	return out
}
