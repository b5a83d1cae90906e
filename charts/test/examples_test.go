package test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// switchboardBinary builds cmd/switchboard once per test run, from the main
// module (so this module never imports it).
func switchboardBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-chart-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/switchboard")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out) + err.Error())
		}
	})
	if buildErr != nil {
		t.Fatalf("build switchboard: %v", buildErr)
	}
	return binPath
}

// validate runs `switchboard validate --config path` and returns its exit
// code and output.
func validate(t testing.TB, path string) (int, string) {
	t.Helper()
	cmd := exec.Command(switchboardBinary(t), "validate", "--config", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("run switchboard validate: %v", err)
	return -1, ""
}

// clientConfig is the example Claude Desktop file that runs switchboard.
const clientConfig = "claude_desktop_config.json"

// exampleConfigFiles lists the switchboard config files of examples/: every
// JSON and YAML file except Helm values, the embed chart's files and the
// Kubernetes manifests of k8s/kustomize (its configs are checked by
// TestKustomizeComponent, from what the build puts in the ConfigMap), and
// the client file that starts switchboard (clientConfig).
func exampleConfigFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(examplesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "embed-chart" || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "kustomize" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		ext := filepath.Ext(name)
		if name == clientConfig {
			return nil // the client's file that starts switchboard, not a switchboard config
		}
		if (ext == ".json" || ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(name, "values") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExampleConfigsValidate: every example config passes `switchboard
// validate`, and so does the config file the chart renders from every
// example values file (what the pod will read).
func TestExampleConfigsValidate(t *testing.T) {
	files := exampleConfigFiles(t)
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		if code, out := validate(t, f); code != 0 {
			t.Errorf("switchboard validate %s: exit %d\n%s", f, code, out)
		}
	}
	// The Claude Desktop file that starts switchboard is refused as a
	// switchboard config: served, it would start itself again and again.
	client := filepath.Join(examplesDir, "claude-desktop", clientConfig)
	if code, out := validate(t, client); code == 0 || !strings.Contains(out, "runs switchboard itself") {
		t.Errorf("switchboard validate %s: exit %d, want the self-start refusal\n%s", client, code, out)
	}
	dir := t.TempDir()
	for i, f := range exampleValuesFiles(t) {
		_, text := configOf(t, render(t, readValues(t, f)), "")
		p := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(f, examplesDir+"/"), "/", "_"))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out := validate(t, p); code != 0 {
			t.Errorf("rendered config of %s (#%d): switchboard validate exit %d\n%s\n%s", f, i, code, out, text)
		}
	}
	// The embed chart's rendered config too.
	_, text := configOf(t, renderEmbed(t, nil), "")
	p := filepath.Join(dir, "embed-chart.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := validate(t, p); code != 0 {
		t.Errorf("embed chart's rendered config: switchboard validate exit %d\n%s\n%s", code, out, text)
	}
}

// TestValidateRejects makes sure the check above can fail: a config with a
// typo exits 2 with the field's path.
func TestValidateRejects(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("mcpServers:\n  a:\n    comand: npx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := validate(t, p)
	if code != 2 || !strings.Contains(out, "mcpServers.a") {
		t.Errorf("switchboard validate of a bad config: exit %d\n%s", code, out)
	}
}

// TestExampleReadmes: every example has a README with the four sections.
func TestExampleReadmes(t *testing.T) {
	for _, dir := range []string{"claude-desktop", "multi-agent", "vault", "k8s/sidecar", "k8s/gateway", "k8s/embed-chart", "k8s/servers", "k8s/kustomize"} {
		b, err := os.ReadFile(filepath.Join(examplesDir, dir, "README.md"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		last := -1
		for _, h := range []string{"## Name", "## What it shows", "## Run", "## Config"} {
			i := bytes.Index(b, []byte("\n"+h+"\n"))
			if i < 0 {
				t.Errorf("%s/README.md has no section %q", dir, h)
				continue
			}
			if i < last {
				t.Errorf("%s/README.md: section %q out of order", dir, h)
			}
			last = i
		}
	}
}
