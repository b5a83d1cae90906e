package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeDir holds the Kustomize component (switchboard-sidecar), an
// existing app (base) and the overlay that puts them together.
var kustomizeDir = filepath.Join(examplesDir, "k8s", "kustomize")

// kustomize builds a kustomization directory with the kustomize Go API,
// as `kubectl apply -k` does, and decodes the output strictly.
func kustomize(t testing.TB, dir string) *rendered {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(string(out))
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, out)
	}
	return &rendered{Manifest: string(out), Objects: objs}
}

// deploymentNamed returns the Deployment of that name, failing without one.
func deploymentNamed(t testing.TB, r *rendered, name string) *appsv1.Deployment {
	t.Helper()
	for _, o := range r.byKind("Deployment") {
		if o.Name == name {
			return o.Value.(*appsv1.Deployment)
		}
	}
	t.Fatalf("no Deployment %s in %v", name, kinds(r))
	return nil
}

// withoutSwitchboard returns a copy of d without what the component adds:
// the switchboard container and the switchboard-* volumes.
func withoutSwitchboard(d *appsv1.Deployment) *appsv1.Deployment {
	d = d.DeepCopy()
	spec := &d.Spec.Template.Spec
	var cs []corev1.Container
	for _, c := range spec.Containers {
		if c.Name != "switchboard" {
			cs = append(cs, c)
		}
	}
	spec.Containers = cs
	var vs []corev1.Volume
	for _, v := range spec.Volumes {
		if !strings.HasPrefix(v.Name, "switchboard-") {
			vs = append(vs, v)
		}
	}
	spec.Volumes = vs
	return d
}

// TestKustomizeComponent builds examples/k8s/kustomize/overlay: the app's
// Deployment from base gains the switchboard container (the one the chart
// renders with its defaults), its volumes, probes on the admin port and a
// ConfigMap with the overlay's config, while everything of the app stays
// as it was.
func TestKustomizeComponent(t *testing.T) {
	base := kustomize(t, filepath.Join(kustomizeDir, "base"))
	r := kustomize(t, filepath.Join(kustomizeDir, "overlay"))
	if got, want := strings.Join(kinds(r), " "), "Service/orders ConfigMap/switchboard-config Deployment/orders"; !sameWords(got, want) {
		t.Errorf("objects %s, want %s", got, want)
	}
	before := deploymentNamed(t, base, "orders")
	d := deploymentNamed(t, r, "orders")
	spec := &d.Spec.Template.Spec

	// The app is untouched: remove what the component adds (and the
	// overlay's namespace) and the Deployment is base's, container for
	// container.
	after := withoutSwitchboard(d)
	after.Namespace = ""
	if !equality.Semantic.DeepEqual(after, before) {
		t.Errorf("the app's Deployment changed beyond the switchboard container and volumes:\nbase:    %+v\noverlay: %+v", before, after)
	}
	if got := containerNames(spec.Containers); strings.Join(got, ",") != "orders,switchboard" {
		t.Errorf("containers %v, want the app's and switchboard", got)
	}
	app := container(spec.Containers, "orders")
	if !equality.Semantic.DeepEqual(*app, before.Spec.Template.Spec.Containers[0]) {
		t.Errorf("app container changed:\n got %+v\nwant %+v", *app, before.Spec.Template.Spec.Containers[0])
	}

	// switchboard is the container of the chart's default sidecar render,
	// with the overlay's image tag.
	sb := container(spec.Containers, "switchboard")
	chartPod := &deployment(t, render(t, nil)).Spec.Template.Spec
	want := switchboardContainer(t, chartPod, false).DeepCopy()
	want.Image = "mcp-switchboard/switchboard:0.1.0-node"
	if !equality.Semantic.DeepEqual(sb, want) {
		ya, _ := yaml.Marshal(sb)
		yb, _ := yaml.Marshal(want)
		t.Errorf("the component's container differs from the chart's default one:\ncomponent:\n%s\nchart:\n%s", ya, yb)
	}
	// Spelled out, as the component promises them: probes on the admin port.
	for name, p := range map[string]*corev1.Probe{"startup": sb.StartupProbe, "liveness": sb.LivenessProbe, "readiness": sb.ReadinessProbe} {
		path := "/healthz"
		if name == "readiness" {
			path = "/readyz"
		}
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("%s probe = %+v, want GET %s on port admin", name, p, path)
		}
	}
	if l, _ := envValue(sb, "SWITCHBOARD_LISTEN"); l != "127.0.0.1:8931" {
		t.Errorf("SWITCHBOARD_LISTEN = %q", l)
	}

	// The volumes are the chart's, the config one naming the ConfigMap
	// the overlay built.
	cm := one[*corev1.ConfigMap](t, r, "ConfigMap")
	for _, name := range []string{"switchboard-config", "switchboard-tmp", "switchboard-home"} {
		got, chartVol := volume(spec, name), volume(chartPod, name)
		if got == nil {
			t.Errorf("no volume %s", name)
			continue
		}
		w := chartVol.DeepCopy()
		if w.ConfigMap != nil {
			w.ConfigMap.Name = cm.Name
		}
		if !equality.Semantic.DeepEqual(got, w) {
			t.Errorf("volume %s = %+v, want %+v", name, got, w)
		}
	}
	if volume(spec, "cache") == nil {
		t.Errorf("the app's own volume is gone")
	}

	// The ConfigMap holds the overlay's config, which switchboard accepts.
	overlayConfig, err := os.ReadFile(filepath.Join(kustomizeDir, "overlay", "switchboard-config", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["config.yaml"] != string(overlayConfig) || len(cm.Data) != 1 {
		t.Errorf("ConfigMap data = %v, want config.yaml from the overlay", cm.Data)
	}
	if cm.Namespace != "apps" {
		t.Errorf("ConfigMap namespace %q", cm.Namespace)
	}
	validateRendered(t, r)
	if code, out := validate(t, filepath.Join(kustomizeDir, "switchboard-sidecar", "config.yaml")); code != 0 {
		t.Errorf("the component's default config: switchboard validate exit %d\n%s", code, out)
	}
}

// TestKustomizeTargets: the component patches exactly the Deployments
// that carry its label, and, in a copy whose target names a Deployment,
// exactly that one.
func TestKustomizeTargets(t *testing.T) {
	dir := copyTree(t, kustomizeDir)
	worker := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
        - name: worker
          image: acme/worker:1.0.0
`
	writeFile(t, filepath.Join(dir, "base", "worker.yaml"), worker)
	editFile(t, filepath.Join(dir, "base", "kustomization.yaml"), "  - service.yaml\n", "  - service.yaml\n  - worker.yaml\n")

	patched := func(r *rendered, name string) bool {
		return container(deploymentNamed(t, r, name).Spec.Template.Spec.Containers, "switchboard") != nil
	}
	r := kustomize(t, filepath.Join(dir, "overlay"))
	if !patched(r, "orders") || patched(r, "worker") {
		t.Errorf("by label: orders patched %v (want true), worker patched %v (want false)", patched(r, "orders"), patched(r, "worker"))
	}

	// By name, as the component's comment says: replace both labelSelectors.
	p := filepath.Join(dir, "switchboard-sidecar", "kustomization.yaml")
	for range 2 {
		editFile(t, p, "      labelSelector: mcp-switchboard/sidecar=true\n", "      name: worker\n")
	}
	r = kustomize(t, filepath.Join(dir, "overlay"))
	if patched(r, "orders") || !patched(r, "worker") {
		t.Errorf("by name: orders patched %v (want false), worker patched %v (want true)", patched(r, "orders"), patched(r, "worker"))
	}
	w := deploymentNamed(t, r, "worker")
	if got := containerNames(w.Spec.Template.Spec.Containers); strings.Join(got, ",") != "worker,switchboard" {
		t.Errorf("worker containers %v", got)
	}
}

// sameWords reports whether two space-separated lists hold the same words.
func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, w := range x {
		seen[w]++
	}
	for _, w := range y {
		if seen[w] == 0 {
			return false
		}
		seen[w]--
	}
	return true
}

// copyTree copies a directory into a temporary one and returns the copy.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editFile replaces old, which must be there, with new in a file.
func editFile(t testing.TB, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", p, old)
	}
	writeFile(t, p, strings.Replace(string(b), old, new, 1))
}
