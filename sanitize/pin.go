package sanitize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PinHash returns the hex SHA-256 of a tool's definition as the model sees
// it: name, description, input schema and output schema, as canonical JSON
// (object keys sorted, no insignificant space, HTML characters unescaped,
// numbers in one form: integers up to 2^53 as integers, other numbers in
// the shortest form that reads back as the same float64, so 1, 1.0 and 1e0
// hash alike). A schema that cannot be marshalled hashes as the string
// "unmarshalable". A changed hash means a changed definition (a rug pull,
// DESIGN §5).
func PinHash(t *mcp.Tool) string {
	if t == nil {
		return ""
	}
	def := map[string]any{
		"name":         t.Name,
		"description":  t.Description,
		"inputSchema":  canonicalJSON(t.InputSchema),
		"outputSchema": canonicalJSON(t.OutputSchema),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(def); err != nil {
		// canonicalJSON leaves only JSON types, so this cannot happen.
		panic("sanitize: pin hash: " + err.Error())
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// DefinitionHash returns the hash of a tool's whole published definition:
// every field (name, title, description, input and output schemas,
// annotations, icons, _meta) as canonical JSON, as PinHash, prefixed "2:".
// A change in any field a client shows or a model reads — a title, an
// annotation that says a tool is read-only, _meta — changes it. PinHash,
// which covers only name, description and schemas, stays for pins written
// before: a pin of that form is upgraded when the fields it covers match.
func DefinitionHash(t *mcp.Tool) string {
	if t == nil {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(canonicalJSON(t)); err != nil {
		panic("sanitize: definition hash: " + err.Error())
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return DefinitionHashPrefix + hex.EncodeToString(sum[:])
}

// DefinitionHashPrefix starts every DefinitionHash; a pin without it is a
// PinHash.
const DefinitionHashPrefix = "2:"

// canonicalJSON turns v into plain JSON values (map[string]any, []any,
// string, bool, nil and canonical json.Number).
func canonicalJSON(v any) any {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "unmarshalable"
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return "unmarshalable"
	}
	return canonicalNumbers(out)
}

func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = canonicalNumbers(e)
		}
	case json.Number:
		return canonicalNumber(v)
	}
	return v
}

func canonicalNumber(n json.Number) json.Number {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return n // out of float64 range: keep its own spelling
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}
