package proxy

import (
	"os"
	"os/exec"
	"path/filepath"
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

// TestLayering enforces the import direction of DESIGN §1: leaves import no
// other package of the module, only cmd/ and examples/ import proxy/, and
// e2e/ imports nothing of the module.
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
			if !inModule(imp) {
				continue
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
			}
		}
	}
	if checked < 6 {
		t.Fatalf("go list returned only %d packages", checked)
	}
}

// TestPackageDocs checks that every package directory has a doc.go (STYLE §11).
func TestPackageDocs(t *testing.T) {
	for _, l := range append(leaves, "proxy") {
		if _, err := os.Stat(filepath.Join("..", l, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", l)
		}
	}
}
