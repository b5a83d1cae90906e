package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// decoder fills a value from a generic JSON value, reporting every
// problem at once: unknown fields, wrong types and out-of-range numbers,
// each with its field path. encoding/json stops at the first error and
// gives no path, which is not good enough for operators.
type decoder struct{ errs *[]error }

func (d decoder) fail(path, format string, args ...any) {
	if path == "" {
		path = "(root)"
	}
	*d.errs = append(*d.errs, &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// FieldError is one config problem at one field path.
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinKey appends a map key or field name to a path, quoting keys that would
// not read back unambiguously (server keys may be any string).
func joinKey(path, key string) string {
	if !identRE.MatchString(key) {
		b, _ := json.Marshal(key)
		return path + "[" + string(b) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// value decodes src into dst, whose type decides what src may be. Pointers
// are allocated as needed; null leaves dst as it is.
func (d decoder) value(path string, src any, dst reflect.Value) {
	if dst.Kind() == reflect.Pointer {
		if src == nil {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		d.value(path, src, dst.Elem())
		return
	}
	if src == nil {
		// null leaves the zero value, as encoding/json does.
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		m, ok := src.(map[string]any)
		if !ok {
			d.fail(path, "want an object, got %s", kindName(src))
			return
		}
		d.object(path, m, dst)
	case reflect.Map:
		d.mapValue(path, src, dst)
	case reflect.Slice:
		d.list(path, src, dst)
	case reflect.String:
		s, ok := src.(string)
		if !ok {
			d.fail(path, "want a string, got %s", kindName(src))
			return
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := src.(bool)
		if !ok {
			d.fail(path, "want true or false, got %s", kindName(src))
			return
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		d.integer(path, src, dst)
	case reflect.Interface:
		dst.Set(reflect.ValueOf(src))
	default:
		d.fail(path, "unsupported field type %s", dst.Type())
	}
}

// mapValue decodes a JSON object into the map dst, key by key in sorted
// order, so that errors come out in a stable order.
func (d decoder) mapValue(path string, src any, dst reflect.Value) {
	m, ok := src.(map[string]any)
	if !ok {
		d.fail(path, "want an object, got %s", kindName(src))
		return
	}
	if dst.IsNil() {
		dst.Set(reflect.MakeMapWithSize(dst.Type(), len(m)))
	}
	for _, k := range sortedKeys(m) {
		ev := reflect.New(dst.Type().Elem()).Elem()
		d.value(joinKey(path, k), m[k], ev)
		dst.SetMapIndex(reflect.ValueOf(k), ev)
	}
}

// list decodes a JSON list into the slice dst, which it replaces.
func (d decoder) list(path string, src any, dst reflect.Value) {
	l, ok := src.([]any)
	if !ok {
		d.fail(path, "want a list, got %s", kindName(src))
		return
	}
	s := reflect.MakeSlice(dst.Type(), len(l), len(l))
	for i, e := range l {
		d.value(joinIndex(path, i), e, s.Index(i))
	}
	dst.Set(s)
}

// integer decodes a JSON number into the integer dst. A fraction is not a
// whole number; a whole number that does not fit dst is out of range.
func (d decoder) integer(path string, src any, dst reflect.Value) {
	n, ok := src.(json.Number)
	if !ok {
		d.fail(path, "want a whole number, got %s", kindName(src))
		return
	}
	i, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) {
			d.fail(path, "want a whole number, got %s", n)
			return
		}
		d.fail(path, "number %s is out of range", n)
		return
	}
	if dst.OverflowInt(i) {
		d.fail(path, "number %s is out of range", n)
		return
	}
	dst.SetInt(i)
}

func (d decoder) object(path string, m map[string]any, dst reflect.Value) {
	fields := structFields(dst.Type())
	for _, k := range sortedKeys(m) {
		idx, ok := fields[k]
		if !ok {
			d.fail(joinKey(path, k), "unknown field%s", suggest(k, fields))
			continue
		}
		d.value(joinKey(path, k), m[k], dst.Field(idx))
	}
}

// suggest names the known field k most likely stands for: one that
// differs only in case (e.g. "mcpservers"), else the closest within a
// small edit distance ("comand", "mcpServer"). "" when none is close.
func suggest(k string, fields map[string]int) string {
	if f := caseSlip(k, fields); f != "" {
		return fmt.Sprintf(" (did you mean %q?)", f)
	}
	maxD := maxSuggestDistance(k)
	if len(k) > maxSuggestLen {
		return ""
	}
	best, bestD := "", maxD+1
	for _, f := range sortedKeys(fields) {
		if abs(len(k)-len(f)) > maxD {
			continue
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(f)); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// caseSlip is the known field that differs from k only in case, or "".
func caseSlip(k string, fields map[string]int) string {
	for _, f := range sortedKeys(fields) {
		if strings.EqualFold(f, k) {
			return f
		}
	}
	return ""
}

// maxSuggestLen bounds the keys a suggestion is looked for: no field is
// longer, and the distance costs the product of the lengths.
const maxSuggestLen = 64

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// maxSuggestDistance is how many edits a key may be from a field and still
// be taken for a typo of it: one for short keys, two from five letters.
func maxSuggestDistance(k string) int {
	if len(k) < 5 {
		return 1
	}
	return 2
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func structFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = i
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// stripJSONC blanks out the comments (// and /* */) and trailing commas
// that VS Code allows in its JSON files, outside strings. It replaces each
// removed byte with a space (keeping newlines), so syntax errors still point
// at the right line and column. Plain JSON comes back unchanged.
func stripJSONC(b []byte) []byte {
	var out []byte // allocated on the first change
	set := func(i int, c byte) {
		if out == nil {
			out = append([]byte(nil), b...)
		}
		out[i] = c
	}
	blank := func(i int) {
		if b[i] != '\n' && b[i] != '\r' {
			set(i, ' ')
		}
	}
	lastComma := -1 // a comma that may turn out to be trailing
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				blank(i)
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return b // unterminated: leave it to the JSON decoder to report
			}
			for j := i; j < i+2+end+2; j++ {
				blank(j)
			}
			i += 2 + end + 1
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				set(lastComma, ' ')
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	if out == nil {
		return b
	}
	return out
}
