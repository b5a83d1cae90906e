package sanitize

import (
	"encoding/json"
)

// Schema text.
//
// A JSON Schema from an upstream (a tool's input and output schema, an
// elicitation's requested schema) is read by the model, so its human text
// is an injection surface, while its structure must keep validating the
// same arguments. cleanSchema walks it keyword by keyword:
//
//   - Keywords whose value is a schema, a list or a map of schemas are
//     followed; the names of a map (property names, $defs names, pattern
//     property regexes) are identifiers.
//   - identKeywords hold machine values (types, formats, regexes,
//     references, required property names): identifiers, kept.
//   - Every other keyword (description, title, $comment, default,
//     examples, enum, const, enumDescriptions, x-enumDescriptions,
//     markdownDescription, any x- extension) is JSON data: every string in
//     it gets the text treatment. Unknown keywords are therefore cleaned,
//     not passed. The descriptive ones are capped like descriptions.
//
// Keywords themselves (the keys of a schema object) are identifiers. An
// enum value or default the model is shown is cleaned like any text: only
// a value with invisible characters, a secret or a marker look-alike
// changes, and such a value is hostile.

var (
	schemaValueKeywords = map[string]bool{
		"additionalProperties": true, "additionalItems": true, "items": true, "contains": true,
		"not": true, "if": true, "then": true, "else": true, "propertyNames": true,
		"unevaluatedProperties": true, "unevaluatedItems": true, "contentSchema": true,
	}
	schemaListKeywords  = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
	namedSchemaKeywords = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true,
	}
	identKeywords = map[string]bool{
		"type": true, "format": true, "pattern": true, "$ref": true, "$id": true, "$schema": true,
		"$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true, "$recursiveRef": true,
		"$recursiveAnchor": true, "$vocabulary": true, "required": true, "dependentRequired": true,
		"contentEncoding": true, "contentMediaType": true,
	}
	// cappedKeywords are the descriptive keywords whose string value is
	// capped at the description limit.
	cappedKeywords = map[string]bool{
		"description": true, "title": true, "$comment": true, "markdownDescription": true,
	}
)

// schema cleans a schema (see above) and records the findings under where.
// nil stays nil; a schema that cannot be encoded as JSON (which cannot
// have come from the wire) becomes nil. A map[string]any or bool schema
// gives the cleaned map (v itself when nothing changed; values inside it
// of other Go types are converted to JSON values); any other schema,
// raw JSON included, gives the cleaned schema as json.RawMessage, encoded
// from what was checked (raw JSON is never forwarded as it came: two
// parsers may read duplicate keys differently).
func (c *cleaner) schema(where string, v any) any {
	s := schemaWalker{walker: walker{r: c.r, scan: true}, limit: c.limit}
	defer func() { c.add(where, s.found) }()
	switch r := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		if r == nil {
			return nil
		}
	case map[string]any, bool:
		out, _ := s.schema(r, 0)
		return out
	}
	g, err := generic(v)
	if err != nil {
		return nil
	}
	out, _ := s.schema(g, 0)
	return encodeSchema(out)
}

func encodeSchema(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return json.RawMessage(data)
}

type schemaWalker struct {
	walker
	limit int // cap of descriptive keywords
}

// schema cleans a schema value.
func (s *schemaWalker) schema(v any, depth int) (any, bool) {
	if depth > maxDataDepth {
		return nil, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return v, false
		}
		return s.value(v, depth) // not a schema: data
	}
	var out map[string]any
	set := func(k string, e any) {
		if out == nil {
			out = cloneData(m)
		}
		out[k] = e
	}
	for k, e := range m {
		s.ident(k)
		var ce any
		var changed bool
		switch {
		case identKeywords[k]:
			s.identValue(e, depth+1)
		case schemaValueKeywords[k]:
			if list, ok := e.([]any); ok && k == "items" { // draft-07 tuple form
				ce, changed = s.list(list, depth+1)
			} else {
				ce, changed = s.schema(e, depth+1)
			}
		case schemaListKeywords[k]:
			if list, ok := e.([]any); ok {
				ce, changed = s.list(list, depth+1)
			} else {
				ce, changed = s.value(e, depth+1)
			}
		case namedSchemaKeywords[k]:
			if named, ok := e.(map[string]any); ok {
				ce, changed = s.named(named, depth+1)
			} else {
				ce, changed = s.value(e, depth+1)
			}
		case k == "dependencies": // draft-07: a schema or a list of names each
			if named, ok := e.(map[string]any); ok {
				ce, changed = s.dependencies(named, depth+1)
			} else {
				ce, changed = s.value(e, depth+1)
			}
		case cappedKeywords[k]:
			if str, ok := e.(string); ok {
				t, found := cleanString(s.r, str, true, s.limit)
				s.found |= found
				ce, changed = t, t != str
			} else {
				ce, changed = s.value(e, depth+1)
			}
		default:
			ce, changed = s.value(e, depth+1)
		}
		if changed {
			set(k, ce)
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func (s *schemaWalker) list(list []any, depth int) (any, bool) {
	var out []any
	for i, e := range list {
		if ce, ok := s.schema(e, depth); ok {
			if out == nil {
				out = append([]any(nil), list...)
			}
			out[i] = ce
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

// named cleans a map of schemas, whose names are identifiers.
func (s *schemaWalker) named(m map[string]any, depth int) (any, bool) {
	var out map[string]any
	for name, e := range m {
		s.ident(name)
		if ce, ok := s.schema(e, depth); ok {
			if out == nil {
				out = cloneData(m)
			}
			out[name] = ce
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func (s *schemaWalker) dependencies(m map[string]any, depth int) (any, bool) {
	var out map[string]any
	for name, e := range m {
		s.ident(name)
		if list, ok := e.([]any); ok {
			s.identValue(list, depth)
			continue
		}
		if ce, ok := s.schema(e, depth); ok {
			if out == nil {
				out = cloneData(m)
			}
			out[name] = ce
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func (s *schemaWalker) ident(v string) { s.found |= identBits(v) }

// identValue records the findings of every string (and key) in a machine
// value, which is kept.
func (s *schemaWalker) identValue(v any, depth int) {
	if depth > maxDataDepth {
		return
	}
	switch v := v.(type) {
	case string:
		s.ident(v)
	case []any:
		for _, e := range v {
			s.identValue(e, depth+1)
		}
	case map[string]any:
		for k, e := range v {
			s.ident(k)
			s.identValue(e, depth+1)
		}
	}
}
