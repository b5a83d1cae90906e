package sanitize_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/schema/*.txtar")

// sectionOf returns the body of the file called name in ar.
func sectionOf(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
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
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(ar.Comment)) == "" {
				t.Errorf("no prose header")
			}
			in, ok := sectionOf(ar, "in.json")
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
				// The result replaces the want.json or error section, at the end.
				ar.Files = slices.DeleteFunc(ar.Files, func(f txtar.File) bool { return f.Name == "want.json" || f.Name == "error" })
				ar.Files = append(ar.Files, txtar.File{Name: section, Data: []byte(got)})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := sectionOf(ar, section)
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
