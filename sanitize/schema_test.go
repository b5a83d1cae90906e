package sanitize_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/schema/*.txtar")

// txtar is a minimal reader and writer of the txtar format: a prose header,
// then sections that each start with a line "-- name --".
type txtar struct {
	header   string
	names    []string
	sections map[string]string
}

func parseTxtar(data string) txtar {
	ar := txtar{sections: map[string]string{}}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur == "" {
			ar.header = b.String()
		} else {
			ar.sections[cur] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			cur = trimmed[3 : len(trimmed)-3]
			ar.names = append(ar.names, cur)
			continue
		}
		b.WriteString(line)
	}
	flush()
	return ar
}

func (ar *txtar) set(name, value string) {
	if _, ok := ar.sections[name]; !ok {
		ar.names = append(ar.names, name)
	}
	ar.sections[name] = value
}

func (ar *txtar) drop(name string) {
	delete(ar.sections, name)
	for i, n := range ar.names {
		if n == name {
			ar.names = append(ar.names[:i], ar.names[i+1:]...)
			return
		}
	}
}

func (ar txtar) format() string {
	var b strings.Builder
	b.WriteString(ar.header)
	for _, n := range ar.names {
		b.WriteString("-- " + n + " --\n")
		b.WriteString(ar.sections[n])
	}
	return b.String()
}

// TestStrictLLMSchemaGolden runs StrictLLMSchema on the "in.json" section of
// each testdata/schema/*.txtar file and compares the indented JSON with the
// "want.json" section, or the error with the "error" section. With -update
// it rewrites them.
func TestStrictLLMSchemaGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "schema", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/schema/*.txtar files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(string(data))
			if strings.TrimSpace(ar.header) == "" {
				t.Errorf("no prose header")
			}
			in, ok := ar.sections["in.json"]
			if !ok {
				t.Fatal("no -- in.json -- section")
			}
			var input any = json.RawMessage(in)
			if strings.TrimSpace(in) == "null" {
				input = nil
			}
			out, err := sanitize.StrictLLMSchema(input)
			var section, got string
			if err != nil {
				section, got = "error", err.Error()+"\n"
			} else {
				section = "want.json"
				b, err := json.MarshalIndent(out, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = string(b) + "\n"
				// Pure: a second run on the output changes nothing.
				again, err := sanitize.StrictLLMSchema(out)
				if err != nil {
					t.Fatalf("second run: %v", err)
				}
				if b2, _ := json.MarshalIndent(again, "", "  "); string(b2)+"\n" != got {
					t.Errorf("not idempotent:\n%s", b2)
				}
			}
			if *update {
				ar.drop("want.json")
				ar.drop("error")
				ar.set(section, got)
				if err := os.WriteFile(file, []byte(ar.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := ar.sections[section]
			if !ok {
				t.Fatalf("got %s, but the file has no -- %s -- section:\n%s", section, section, got)
			}
			if got != want {
				t.Errorf("%s:\n%s\nwant:\n%s", section, got, want)
			}
		})
	}
}

func TestStrictLLMSchemaDoesNotModifyInput(t *testing.T) {
	in := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"$defs":   map[string]any{"a": map[string]any{"type": "string", "format": "int32"}},
		"properties": map[string]any{
			"x": map[string]any{"$ref": "#/$defs/a"},
		},
	}
	before, _ := json.Marshal(in)
	if _, err := sanitize.StrictLLMSchema(in); err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("input modified:\n%s", after)
	}
}

// TestStrictLLMSchemaExpansionBudget feeds a schema whose definitions each
// refer to the next one ten times: without a budget, inlining would produce
// 10^8 copies.
func TestStrictLLMSchemaExpansionBudget(t *testing.T) {
	defs := map[string]any{}
	for i := range 9 {
		props := map[string]any{}
		for j := range 10 {
			props[string(rune('a'+j))] = map[string]any{"$ref": "#/$defs/d" + string(rune('0'+i+1))}
		}
		defs["d"+string(rune('0'+i))] = map[string]any{"type": "object", "properties": props}
	}
	defs["d9"] = map[string]any{"type": "string"}
	schema := map[string]any{"type": "object", "properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/d0"}}, "$defs": defs}
	out, err := sanitize.StrictLLMSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(out)
	if len(data) > 1<<20 {
		t.Errorf("output is %d bytes", len(data))
	}
	again, _ := sanitize.StrictLLMSchema(schema)
	if data2, _ := json.Marshal(again); string(data2) != string(data) {
		t.Errorf("output differs between runs")
	}
}
