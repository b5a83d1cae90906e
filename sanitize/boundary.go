package sanitize

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The trust boundary (DESIGN §12).
//
// Every byte an upstream produces that can reach a client passes exactly
// one function of this package, chosen by the kind of message:
//
//	tools/call result                  ToolResult
//	resources/read result              ReadResult
//	prompts/get result                 PromptResult
//	JSON-RPC error to any call         Error
//	tools/list entry                   Tool
//	prompts/list entry                 Prompt
//	resources/list entry               Resource
//	resources/templates/list entry     ResourceTemplate
//	completion/complete result         Completion
//	notifications/message              LogMessage
//	notifications/progress             Progress
//	notifications/resources/updated    ResourceUpdated
//	notifications/cancelled            Cancelled
//	sampling/createMessage             CreateMessage, CreateMessageWithTools
//	elicitation/create                 Elicit
//	roots/list                         ListRoots (no content: only _meta)
//	*/list_changed and any other _meta Meta
//
// Input requests embedded in a result (SEP-2322 inputRequests) go through
// the function of their kind from inside ToolResult, ReadResult and
// PromptResult.
//
// Each string of a message gets one of these treatments, by what it is:
//
//   - Text, read by a model or a person (descriptions, titles, messages,
//     log data, completion values, labels such as MIME types and roles):
//     Text, then the Redactor, then Scan, then Neutralize. Where it is
//     content a model reads and Options.Wrap is set (result texts, error
//     messages, string log data, sampling messages and system prompts) it
//     is wrapped in a boundary instead, as ToolResult does. Definitions cap
//     their texts at DefOptions.MaxDescription.
//   - Identifiers, which something matches byte for byte (tool, prompt and
//     argument names, schema property names and the machine keywords of a
//     schema: type, format, pattern, $ref, required …): kept, scanned, and
//     reported as PatternHiddenInIdentifier when Text would change them.
//     The router names tools; it refuses or rewrites what is reported here.
//   - URIs: redacted (percent-decoded too, the replacement itself
//     percent-encoded: see uri.go) and neutralised, otherwise kept so
//     that they still name their resource; scanned and reported like
//     identifiers.
//   - Icon sources: kept only when they are https or a data: URI of a
//     raster image (png, jpeg, gif, webp), printable ASCII, hold no secret
//     and no marker look-alike; otherwise the icon is dropped. An SVG can
//     carry script, other schemes (http, file, javascript) have no place
//     in a client's UI.
//   - JSON data (structured content, error data, log data, sampling
//     metadata, tool-use input, schema values such as default, enum and
//     examples): every string, object keys included, treated as text.
//     A key whose cleaned form collides with another key is dropped.
//   - _meta: like JSON data, but not scanned: it is protocol metadata, not
//     content. A string in it that reads as a URI (an MCP App's
//     ui.resourceUri) is redacted as a URI as well.
//   - Opaque tokens (request and progress IDs, request state, elicitation
//     and tool-use IDs): passed through; the proxy maps or echoes them and
//     no model or person reads them.
//
// Numbers, booleans and binary data (images, audio, blobs: size-limited and
// flagged by a note in results) pass as they are. coverage_test.go lists
// every field of every message kind as handled or passed through, and
// fails when the go-sdk types gain a field that is on neither list.
//
// Text comes before the Redactor, so that an invisible character cannot
// split a secret past the Redactor for Text to join it again. Scan sees the
// redacted text before neutralisation (so a marker look-alike is reported),
// plus the hidden-Unicode statistics of the raw text, whose invisible
// characters Text removed.
//
// In ModeBlock a message with findings is withheld; what that means per
// kind is in each function's comment. Every function returns a new value
// and leaves its input unchanged; sub-values nothing changed in (maps,
// slices, media) are shared, so treat both as read-only.

// maxDataDepth bounds the nesting of JSON data that is walked; deeper
// values become null. encoding/json refuses deeper documents anyway.
const maxDataDepth = 10000

// plainItem is one place in a message whose findings are known or will be
// found by scanning texts when the pass finishes.
type plainItem struct {
	seq   int
	where string
	texts []string   // scanned by pass.finish
	found patternSet // found already
}

// cleaner applies the treatments above and collects what they find, by
// place, in order.
type cleaner struct {
	r     Redactor
	limit int // cap in runes of texts; 0 means none
	items int // places so far, which orders the findings
	plain []plainItem
}

func (c *cleaner) add(where string, found patternSet) {
	if found == 0 {
		return
	}
	c.plain = append(c.plain, plainItem{seq: c.items, where: where, found: found})
	c.items++
}

func (c *cleaner) redact(s string) string { return redact(c.r, s) }

func redact(r Redactor, s string) string {
	if r == nil || s == "" {
		return s
	}
	return r.Redact(s)
}

// union returns every pattern found.
func (c *cleaner) union() patternSet {
	var s patternSet
	for _, it := range c.plain {
		s |= it.found
	}
	return s
}

// findings lists what the cleaner found, each pattern once per place.
func (c *cleaner) findings() []Finding {
	found := make([]patternSet, len(c.plain))
	where := make([]string, len(c.plain))
	for i, it := range c.plain {
		found[i], where[i] = it.found, it.where
	}
	return mergeFindings(found, where)
}

// mergeFindings turns patterns by item into findings, merging items with
// the same place, in the order places first appear.
func mergeFindings(found []patternSet, where []string) []Finding {
	var order []string
	merged := map[string]patternSet{}
	for i, f := range found {
		if f == 0 {
			continue
		}
		if _, ok := merged[where[i]]; !ok {
			order = append(order, where[i])
		}
		merged[where[i]] |= f
	}
	var out []Finding
	for _, w := range order {
		out = append(out, merged[w].findings(w)...)
	}
	return out
}

// cleanString gives s the text treatment: Text, the redactor, Scan (when
// scan is set; otherwise only marker look-alikes are looked for),
// Neutralize, and a cap of limit runes when limit > 0. It returns what it
// found, including hidden-Unicode patterns of the raw s.
func cleanString(r Redactor, s string, scan bool, limit int) (string, patternSet) {
	if s == "" {
		return s, 0
	}
	var found patternSet
	t := Text(s)
	if t != s {
		found = hiddenBits(s)
	}
	t = redact(r, t)
	var marker bool
	if scan {
		a := analyze(t)
		found |= a.scan(t)
		marker = a.marker
		a.release()
	} else if marker = hasMarker(t); marker {
		found |= pMarkerSpoof | pStrong
	}
	if marker {
		t = neutralizeSlow(t)
	}
	if limit > 0 {
		if capped := capRunes(t, limit); capped != t {
			// The truncation note can complete a phrase the cut left
			// unfinished; neutralising only shortens the text.
			t = Neutralize(capped)
		}
	}
	return t, found
}

// hiddenBits returns the hidden-Unicode patterns of s.
func hiddenBits(s string) patternSet {
	var f folder
	f.fold(s)
	return f.st.bits()
}

// identBits scans an identifier that is kept as it is and adds
// PatternHiddenInIdentifier when Text would change it.
func identBits(s string) patternSet {
	if s == "" {
		return 0
	}
	a := analyze(s)
	found := a.scan(s)
	a.release()
	if Text(s) != s {
		found |= pHiddenInIdentifier | pStrong
	}
	return found
}

// cleanURI redacts a URI and neutralises marker look-alikes in it, both
// as it is and in its percent-decoded readings (see uri.go); it is
// otherwise kept, and reported like an identifier.
func cleanURI(r Redactor, s string) (string, patternSet) {
	if s == "" {
		return s, 0
	}
	t := redactURI(r, s)
	a := analyze(t)
	found := a.scan(t)
	a.release()
	if Text(t) != t {
		found |= pHiddenInIdentifier | pStrong
	}
	t, spoof := neutralizeURI(t)
	if spoof {
		found |= pMarkerSpoof | pStrong
	}
	return t, found
}

// text gives s the text treatment and records the findings under where.
func (c *cleaner) text(where, s string) string {
	t, found := cleanString(c.r, s, true, c.limit)
	c.add(where, found)
	return t
}

// label is text for a value typed as a string kind (mcp.Role,
// mcp.LoggingLevel, mcp.IconTheme).
func label[S ~string](c *cleaner, where string, s S) S { return S(c.text(where, string(s))) }

// texts cleans each string of ss; it returns ss itself when none changed.
func (c *cleaner) texts(where string, ss []string) []string {
	var out []string
	for i, s := range ss {
		if t := c.text(where, s); t != s {
			if out == nil {
				out = slices.Clone(ss)
			}
			out[i] = t
		}
	}
	if out == nil {
		return ss
	}
	return out
}

// labels is texts for a slice of a string kind.
func labels[S ~string](c *cleaner, where string, ss []S) []S {
	var out []S
	for i, s := range ss {
		if t := label(c, where, s); t != s {
			if out == nil {
				out = slices.Clone(ss)
			}
			out[i] = t
		}
	}
	if out == nil {
		return ss
	}
	return out
}

// ident records the findings of an identifier, which is kept.
func (c *cleaner) ident(where, s string) { c.add(where, identBits(s)) }

// uri cleans a URI and records its findings.
func (c *cleaner) uri(where, s string) string {
	t, found := cleanURI(c.r, s)
	c.add(where, found)
	return t
}

// meta cleans _meta: every string value and key as text, not scanned.
func (c *cleaner) meta(m mcp.Meta) mcp.Meta {
	out, _ := c.metaChanged(m)
	return out
}

// Meta returns m with every string in it, object keys included, cleaned
// with Text, redacted with opt.Redactor and neutralised, recursively. It
// is for the _meta of every message, including notifications that carry
// nothing else (list_changed). _meta is not scanned: it is protocol
// metadata, not content. m itself is returned when nothing changed.
func Meta(m mcp.Meta, opt Options) mcp.Meta {
	c := cleaner{r: opt.Redactor}
	return c.meta(m)
}

// data walks JSON data (see walker) with scanning and records the findings
// under where. v is returned as is when nothing changed and v already is
// made of JSON values.
func (c *cleaner) data(where string, v any) any {
	w := walker{r: c.r, scan: true}
	out, _ := w.value(v, 0)
	c.add(where, w.found)
	return out
}

// annotations cleans content annotations: the audience roles and the
// last-modified stamp as text.
func (c *cleaner) annotations(where string, a *mcp.Annotations) *mcp.Annotations {
	if a == nil {
		return nil
	}
	aud := labels(c, where, a.Audience)
	lm := c.text(where, a.LastModified)
	if lm == a.LastModified && sameSlice(aud, a.Audience) {
		return a
	}
	out := *a
	out.Audience, out.LastModified = aud, lm
	return &out
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// walker cleans JSON data: every string, object keys included, gets the
// text treatment (without a cap). Values of other Go types than those
// encoding/json decodes into are encoded and decoded first (numbers as
// json.Number, so that they keep their precision). It never modifies its
// input; a value nothing changed in is returned as is.
type walker struct {
	r     Redactor
	scan  bool
	uris  bool // a string that reads as a URI is redacted as one too (_meta)
	found patternSet
}

func (w *walker) str(s string) string {
	t, found := cleanString(w.r, s, w.scan, 0)
	w.found |= found
	if w.uris && looksLikeURI(t) {
		t, _ = neutralizeURI(redactURI(w.r, t))
	}
	return t
}

// value returns the cleaned v and whether it differs from v.
func (w *walker) value(v any, depth int) (any, bool) {
	if depth > maxDataDepth {
		return nil, v != nil
	}
	// Unchanged values are returned as the interface they came in: boxing
	// a string again would allocate.
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return v, false
	case string:
		if t := w.str(x); t != x {
			return t, true
		}
		return v, false
	case map[string]any:
		if out, changed := w.object(x, depth); changed {
			return out, true
		}
		return v, false
	case mcp.Meta:
		if out, changed := w.object(x, depth); changed {
			return out, true
		}
		return v, false
	case []any:
		var out []any
		for i, e := range x {
			if ce, ok := w.value(e, depth+1); ok {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ce
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	g, err := generic(v)
	if err != nil {
		return nil, true // not JSON: it cannot have come from the wire
	}
	out, _ := w.value(g, depth)
	return out, true
}

// object cleans the keys and values of m. A key that cleaning changes is
// moved to its cleaned form, unless another key already has that form; of
// several changed keys with the same form, the first in sorted order wins.
func (w *walker) object(m map[string]any, depth int) (map[string]any, bool) {
	var out map[string]any
	var moved []string
	for k, e := range m {
		if w.str(k) != k {
			moved = append(moved, k)
			continue
		}
		if ce, ok := w.value(e, depth+1); ok {
			if out == nil {
				out = cloneData(m)
			}
			out[k] = ce
		}
	}
	if len(moved) == 0 {
		if out == nil {
			return m, false
		}
		return out, true
	}
	if out == nil {
		out = cloneData(m)
	}
	for _, k := range moved {
		delete(out, k)
	}
	slices.Sort(moved)
	for _, k := range moved {
		ck := w.str(k)
		if _, taken := out[ck]; taken {
			continue
		}
		out[ck], _ = w.value(m[k], depth+1)
	}
	return out, true
}

func cloneData(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// generic encodes v as JSON and decodes it into JSON values.
func generic(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(data)
}

// decodeJSON decodes one JSON document, numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// rawData cleans JSON bytes (error data). The result is always encoded
// anew from what was checked, never the original bytes: two parsers may
// read the same bytes differently (duplicate keys). Data that is not JSON
// is dropped.
func (w *walker) rawData(data []byte) json.RawMessage {
	if len(data) == 0 {
		return nil
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil
	}
	out, _ := w.value(v, 0)
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}
