package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// The images cannot be built here (no container engine), so this checks
// what can be checked without one: the shape of each Dockerfile, and that
// its ignore file keeps every source file the binary needs in the context.

const imagesDir = "../images"

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	Cmd  string // upper case
	Args string
}

func parseDockerfile(t testing.TB, p string) []instruction {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
		cur = ""
	}
	if cur != "" {
		t.Fatalf("%s: unterminated continuation", p)
	}
	return out
}

func TestDockerfiles(t *testing.T) {
	known := map[string]bool{"ARG": true, "FROM": true, "WORKDIR": true, "COPY": true, "RUN": true,
		"ENV": true, "USER": true, "EXPOSE": true, "LABEL": true, "ENTRYPOINT": true, "CMD": true}
	for _, name := range []string{"Dockerfile", "Dockerfile.node"} {
		p := filepath.Join(imagesDir, name)
		b, _ := os.ReadFile(p)
		if !strings.HasPrefix(string(b), "# syntax=docker/dockerfile:1\n") {
			t.Errorf("%s: no BuildKit syntax line (RUN --mount and the per-Dockerfile ignore file need BuildKit)", name)
		}
		ins := parseDockerfile(t, p)
		var stages [][]instruction
		for _, in := range ins {
			if !known[in.Cmd] {
				t.Errorf("%s: unexpected instruction %s", name, in.Cmd)
			}
			if in.Cmd == "FROM" {
				stages = append(stages, nil)
			}
			if len(stages) > 0 {
				stages[len(stages)-1] = append(stages[len(stages)-1], in)
			}
		}
		if len(stages) < 2 {
			t.Fatalf("%s: %d stages, want a build stage and a runtime stage", name, len(stages))
		}
		build := stages[0]
		joined := ""
		for _, in := range build {
			joined += in.Cmd + " " + in.Args + "\n"
		}
		for _, want := range []string{"CGO_ENABLED=0", "go build", "-trimpath", "-tags grpcnotrace", "./cmd/switchboard ./cmd/switchboard-secrets", "COPY go.mod go.sum", "go mod download"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: build stage lacks %q", name, want)
			}
		}
		final := stages[len(stages)-1]
		var user string
		var entrypoint, cmd []string
		helper := false
		for _, in := range final {
			switch in.Cmd {
			case "COPY":
				// switchboard looks for its secrets helper beside itself.
				helper = helper || strings.Contains(in.Args, "/out/switchboard /out/switchboard-secrets /usr/local/bin/")
			case "FROM":
				if strings.Contains(strings.ToLower(in.Args), " as ") {
					t.Errorf("%s: the final stage is named (%s)", name, in.Args)
				}
			case "USER":
				user = in.Args
			case "ENTRYPOINT":
				if err := json.Unmarshal([]byte(in.Args), &entrypoint); err != nil {
					t.Errorf("%s: ENTRYPOINT is not exec form: %v", name, err)
				}
			case "CMD":
				if err := json.Unmarshal([]byte(in.Args), &cmd); err != nil {
					t.Errorf("%s: CMD is not exec form: %v", name, err)
				}
			}
		}
		// The chart's securityContext runs as 65532; the image agrees.
		if user != "65532:65532" {
			t.Errorf("%s: final USER %q, want 65532:65532", name, user)
		}
		if len(entrypoint) == 0 || !strings.HasSuffix(entrypoint[len(entrypoint)-1], "/switchboard") {
			t.Errorf("%s: ENTRYPOINT %q does not end in switchboard", name, entrypoint)
		}
		if !helper || len(entrypoint) == 0 || entrypoint[len(entrypoint)-1] != "/usr/local/bin/switchboard" {
			t.Errorf("%s: switchboard-secrets is not copied beside the entrypoint %q", name, entrypoint)
		}
		if strings.Join(cmd, " ") != "serve --config /etc/switchboard/config.yaml" {
			t.Errorf("%s: CMD %q", name, cmd)
		}
		if _, err := os.Stat(p + ".dockerignore"); err != nil {
			t.Errorf("%s: no per-Dockerfile ignore file: %v", name, err)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(imagesDir, "README.md"))
	for _, want := range []string{"docker build -f charts/images/Dockerfile ", "docker build -f charts/images/Dockerfile.node "} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("charts/images/README.md lacks %q", want)
		}
	}
}

// ignored reports whether a .dockerignore pattern list excludes rel (a
// slash-separated path in the build context). It follows the documented
// rules for the patterns the ignore files use: a leading "/" is dropped,
// "**/" matches any number of directories, and a pattern that matches a
// parent directory excludes everything below it. "!" exceptions are not
// used by our files and are refused.
func ignored(t testing.TB, patterns []string, rel string) bool {
	t.Helper()
	parts := strings.Split(rel, "/")
	for _, pat := range patterns {
		if strings.HasPrefix(pat, "!") {
			t.Fatalf("exception pattern %q not supported by this check", pat)
		}
		pat = strings.TrimPrefix(pat, "/")
		anyDepth := strings.HasPrefix(pat, "**/")
		pat = strings.TrimPrefix(pat, "**/")
		for i := 1; i <= len(parts); i++ {
			starts := []int{0}
			if anyDepth {
				starts = nil
				for s := 0; s < i; s++ {
					starts = append(starts, s)
				}
			}
			for _, s := range starts {
				if ok, _ := path.Match(pat, strings.Join(parts[s:i], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

func TestDockerignoreKeepsSources(t *testing.T) {
	// Every Go and embedded file of cmd/switchboard's packages in the module.
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}`, "./cmd/switchboard")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs(repoRoot)
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
			files = append(files, filepath.ToSlash(rel))
		}
	}
	files = append(files, "go.mod", "go.sum")
	if len(files) < 10 {
		t.Fatalf("only %v", files)
	}
	for _, name := range []string{"Dockerfile.dockerignore", "Dockerfile.node.dockerignore"} {
		b, err := os.ReadFile(filepath.Join(imagesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var patterns []string
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				patterns = append(patterns, line)
			}
		}
		for _, f := range files {
			if ignored(t, patterns, f) {
				t.Errorf("%s excludes %s, which the build needs", name, f)
			}
		}
		for _, f := range []string{".git/config", "e2e/core_test.go", "charts/switchboard/Chart.yaml", "proxy/config_test.go", "fixture"} {
			if !ignored(t, patterns, f) {
				t.Errorf("%s keeps %s in the context", name, f)
			}
		}
	}
}
