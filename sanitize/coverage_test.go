package sanitize_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The field-coverage test of the trust boundary (DESIGN §12): every field
// of every message kind an upstream sends is either handled by the
// boundary function of its kind, which this test proves by poisoning that
// field alone and checking the output, or passed through for a stated
// reason. A field the go-sdk types gain fails the test until it is listed.
//
// Paths are "Type.Field" with the type that declares the field (the
// go-sdk's jsonrpc.Error is jsonrpc2.WireError, hence "WireError"). A type
// reached from several messages (TextContent, Icon, Tool inside a sampling
// request) has one entry, and the poison test runs it on every route from
// every root (message kind), so that each function is tested on each field
// it can meet. Unexported fields are the SDK's own (resultType, err) and
// are never decoded from the wire.

// treat is how the boundary handles a field, and so what the poison test
// checks.
type treat int

const (
	// tText: cleaned (Text), redacted, neutralised, scanned; wrapped where
	// it is content for the model. Checked: no secret, no U+200B, no
	// marker phrase outside our own wrappers, the visible word kept, a
	// marker-spoof finding.
	tText treat = iota
	// tData: JSON data; every string and key treated as text.
	tData
	// tSchema: a JSON Schema; its text treated as text, structure kept.
	tSchema
	// tMeta: _meta; like tData but not scanned (no finding required).
	tMeta
	// tIdent: an identifier, kept byte for byte and reported
	// (hidden-in-identifier).
	tIdent
	// tURI: redacted and neutralised, otherwise kept (so U+200B stays) and
	// reported (hidden-in-identifier).
	tURI
	// tIcon: an icon source; the icon is dropped unless the source is
	// https or a raster data: URI, clean and free of secrets.
	tIcon
)

type handling struct {
	treat treat
	how   string
}

// handled lists the fields the boundary transforms. The poison test runs
// against exactly this list.
var handled = map[string]handling{
	"Annotations.Audience":                        {tText, "cleaner.annotations: roles as labels"},
	"Annotations.LastModified":                    {tText, "cleaner.annotations"},
	"AudioContent.MIMEType":                       {tText, "pass.planContent: label"},
	"AudioContent.Meta":                           {tMeta, "cleaner.meta"},
	"Cacheable.CacheScope":                        {tText, "ReadResult: label"},
	"CallToolResult.Meta":                         {tMeta, "cleaner.meta"},
	"CallToolResult.StructuredContent":            {tData, "pass.structured"},
	"CancelledParams.Meta":                        {tMeta, "cleaner.meta"},
	"CancelledParams.Reason":                      {tText, "Cancelled"},
	"CompleteResult.Meta":                         {tMeta, "cleaner.meta"},
	"CompletionResultDetails.Values":              {tText, "Completion: not wrapped"},
	"CreateMessageParams.IncludeContext":          {tText, "CreateMessage: label"},
	"CreateMessageParams.Meta":                    {tMeta, "cleaner.meta"},
	"CreateMessageParams.Metadata":                {tData, "cleaner.data"},
	"CreateMessageParams.StopSequences":           {tText, "CreateMessage"},
	"CreateMessageParams.SystemPrompt":            {tText, "CreateMessage: wrapped"},
	"CreateMessageWithToolsParams.IncludeContext": {tText, "CreateMessageWithTools: label"},
	"CreateMessageWithToolsParams.Meta":           {tMeta, "cleaner.meta"},
	"CreateMessageWithToolsParams.Metadata":       {tData, "cleaner.data"},
	"CreateMessageWithToolsParams.StopSequences":  {tText, "CreateMessageWithTools"},
	"CreateMessageWithToolsParams.SystemPrompt":   {tText, "CreateMessageWithTools: wrapped"},
	"ElicitParams.Message":                        {tText, "Elicit: server prefix"},
	"ElicitParams.Meta":                           {tMeta, "cleaner.meta"},
	"ElicitParams.Mode":                           {tText, "Elicit: label"},
	"ElicitParams.RequestedSchema":                {tSchema, "cleaner.schema"},
	"ElicitParams.URL":                            {tURI, "cleaner.uri"},
	"EmbeddedResource.Meta":                       {tMeta, "cleaner.meta"},
	"GetPromptResult.Description":                 {tText, "PromptResult: not wrapped"},
	"GetPromptResult.Meta":                        {tMeta, "cleaner.meta"},
	"Icon.MIMEType":                               {tText, "cleaner.icons: label"},
	"Icon.Sizes":                                  {tText, "cleaner.icons: labels"},
	"Icon.Source":                                 {tIcon, "cleaner.iconSource"},
	"Icon.Theme":                                  {tText, "cleaner.icons: label"},
	"ImageContent.MIMEType":                       {tText, "pass.planContent: label"},
	"ImageContent.Meta":                           {tMeta, "cleaner.meta"},
	"ListRootsParams.Meta":                        {tMeta, "ListRoots"},
	"LoggingMessageParams.Data":                   {tData, "LogMessage: wrapped when a string"},
	"LoggingMessageParams.Level":                  {tText, "LogMessage: label"},
	"LoggingMessageParams.Logger":                 {tText, "LogMessage"},
	"LoggingMessageParams.Meta":                   {tMeta, "cleaner.meta"},
	"ModelHint.Name":                              {tText, "cleaner.modelPreferences"},
	"ProgressNotificationParams.Message":          {tText, "Progress: not wrapped"},
	"ProgressNotificationParams.Meta":             {tMeta, "cleaner.meta"},
	"Prompt.Description":                          {tText, "cleaner.description"},
	"Prompt.Meta":                                 {tMeta, "cleaner.meta"},
	"Prompt.Name":                                 {tIdent, "Prompt: the router names prompts"},
	"Prompt.Title":                                {tText, "Prompt"},
	"PromptArgument.Description":                  {tText, "Prompt"},
	"PromptArgument.Name":                         {tIdent, "Prompt: the client sends arguments by name"},
	"PromptArgument.Title":                        {tText, "Prompt"},
	"PromptMessage.Role":                          {tText, "PromptResult: label"},
	"ReadResourceResult.Meta":                     {tMeta, "cleaner.meta"},
	"Resource.Description":                        {tText, "cleaner.description"},
	"Resource.MIMEType":                           {tText, "Resource: label"},
	"Resource.Meta":                               {tMeta, "cleaner.meta"},
	"Resource.Name":                               {tText, "Resource: a label, resources are addressed by URI"},
	"Resource.Title":                              {tText, "Resource"},
	"Resource.URI":                                {tURI, "cleaner.uri"},
	"ResourceContents.MIMEType":                   {tText, "pass.resourceContents: label"},
	"ResourceContents.Meta":                       {tMeta, "cleaner.meta"},
	"ResourceContents.Text":                       {tText, "pass.addText: wrapped"},
	"ResourceContents.URI":                        {tURI, "pass.resourceContents"},
	"ResourceLink.Description":                    {tText, "cleaner.link"},
	"ResourceLink.MIMEType":                       {tText, "cleaner.link: label"},
	"ResourceLink.Meta":                           {tMeta, "cleaner.meta"},
	"ResourceLink.Name":                           {tText, "cleaner.link"},
	"ResourceLink.Title":                          {tText, "cleaner.link"},
	"ResourceLink.URI":                            {tURI, "cleaner.link"},
	"ResourceTemplate.Description":                {tText, "cleaner.description"},
	"ResourceTemplate.MIMEType":                   {tText, "ResourceTemplate: label"},
	"ResourceTemplate.Meta":                       {tMeta, "cleaner.meta"},
	"ResourceTemplate.Name":                       {tText, "ResourceTemplate: a label"},
	"ResourceTemplate.Title":                      {tText, "ResourceTemplate"},
	"ResourceTemplate.URITemplate":                {tURI, "cleaner.uri"},
	"ResourceUpdatedNotificationParams.Meta":      {tMeta, "cleaner.meta"},
	"ResourceUpdatedNotificationParams.URI":       {tURI, "ResourceUpdated"},
	"SamplingMessage.Role":                        {tText, "CreateMessage: label"},
	"SamplingMessageV2.Role":                      {tText, "CreateMessageWithTools: label"},
	"TextContent.Meta":                            {tMeta, "cleaner.meta"},
	"TextContent.Text":                            {tText, "pass.addText: wrapped"},
	"Tool.Description":                            {tText, "cleaner.description"},
	"Tool.InputSchema":                            {tSchema, "cleaner.schema"},
	"Tool.Meta":                                   {tMeta, "cleaner.meta"},
	"Tool.Name":                                   {tIdent, "Tool: the router names tools"},
	"Tool.OutputSchema":                           {tSchema, "cleaner.schema"},
	"Tool.Title":                                  {tText, "Tool"},
	"ToolAnnotations.Title":                       {tText, "Tool"},
	"ToolChoice.Mode":                             {tText, "CreateMessageWithTools: label"},
	"ToolResultContent.Meta":                      {tMeta, "cleaner.meta"},
	"ToolResultContent.StructuredContent":         {tData, "cleaner.data"},
	"ToolUseContent.Input":                        {tData, "cleaner.data"},
	"ToolUseContent.Meta":                         {tMeta, "cleaner.meta"},
	"ToolUseContent.Name":                         {tIdent, "pass.planContent: names a tool of the sampling request"},
	"WireError.Data":                              {tData, "Error: encoded anew"},
	"WireError.Message":                           {tText, "Error: wrapped"},
}

// passThrough lists the fields that pass untouched, with the reason.
var passThrough = map[string]string{
	"Annotations.Priority":                     "number",
	"AudioContent.Data":                        "binary; size-limited, flagged by a note in results",
	"ImageContent.Data":                        "binary; size-limited, flagged by a note in results",
	"ResourceContents.Blob":                    "binary; size-limited, flagged by a note in tool and prompt results",
	"Cacheable.TTLMs":                          "number",
	"CallToolResult.IsError":                   "boolean",
	"CallToolResult.RequestState":              "opaque token the client echoes to the same server; no model or person reads it, and changing it breaks the retry",
	"GetPromptResult.RequestState":             "opaque token, as CallToolResult.RequestState",
	"ReadResourceResult.RequestState":          "opaque token, as CallToolResult.RequestState",
	"CancelledParams.RequestID":                "request ID the proxy maps to the downstream request",
	"CompletionResultDetails.HasMore":          "boolean",
	"CompletionResultDetails.Total":            "number",
	"CreateMessageParams.MaxTokens":            "number",
	"CreateMessageParams.Temperature":          "number",
	"CreateMessageWithToolsParams.MaxTokens":   "number",
	"CreateMessageWithToolsParams.Temperature": "number",
	"ElicitParams.ElicitationID":               "opaque ID the client echoes in elicitation/complete",
	"ModelPreferences.CostPriority":            "number",
	"ModelPreferences.IntelligencePriority":    "number",
	"ModelPreferences.SpeedPriority":           "number",
	"ProgressNotificationParams.Progress":      "number",
	"ProgressNotificationParams.ProgressToken": "token the proxy maps to the downstream request's",
	"ProgressNotificationParams.Total":         "number",
	"PromptArgument.Required":                  "boolean",
	"Resource.Size":                            "number",
	"ResourceLink.Size":                        "number",
	"ToolAnnotations.DestructiveHint":          "boolean hint",
	"ToolAnnotations.IdempotentHint":           "boolean hint",
	"ToolAnnotations.OpenWorldHint":            "boolean hint",
	"ToolAnnotations.ReadOnlyHint":             "boolean hint",
	"ToolResultContent.IsError":                "boolean",
	"ToolResultContent.ToolUseID":              "opaque ID pairing a tool result with its tool use",
	"ToolUseContent.ID":                        "opaque ID pairing a tool use with its result",
	"WireError.Code":                           "number; the client branches on it",
}

// interfaces enumerates the implementations of the interfaces the
// messages hold.
var interfaces = map[reflect.Type][]reflect.Type{
	reflect.TypeFor[mcp.Content](): {
		reflect.TypeFor[*mcp.TextContent](), reflect.TypeFor[*mcp.ImageContent](), reflect.TypeFor[*mcp.AudioContent](),
		reflect.TypeFor[*mcp.ResourceLink](), reflect.TypeFor[*mcp.EmbeddedResource](),
		reflect.TypeFor[*mcp.ToolUseContent](), reflect.TypeFor[*mcp.ToolResultContent](),
	},
	reflect.TypeFor[mcp.InputRequest](): {
		reflect.TypeFor[*mcp.ElicitParams](), reflect.TypeFor[*mcp.CreateMessageParams](),
		reflect.TypeFor[*mcp.CreateMessageWithToolsParams](), reflect.TypeFor[*mcp.ListRootsParams](),
	},
}

// step is one move from a value to a part of it.
type step struct {
	kind  byte // 'f' field, 'p' pointer, 's' slice element, 'm' map value, 'i' interface
	field int
	typ   reflect.Type // the concrete type, for 'i'
}

// leaf is one route from a root to a field the lists must name.
type leaf struct {
	path  string // "TextContent.Text"
	route string // "CallToolResult.Content[](*mcp.TextContent).Text"
	root  root
	typ   reflect.Type
	steps []step
}

// isLeaf reports whether a field of type t is listed itself rather than
// walked into: scalars, slices of scalars, pointers to scalars, _meta,
// any and map[string]any.
func isLeaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Pointer:
		return t.Elem().Kind() != reflect.Struct
	case reflect.Slice:
		k := t.Elem().Kind()
		return k != reflect.Struct && k != reflect.Pointer && k != reflect.Interface
	case reflect.Interface:
		return t.NumMethod() == 0
	case reflect.Map:
		return t.Elem().Kind() == reflect.Interface && t.Elem().NumMethod() == 0
	}
	return true
}

// leaves returns every route to a leaf field from every root. A struct
// type met again below itself (a tool result nested in a tool result) is
// not entered again.
func leaves(t *testing.T) []leaf {
	var out []leaf
	var walk func(r root, ty reflect.Type, route string, steps []step, stack []reflect.Type)
	walk = func(r root, ty reflect.Type, route string, steps []step, stack []reflect.Type) {
		switch ty.Kind() {
		case reflect.Pointer:
			walk(r, ty.Elem(), route, append(slices.Clip(steps), step{kind: 'p'}), stack)
		case reflect.Slice:
			walk(r, ty.Elem(), route+"[]", append(slices.Clip(steps), step{kind: 's'}), stack)
		case reflect.Map:
			walk(r, ty.Elem(), route+"{}", append(slices.Clip(steps), step{kind: 'm'}), stack)
		case reflect.Interface:
			impls, ok := interfaces[ty]
			if !ok {
				t.Errorf("%s: interface %s has no listed implementations", route, ty)
			}
			for _, c := range impls {
				walk(r, c, route+"("+c.String()+")", append(slices.Clip(steps), step{kind: 'i', typ: c}), stack)
			}
		case reflect.Struct:
			if slices.Contains(stack, ty) {
				return
			}
			for i := 0; i < ty.NumField(); i++ {
				f := ty.Field(i)
				if !f.IsExported() {
					continue
				}
				st := append(slices.Clip(steps), step{kind: 'f', field: i})
				if isLeaf(f.Type) {
					out = append(out, leaf{path: ty.Name() + "." + f.Name, route: route + "." + f.Name, root: r, typ: f.Type, steps: st})
					continue
				}
				walk(r, f.Type, route+"."+f.Name, st, append(slices.Clip(stack), ty))
			}
		default:
			t.Errorf("%s: unexpected %s", route, ty)
		}
	}
	for _, r := range roots {
		walk(r, r.typ, r.typ.Name(), nil, nil)
	}
	return out
}

// TestFieldCoverage checks that every field of every message kind is on
// exactly one list, and that every listed field exists.
func TestFieldCoverage(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range leaves(t) {
		if seen[l.path] {
			continue
		}
		seen[l.path] = true
		_, h := handled[l.path]
		_, p := passThrough[l.path]
		switch {
		case h && p:
			t.Errorf("%s is both handled and passed through", l.path)
		case !h && !p:
			t.Errorf("%s (%s, reached as %s) is neither handled nor passed through: "+
				"handle it in the boundary function and add it to handled, or add it to passThrough with the reason",
				l.path, l.typ, l.route)
		}
	}
	for _, m := range []map[string]bool{keys(handled), keys(passThrough)} {
		for p := range m {
			if !seen[p] {
				t.Errorf("%s is listed but no message has it any more", p)
			}
		}
	}
	for p, reason := range passThrough {
		if reason == "" {
			t.Errorf("%s: no reason", p)
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
