package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on listing a catalog: a server that paginates forever, or lists
// without end, is refused rather than followed.
const (
	maxListPages = 100
	maxListItems = 10000
)

// listCatalog lists everything the server advertises, following every page.
func listCatalog(ctx context.Context, cl *client) (*Catalog, error) {
	var caps *mcp.ServerCapabilities
	if ir := cl.initializeResult(); ir != nil {
		caps = ir.Capabilities
	}
	// The lists are independent: ask for them at once, so a remote server's
	// catalog costs one round trip per page rather than one per list.
	cat := &Catalog{}
	var (
		wg   sync.WaitGroup
		errs [3]error
	)
	if caps == nil || caps.Tools != nil {
		wg.Go(func() {
			errs[0] = listAll(ctx, cl, "tools/list", func(r *mcp.ListToolsResult) ([]*mcp.Tool, string) { return r.Tools, r.NextCursor }, &cat.Tools)
		})
	}
	if caps != nil && caps.Prompts != nil {
		wg.Go(func() {
			errs[1] = listAll(ctx, cl, "prompts/list", func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor }, &cat.Prompts)
		})
	}
	if caps != nil && caps.Resources != nil {
		wg.Go(func() {
			errs[2] = listAll(ctx, cl, "resources/list", func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor }, &cat.Resources)
		})
		// Templates are optional in practice: some servers answer
		// method-not-found, which leaves the list as far as it got.
		wg.Go(func() {
			_ = listAll(ctx, cl, "resources/templates/list", func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
				return r.ResourceTemplates, r.NextCursor
			}, &cat.Templates)
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return cat, nil
}

// listAll appends every item of a paginated list to dst. A server that does
// not implement the method (-32601) has an empty list.
func listAll[R any, T any](ctx context.Context, cl *client, method string, page func(*R) ([]T, string), dst *[]T) error {
	cursor := ""
	for pages := 0; ; pages++ {
		if pages == maxListPages {
			return fmt.Errorf("%s: more than %d pages", method, maxListPages)
		}
		params := &mcp.ListToolsParams{Cursor: cursor}
		raw, err := cl.call(ctx, method, params, nil)
		if err != nil {
			var we *jsonrpc.Error
			if errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound && pages == 0 {
				return nil
			}
			return fmt.Errorf("%s: %w", method, err)
		}
		var r R
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: decode: %w", method, err)
		}
		items, next := page(&r)
		if len(*dst)+len(items) > maxListItems {
			return fmt.Errorf("%s: more than %d items", method, maxListItems)
		}
		*dst = append(*dst, items...)
		if next == "" {
			return nil
		}
		if next == cursor {
			return fmt.Errorf("%s: the server returned the same cursor again", method)
		}
		cursor = next
	}
}
