package router_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/tools/txtar"

	"github.com/mcp-switchboard/switchboard/router"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar")

// TestGolden builds a table from the items section of each testdata/*.txtar
// file and compares it with the want section. With -update it rewrites want.
//
// Each items line is server|prefix|name, split at the first two '|'. An empty
// prefix means router.Prefix(server, ""), the prefix the config derives from
// the key. A line starting with '{' is a JSON object with the fields server,
// prefix and name, for names no plain line can hold. Blank lines are skipped.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txtar files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(ar.Comment)) == "" {
				t.Errorf("%s: no prose header", file)
			}
			in, ok := section(ar, "items")
			if !ok {
				t.Fatalf("%s: no -- items -- section", file)
			}
			items, err := parseItems(in)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got := render(router.Build(items))
			if again := render(router.Build(reversed(items))); again != got {
				t.Errorf("%s: reversed items give a different table:\n%s", file, again)
			}
			if *update {
				setSection(ar, "want", got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := section(ar, "want")
			if !ok {
				t.Fatalf("%s: no -- want -- section (run with -update)", file)
			}
			if got != want {
				t.Errorf("%s: table differs (run with -update to accept)\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

func parseItems(s string) ([]router.Item, error) {
	var items []router.Item
	for i, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var it router.Item
		if strings.HasPrefix(line, "{") {
			var j struct{ Server, Prefix, Name string }
			if err := json.Unmarshal([]byte(line), &j); err != nil {
				return nil, fmt.Errorf("items line %d: %w", i+1, err)
			}
			it = router.Item{Server: j.Server, Prefix: j.Prefix, Name: j.Name}
		} else {
			f := strings.SplitN(line, "|", 3)
			if len(f) != 3 {
				return nil, fmt.Errorf("items line %d: want server|prefix|name, got %q", i+1, line)
			}
			it = router.Item{Server: f[0], Prefix: f[1], Name: f[2]}
		}
		if it.Prefix == "" {
			it.Prefix = router.Prefix(it.Server, "")
		}
		items = append(items, it)
	}
	return items, nil
}

// render prints a table as "public -> server/name" lines sorted by public
// name, then one line per collision.
func render(tab *router.Table, collisions []router.Collision) string {
	var b strings.Builder
	for _, e := range tab.Entries() {
		fmt.Fprintf(&b, "%s -> %s\n", e.Public, target(e.Target))
	}
	if len(collisions) > 0 {
		b.WriteString("\n")
	}
	for _, c := range collisions {
		fmt.Fprintf(&b, "collision %s: kept by %s; %s renamed %s\n", c.Public, target(c.Winner), target(c.Loser), c.Renamed)
	}
	return b.String()
}

// target prints server/name, quoting a part that would be ambiguous or
// invisible as is.
func target(t router.Target) string {
	return quoteIfNeeded(t.Server) + "/" + quoteIfNeeded(t.Name)
}

func quoteIfNeeded(s string) string {
	plain := s != "" && !strings.ContainsAny(s, `/"`) && !strings.ContainsFunc(s, func(r rune) bool {
		return r == unicode.ReplacementChar || !unicode.IsGraphic(r) || unicode.IsSpace(r)
	})
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// section returns the body of the file called name in ar.
func section(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// setSection replaces the body of the file called name in ar, or adds the
// file at the end.
func setSection(ar *txtar.Archive, name, body string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(body)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(body)})
}
