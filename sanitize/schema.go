package sanitize

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// maxRefDepth bounds how many $refs StrictLLMSchema expands along one path;
// a deeper (recursive) reference becomes {}. maxRefExpansions bounds the
// expansions in one schema, so that a schema whose definitions refer to each
// other many times cannot blow up exponentially.
const (
	maxRefDepth      = 8
	maxRefExpansions = 1000
)

// droppedKeywords are removed by StrictLLMSchema: identifiers and comments,
// examples, conditionals and the applicators that common model APIs (OpenAI
// strict mode, Gemini, Bedrock) reject or ignore.
var droppedKeywords = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$dynamicRef": true,
	"$recursiveAnchor": true, "$recursiveRef": true, "$comment": true, "$vocabulary": true,
	"$defs": true, "definitions": true, "examples": true, "if": true, "then": true, "else": true,
	"patternProperties": true, "dependentSchemas": true, "dependentRequired": true,
	"dependencies": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"propertyNames": true, "contentEncoding": true, "contentMediaType": true,
	"contentSchema": true,
}

// standardFormats are the "format" values of JSON Schema 2020-12; others
// are dropped.
var standardFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "email": true,
	"idn-email": true, "hostname": true, "idn-hostname": true, "ipv4": true, "ipv6": true,
	"uri": true, "uri-reference": true, "iri": true, "iri-reference": true, "uuid": true,
	"uri-template": true, "json-pointer": true, "relative-json-pointer": true, "regex": true,
}

// Keywords whose value is a schema, a list of schemas, or a map of them.
var (
	schemaKeywords    = map[string]bool{"additionalProperties": true, "items": true, "not": true, "contains": true, "additionalItems": true}
	schemaListKeyword = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
	schemaMapKeywords = map[string]bool{"properties": true}
)

// StrictLLMSchema rewrites a tool's input schema into the subset that model
// APIs accept: local references ("#/$defs/…", "#/definitions/…" and other
// JSON pointers into the schema) are inlined, with sibling keywords of a
// $ref kept beside the inlined ones, and a reference nested more than 8
// deep (recursion) or beyond the 1000th expansion replaced by {};
// references elsewhere become {};
// droppedKeywords go, and "format" goes unless it is a standard format;
// boolean schemas become {} (true) and {"not": {}} (false). The top level
// gets "type": "object" and "properties": {} when they are missing; a
// top-level type other than "object" is an error. schema may be any value
// that marshals to JSON (a map, json.RawMessage, a struct); nil gives an
// empty object schema. The input is not modified.
func StrictLLMSchema(schema any) (map[string]any, error) {
	if schema == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if root == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	if _, ok := root.(map[string]any); !ok {
		if b, isBool := root.(bool); !isBool || !b {
			return nil, errors.New("schema: top level is not an object schema")
		}
	}
	s := &strictSchema{root: root}
	out, _ := s.rewrite(root, 0).(map[string]any)
	switch t := out["type"].(type) {
	case nil:
		out["type"] = "object"
	case string:
		if t != "object" {
			return nil, fmt.Errorf("schema: top-level type is %q, want \"object\"", t)
		}
	default:
		return nil, fmt.Errorf("schema: top-level type is %v, want \"object\"", t)
	}
	if _, ok := out["properties"].(map[string]any); !ok {
		out["properties"] = map[string]any{}
	}
	return out, nil
}

type strictSchema struct {
	root     any
	expanded int // $refs expanded so far
}

// rewrite returns the strict form of schema v; depth counts the $refs
// expanded on the way here.
// Keys are visited in sorted order so that the expansion budget runs out in
// the same place every time.
func (s *strictSchema) rewrite(v any, depth int) any {
	switch v := v.(type) {
	case bool:
		if v {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	case map[string]any:
		out := make(map[string]any, len(v))
		if ref, ok := v["$ref"].(string); ok {
			if target, ok := s.resolve(ref); ok && depth < maxRefDepth && s.expanded < maxRefExpansions {
				s.expanded++
				if m, ok := s.rewrite(target, depth+1).(map[string]any); ok {
					for k, e := range m {
						out[k] = e
					}
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			e := v[k]
			switch {
			case k == "$ref" || droppedKeywords[k]:
			case k == "format":
				if f, ok := e.(string); ok && standardFormats[f] {
					out[k] = f
				}
			case schemaKeywords[k]:
				if k == "items" {
					if list, ok := e.([]any); ok { // draft-07 tuple form
						out["prefixItems"] = s.rewriteList(list, depth)
						continue
					}
				}
				if b, ok := e.(bool); ok && k == "additionalProperties" {
					out[k] = b // model APIs want the boolean form here
					continue
				}
				out[k] = s.rewrite(e, depth)
			case schemaListKeyword[k]:
				if list, ok := e.([]any); ok {
					out[k] = s.rewriteList(list, depth)
				}
			case schemaMapKeywords[k]:
				if m, ok := e.(map[string]any); ok {
					props := make(map[string]any, len(m))
					for _, name := range slices.Sorted(maps.Keys(m)) {
						props[name] = s.rewrite(m[name], depth)
					}
					out[k] = props
				}
			default:
				out[k] = e // data: type, enum, const, default, required, description …
			}
		}
		return out
	}
	return map[string]any{} // not a schema
}

func (s *strictSchema) rewriteList(list []any, depth int) []any {
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = s.rewrite(e, depth)
	}
	return out
}

// resolve follows a local JSON-pointer reference ("#", "#/$defs/a",
// "#/properties/x/items").
func (s *strictSchema) resolve(ref string) (any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	cur := s.root
	if ptr == "" {
		return cur, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false // an anchor: dropped with $anchor
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
