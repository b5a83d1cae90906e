package sanitize

import (
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefOptions controls the cleaning of definitions (tools, prompts,
// resources, resource templates) when a catalog is ingested.
type DefOptions struct {
	// MaxDescription caps, in runes, every description and title and the
	// descriptive keywords of a schema (description, title, $comment,
	// markdownDescription). If zero, DefaultMaxDescription is used.
	MaxDescription int
	// Redactor, if not nil, is applied to every text and URI of a
	// definition. It does not touch names and other identifiers.
	Redactor Redactor
}

func (o DefOptions) cleaner() cleaner {
	limit := o.MaxDescription
	if limit <= 0 {
		limit = DefaultMaxDescription
	}
	return cleaner{r: o.Redactor, limit: limit}
}

// description cleans a definition's description: Text, the redactor, then
// Description for server (prefix, Neutralize, cap).
func (c *cleaner) description(server, s string) string {
	return c.prefixed("description", server, s, c.limit)
}

// prefixed cleans s (Text, the redactor) and gives it to Description for
// server and limit, recording the findings under where.
func (c *cleaner) prefixed(where, server, s string, limit int) string {
	t := Text(s)
	var found patternSet
	if t != s {
		found = hiddenBits(s)
	}
	d, fs := Description(server, c.redact(t), limit)
	found |= bitsOf(fs)
	c.add(where, found)
	return d
}

// Tool cleans a tool definition from server for the catalog. The name is
// not changed (the router names tools) but it is scanned and reported as
// PatternHiddenInIdentifier when it holds a character Text would remove.
// The description goes through Description (server prefix, cap); the
// title and the annotations' title are cleaned as text; the input and
// output schemas as in cleanSchema (boundary_schema.go): human text
// cleaned, structure (property names, type, format, pattern, required,
// $ref) kept and reported; _meta as in Meta; icons as in boundary.go. The
// annotations' hints are booleans and pass.
//
// The findings name the place ("name", "description", "inputSchema", …),
// never content. Tool returns a new tool and leaves t unchanged; it is
// idempotent.
func Tool(t *mcp.Tool, server string, o DefOptions) (*mcp.Tool, []Finding) {
	if t == nil {
		return nil, nil
	}
	c := o.cleaner()
	out := *t
	c.ident("name", t.Name)
	out.Title = c.text("title", t.Title)
	out.Description = c.description(server, t.Description)
	if a := t.Annotations; a != nil {
		if title := c.text("annotations.title", a.Title); title != a.Title {
			ca := *a
			ca.Title = title
			out.Annotations = &ca
		}
	}
	out.InputSchema = c.schema("inputSchema", t.InputSchema)
	out.OutputSchema = c.schema("outputSchema", t.OutputSchema)
	out.Meta = c.meta(t.Meta)
	out.Icons = c.icons("icons", t.Icons)
	return &out, c.findings()
}

// Prompt cleans a prompt definition from server as Tool does a tool. The
// prompt's and its arguments' names are identifiers (the client sends
// arguments back by name): kept and reported. Titles and argument
// descriptions are cleaned as text, the description goes through
// Description.
func Prompt(p *mcp.Prompt, server string, o DefOptions) (*mcp.Prompt, []Finding) {
	if p == nil {
		return nil, nil
	}
	c := o.cleaner()
	out := *p
	c.ident("name", p.Name)
	out.Title = c.text("title", p.Title)
	out.Description = c.description(server, p.Description)
	if p.Arguments != nil {
		out.Arguments = make([]*mcp.PromptArgument, 0, len(p.Arguments))
		for i, a := range p.Arguments {
			if a == nil {
				continue
			}
			where := "arguments[" + strconv.Itoa(i) + "]"
			ca := *a
			c.ident(where+".name", a.Name)
			ca.Title = c.text(where, a.Title)
			ca.Description = c.text(where, a.Description)
			out.Arguments = append(out.Arguments, &ca)
		}
	}
	out.Meta = c.meta(p.Meta)
	out.Icons = c.icons("icons", p.Icons)
	return &out, c.findings()
}

// Resource cleans a resource definition from server. The URI is the
// resource's key: redacted and neutralised but otherwise kept, and
// reported like an identifier. The name is a label here (resources are
// addressed by URI) and is cleaned as text, as are the title and MIME
// type; the description goes through Description; annotations, _meta and
// icons as in boundary.go. Size passes.
func Resource(r *mcp.Resource, server string, o DefOptions) (*mcp.Resource, []Finding) {
	if r == nil {
		return nil, nil
	}
	c := o.cleaner()
	out := *r
	out.URI = c.uri("uri", r.URI)
	out.Name = c.text("name", r.Name)
	out.Title = c.text("title", r.Title)
	out.Description = c.description(server, r.Description)
	out.MIMEType = c.text("mimeType", r.MIMEType)
	out.Annotations = c.annotations("annotations", r.Annotations)
	out.Meta = c.meta(r.Meta)
	out.Icons = c.icons("icons", r.Icons)
	return &out, c.findings()
}

// ResourceTemplate cleans a resource template definition from server as
// Resource does a resource; the URI template is treated as a URI.
func ResourceTemplate(t *mcp.ResourceTemplate, server string, o DefOptions) (*mcp.ResourceTemplate, []Finding) {
	if t == nil {
		return nil, nil
	}
	c := o.cleaner()
	out := *t
	out.URITemplate = c.uri("uriTemplate", t.URITemplate)
	out.Name = c.text("name", t.Name)
	out.Title = c.text("title", t.Title)
	out.Description = c.description(server, t.Description)
	out.MIMEType = c.text("mimeType", t.MIMEType)
	out.Annotations = c.annotations("annotations", t.Annotations)
	out.Meta = c.meta(t.Meta)
	out.Icons = c.icons("icons", t.Icons)
	return &out, c.findings()
}

// icons keeps the icons whose source is acceptable (see iconSource), with
// their MIME type, sizes and theme cleaned as text. It returns icons
// itself when nothing changed, and nil when no icon is left.
func (c *cleaner) icons(where string, icons []mcp.Icon) []mcp.Icon {
	if icons == nil {
		return nil
	}
	out := make([]mcp.Icon, 0, len(icons))
	changed := false
	for _, ic := range icons {
		if !c.iconSource(where, ic.Source) {
			changed = true
			continue
		}
		ci := ic
		ci.MIMEType = c.text(where, ic.MIMEType)
		ci.Sizes = c.texts(where, ic.Sizes)
		ci.Theme = label(c, where, ic.Theme)
		if ci.MIMEType != ic.MIMEType || ci.Theme != ic.Theme || !sameSlice(ci.Sizes, ic.Sizes) {
			changed = true
		}
		out = append(out, ci)
	}
	switch {
	case !changed:
		return icons
	case len(out) == 0:
		return nil
	}
	return out
}

// rasterDataPrefixes are the data: URI prefixes accepted as icon sources:
// raster images only, since an SVG can carry script.
var rasterDataPrefixes = []string{"data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp"}

// iconSource reports whether an icon source is kept: an https URL with a
// host or a data: URI of a raster image, all printable ASCII without
// spaces, that the redactor leaves alone and that holds no marker
// look-alike. A source with characters Text would remove, or a marker, is
// reported.
func (c *cleaner) iconSource(where, src string) bool {
	for i := 0; i < len(src); i++ {
		if src[i] <= ' ' || src[i] >= 0x7f {
			if Text(src) != src {
				c.add(where, pHiddenInIdentifier|pStrong)
			}
			return false
		}
	}
	if hasMarker(src) {
		c.add(where, pMarkerSpoof|pStrong)
		return false
	}
	if c.redact(src) != src {
		return false
	}
	lower := strings.ToLower(src)
	if rest, ok := strings.CutPrefix(lower, "https://"); ok {
		return rest != "" && rest[0] != '/'
	}
	for _, p := range rasterDataPrefixes {
		if rest, ok := strings.CutPrefix(lower, p); ok && rest != "" && (rest[0] == ';' || rest[0] == ',') {
			return true
		}
	}
	return false
}
