package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShippedSwitchboardIsTheImages checks that the benchmark builds
// switchboard as both images do: the same environment (less the target's
// GOOS and GOARCH) and the same flags, in the same order, with the
// version the Dockerfiles stamp by default.
func TestShippedSwitchboardIsTheImages(t *testing.T) {
	for _, name := range []string{"Dockerfile", "Dockerfile.node"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "charts", "images", name)
			f, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			env, flags, err := dockerGoBuild(string(f), "./cmd/switchboard")
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !slices.Equal(env, shippedSwitchboard.env) {
				t.Errorf("%s builds with the environment %q, the benchmark (shippedSwitchboard in build.go) with %q", path, env, shippedSwitchboard.env)
			}
			if !slices.Equal(flags, shippedSwitchboard.flags) {
				t.Errorf("%s builds with the flags %q, the benchmark (shippedSwitchboard in build.go) with %q", path, flags, shippedSwitchboard.flags)
			}
		})
	}
}

// dockerGoBuild finds the RUN instruction that builds pkg and returns the
// environment it sets for go build (GOOS and GOARCH left out, the image's
// target) and go build's flags before -o, with ${VERSION} and ${TARGET…}
// expanded as the benchmark builds.
func dockerGoBuild(dockerfile, pkg string) (env, flags []string, err error) {
	var run string
	for _, ins := range strings.Split(strings.ReplaceAll(dockerfile, "\\\n", " "), "\n") {
		if strings.HasPrefix(ins, "RUN ") && strings.Contains(ins, " go build ") && strings.Contains(ins, pkg) {
			if run != "" {
				return nil, nil, fmt.Errorf("two RUN instructions build %s", pkg)
			}
			run = ins
		}
	}
	if run == "" {
		return nil, nil, fmt.Errorf("no RUN instruction builds %s", pkg)
	}
	words, err := shellWords(run)
	if err != nil {
		return nil, nil, err
	}
	i := slices.Index(words, "go")
	if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
		return nil, nil, fmt.Errorf("%q: no go build", run)
	}
	for _, w := range words[:i] {
		k, _, ok := strings.Cut(w, "=")
		if !ok || strings.HasPrefix(w, "--") {
			env = nil // a word that is not an assignment ends what go build inherits
			continue
		}
		if k != "GOOS" && k != "GOARCH" {
			env = append(env, w)
		}
	}
	o := slices.Index(words[i:], "-o")
	if o < 0 {
		return nil, nil, fmt.Errorf("%q: go build has no -o", run)
	}
	for _, w := range words[i+2 : i+o] {
		flags = append(flags, strings.ReplaceAll(w, "${VERSION}", benchVersion))
	}
	return env, flags, nil
}

// shellWords splits a shell command into words, removing the double and
// single quotes around their parts; it knows nothing else of the shell.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// TestPeerMakefileBuild checks how the peer's Makefile's build line is
// read and compared with what the benchmark builds.
func TestPeerMakefileBuild(t *testing.T) {
	mk := "BUILD_DIR=./build\nLD_FLAGS=-ldflags \"-X main.BuildVersion=$(BUILD)\"\nGO_BUILD=CGO_ENABLED=0  go build $(LD_FLAGS)\n\nbuild:\n\t$(GO_BUILD) -o $(BUILD_DIR)/ ./...\n"
	if got := makefileBuild([]byte(mk)); got != peerMakefileBuild {
		t.Errorf("makefileBuild = %q, want %q", got, peerMakefileBuild)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := checkPeerMakefile(dir); n != "" {
		t.Errorf("the Makefile the benchmark mirrors got a note: %s", n)
	}
	cgo := strings.Replace(mk, "CGO_ENABLED=0 ", "", 1)
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(cgo), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := checkPeerMakefile(dir); !strings.Contains(n, "GO_BUILD=go build $(LD_FLAGS)") {
		t.Errorf("a Makefile that builds with cgo got the note %q, want one quoting its build line", n)
	}
}
