package proxy

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcp-switchboard/switchboard"

var leaves = []string{"router", "policy", "sanitize", "upstream", "secrets"}

// leafOf returns the leaf a package belongs to, or "".
func leafOf(pkg string) string {
	for _, l := range leaves {
		if pkg == module+"/"+l || strings.HasPrefix(pkg, module+"/"+l+"/") {
			return l
		}
	}
	return ""
}

func inModule(pkg string) bool { return pkg == module || strings.HasPrefix(pkg, module+"/") }

// configImports are the module packages proxy/config may import: the
// leaves whose syntax a config embeds. The schema never depends on how it
// is run (proxy, upstream, sanitize, proxy/internal).
var configImports = []string{module + "/policy", module + "/router", module + "/secrets"}

// viewImports are the module packages proxy/view may import besides the
// leaves: a view is compiled from a config for telemetry's per-route
// attributes, and knows nothing of sessions, dispatch or the HTTP edge.
// dispatchImports are the module packages proxy/dispatch may import
// besides the leaves: it reads views and answers sessions, and knows
// nothing of the HTTP edge, of multi-round-trip requests (a middleware it
// is given) or of how the proxy is put together. It mints the task IDs it
// routes by (proxy/internal/taskid, a leaf of its own).
var dispatchImports = []string{module + "/proxy/view", module + "/proxy/session", module + "/proxy/telemetry",
	module + "/proxy/config", module + "/proxy/ranker", module + "/proxy/internal/taskid"}

// edgeImports are the module packages proxy/edge may import besides the
// leaves and proxy/internal: it authenticates against a generation and
// opens sessions through dispatch.
var edgeImports = []string{module + "/proxy/dispatch", module + "/proxy/session", module + "/proxy/view"}

// mrtrImports are the module packages proxy/mrtr may import: it is a
// middleware on session handlers.
var mrtrImports = []string{module + "/proxy/session"}

var viewImports = []string{module + "/proxy/config", module + "/proxy/telemetry", module + "/proxy/ranker"}

// TestLayering enforces the import direction of DESIGN §1: leaves import no
// other package of the module, only cmd/ and examples/ import proxy/,
// e2e/ imports nothing of the module, and proxy/config imports only the
// leaves in configImports.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if strings.HasSuffix(pkg, ".test") {
			continue // generated test mains import the package they test
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if !inModule(imp) || imp == module+"/proxy/internal/testutil" {
				continue // tests' helpers may be used by any test below proxy/
			}
			l := leafOf(pkg)
			switch {
			case l != "" && leafOf(imp) != l:
				t.Errorf("%s imports %s: leaves must not import module packages (STYLE §2)", pkg, imp)
			case strings.HasPrefix(imp, module+"/proxy") && !strings.HasPrefix(pkg, module+"/proxy") &&
				!strings.HasPrefix(pkg, module+"/cmd/") && !strings.HasPrefix(pkg, module+"/examples/"):
				t.Errorf("%s imports %s: only cmd/ and examples/ may import proxy/", pkg, imp)
			case strings.HasPrefix(pkg, module+"/e2e") && !strings.HasPrefix(imp, module+"/e2e"):
				t.Errorf("%s imports %s: e2e/ must not import module packages", pkg, imp)
			case pkg == module+"/proxy/config" && !slices.Contains(configImports, imp):
				t.Errorf("%s imports %s: the config schema imports only %v", pkg, imp, configImports)
			case pkg == module+"/proxy/view" && leafOf(imp) == "" && !slices.Contains(viewImports, imp):
				t.Errorf("%s imports %s: a view is compiled from the leaves and %v only", pkg, imp, viewImports)
			case pkg == module+"/proxy/dispatch" && leafOf(imp) == "" && !slices.Contains(dispatchImports, imp):
				t.Errorf("%s imports %s: dispatch reads views and sessions only (%v)", pkg, imp, dispatchImports)
			case pkg == module+"/proxy/edge" && leafOf(imp) == "" && !slices.Contains(edgeImports, imp) && !strings.HasPrefix(imp, module+"/proxy/internal/"):
				t.Errorf("%s imports %s: the HTTP edge opens sessions through dispatch only (%v)", pkg, imp, edgeImports)
			case pkg == module+"/proxy/mrtr" && !slices.Contains(mrtrImports, imp):
				t.Errorf("%s imports %s: multi-round-trip requests know sessions only (%v)", pkg, imp, mrtrImports)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("go list returned only %d packages", checked)
	}
}

// TestPackageDocs checks that every leaf, proxy and each package below
// proxy/ (proxy/internal included), and upstream's codec, has a doc.go
// (STYLE §11).
func TestPackageDocs(t *testing.T) {
	dirs := append(append([]string{}, leaves...), "proxy", filepath.Join("upstream", "wire"))
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == "." {
			return err
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 {
			dirs = append(dirs, filepath.Join("proxy", path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dirs, filepath.Join("proxy", "config")) {
		t.Fatalf("walking proxy/ found no proxy/config: %v", dirs)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join("..", d, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", d)
		}
	}
}
