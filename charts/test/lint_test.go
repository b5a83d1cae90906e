package test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helmRequire finds the helm module's version in go.mod's require block.
var helmRequire = regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v3 v(\S+)`)

// helmCLI returns the helm binary .ci/tools/helm.sh builds: the command of
// the helm module this module's go.mod requires, at that version.
func helmCLI(t testing.TB) string {
	t.Helper()
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := helmRequire.FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod requires no helm.sh/helm/v3")
	}
	return tool(t, filepath.Join("helm-"+string(m[1]), "helm"), "helm.sh")
}

// helm runs the helm CLI with its config, cache and data in a temporary
// directory, and returns its combined output.
func helm(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmCLI(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestHelmLint runs `helm lint --strict` on the chart with its defaults and
// with every example values file.
func TestHelmLint(t *testing.T) {
	abs, _ := filepath.Abs(chartDir)
	runs := [][]string{
		{"lint", "--strict", abs},
		{"lint", "--strict", abs, "--set", "mode=gateway,ingress.enabled=true,ingress.hosts[0].host=a.example.com,autoscaling.enabled=true,podDisruptionBudget.enabled=true,networkPolicy.enabled=true,sessionKey.existingSecret=mcp-session-key"},
		{"lint", "--strict", abs, "--set", "mode=gateway,replicaCount=3,ingress.enabled=true,ingress.className=nginx,ingress.hosts[0].host=a.example.com,podDisruptionBudget.enabled=true,sessionKey.existingSecret=mcp-session-key,sessionKey.secretKey=key"},
		{"lint", "--strict", abs, "--set", "mode=embedded"},
	}
	for _, f := range exampleValuesFiles(t) {
		p, _ := filepath.Abs(f)
		runs = append(runs, []string{"lint", "--strict", abs, "-f", p})
	}
	for _, args := range runs {
		out, err := helm(t, "", args...)
		if err != nil || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Lint shows why gateway replicas without a shared session key do not
	// render (as INFO: lint reports a template's fail without failing).
	out, err := helm(t, "", "lint", abs, "--set", "mode=gateway,replicaCount=3")
	if !strings.Contains(out, "Fail: sessionKey: gateway mode with more than one replica") || !strings.Contains(out, "sessionKey.existingSecret") {
		t.Errorf("helm lint of gateway replicas without a session key: %v\n%s", err, out)
	}
	// Lint reports a typo as the schema error.
	out, err = helm(t, "", "lint", abs, "--set", "replicaCont=2")
	if err == nil || !strings.Contains(out, "additional properties 'replicaCont' not allowed") {
		t.Errorf("helm lint with a typo: %v\n%s", err, out)
	}
}

// TestHelmTemplateCLI: the helm CLI renders what the Go packages render,
// and every object decodes strictly.
func TestHelmTemplateCLI(t *testing.T) {
	abs, _ := filepath.Abs(chartDir)
	for _, f := range exampleValuesFiles(t) {
		p, _ := filepath.Abs(f)
		out, err := helm(t, "", "template", releaseName, abs, "-n", namespace, "-f", p, "--kube-version", kubeVersion.Version)
		if err != nil {
			t.Errorf("helm template -f %s: %v\n%s", f, err, out)
			continue
		}
		objs, err := decodeManifests(out)
		if err != nil {
			t.Errorf("helm template -f %s: %v", f, err)
			continue
		}
		cli := kinds(&rendered{Objects: objs})
		goRender := kinds(render(t, readValues(t, f)))
		slices.Sort(cli)
		slices.Sort(goRender)
		if !slices.Equal(cli, goRender) {
			t.Errorf("%s: helm CLI renders %v, Go packages %v", f, cli, goRender)
		}
	}
}

// copyEmbedChart copies examples/k8s/embed-chart into a temporary directory
// with its file:// dependency made absolute, so `helm dependency build` can
// run there without touching the repository.
func copyEmbedChart(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "embed-chart")
	err := filepath.WalkDir(embedDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(embedDir, p)
		if d.IsDir() {
			if rel == "charts" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if rel == "Chart.lock" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			abs, _ := filepath.Abs(chartDir)
			b = bytes.ReplaceAll(b, []byte("file://../../../charts/switchboard"), []byte("file://"+abs))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestHelmEmbedChart: `helm dependency build` resolves the file://
// dependency offline, and the embedding chart lints and renders.
func TestHelmEmbedChart(t *testing.T) {
	dir := copyEmbedChart(t)
	if out, err := helm(t, dir, "dependency", "build", "."); err != nil {
		t.Fatalf("helm dependency build: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "charts", "switchboard-0.1.0.tgz")); err != nil {
		t.Fatalf("dependency not built: %v", err)
	}
	if out, err := helm(t, dir, "lint", "--strict", "."); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
	out, err := helm(t, dir, "template", releaseName, ".", "-n", namespace, "--kube-version", kubeVersion.Version)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{Manifest: out, Objects: objs}
	checkPod(t, &deployment(t, r).Spec.Template.Spec, podWant{mode: "embedded", app: "orders"})
}

// TestHelmTemplatePlain: a plain `helm template` (no values, no
// --kube-version) renders: the chart's kubeVersion constraint accepts the
// default version helm assumes (v1.20.0 in a helm built from source).
func TestHelmTemplatePlain(t *testing.T) {
	abs, _ := filepath.Abs(chartDir)
	out, err := helm(t, "", "template", abs)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if _, err := decodeManifests(out); err != nil {
		t.Fatal(err)
	}
}
