package test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Paths are relative to this package's directory, where go test runs.
const (
	repoRoot    = "../.."
	chartDir    = "../switchboard"
	examplesDir = "../../examples"
	releaseName = "demo"
	namespace   = "apps"
)

// kubeVersion is the cluster version the render tests assume; it matches the
// kube-apiserver the cluster tests build (.ci/tools/kube.sh).
var kubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}

// rendered is one release rendered client-side.
type rendered struct {
	Manifest string
	Notes    string
	Objects  []object
}

// object is one manifest decoded strictly into its k8s.io/api type.
type object struct {
	Source string // template path
	Kind   string
	Name   string
	YAML   string
	Value  any // *appsv1.Deployment, *corev1.Service, ...
}

func loadChart(t testing.TB, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("load chart %s: %v", dir, err)
	}
	return ch
}

// readValues reads a values file.
func readValues(t testing.TB, path string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(path)
	if err != nil {
		t.Fatalf("values %s: %v", path, err)
	}
	return v.AsMap()
}

// parseValues parses values written inline as YAML.
func parseValues(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(s))
	if err != nil {
		t.Fatalf("values: %v\n%s", err, s)
	}
	return v.AsMap()
}

// renderChart renders ch with vals the way `helm install --dry-run` does
// without a cluster (schema validation included). It returns the error of
// the render instead of failing, so tests can assert on rejected values.
func renderChart(ch *chart.Chart, vals map[string]any) (*rendered, error) {
	return renderChartAt(ch, vals, kubeVersion)
}

// renderChartAt is renderChart for the cluster version kv.
func renderChartAt(ch *chart.Chart, vals map[string]any, kv *chartutil.KubeVersion) (*rendered, error) {
	cfg := &action.Configuration{
		Releases: storage.Init(driver.NewMemory()),
		Log:      func(string, ...any) {},
	}
	inst := action.NewInstall(cfg)
	inst.ClientOnly = true
	inst.DryRun = true
	inst.ReleaseName = releaseName
	inst.Namespace = namespace
	inst.KubeVersion = kv
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	objs, err := decodeManifests(rel.Manifest)
	if err != nil {
		return nil, err
	}
	return &rendered{Manifest: rel.Manifest, Notes: rel.Info.Notes, Objects: objs}, nil
}

// render renders the chart in charts/switchboard and fails the test on any
// error.
func render(t testing.TB, vals map[string]any) *rendered {
	t.Helper()
	r, err := renderChart(loadChart(t, chartDir), vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// newObject returns an empty typed object for a kind the chart renders.
func newObject(kind string) (any, bool) {
	switch kind {
	case "Deployment":
		return &appsv1.Deployment{}, true
	case "Service":
		return &corev1.Service{}, true
	case "ConfigMap":
		return &corev1.ConfigMap{}, true
	case "ServiceAccount":
		return &corev1.ServiceAccount{}, true
	case "Secret":
		return &corev1.Secret{}, true
	case "HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, true
	case "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, true
	case "Ingress":
		return &networkingv1.Ingress{}, true
	}
	return nil, false
}

// decodeManifests splits a release manifest and decodes every document
// strictly: an unknown or duplicated field, a wrong type or an unknown kind
// is an error.
func decodeManifests(manifest string) ([]object, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []object
	for _, k := range keys {
		doc := docs[k]
		source := ""
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = s
				break
			}
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if tm.Kind == "" {
			continue // an empty document
		}
		v, ok := newObject(tm.Kind)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected kind %s", source, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
			return nil, fmt.Errorf("%s: strict decode of %s: %w", source, tm.Kind, err)
		}
		meta := v.(metav1.Object)
		out = append(out, object{Source: source, Kind: tm.Kind, Name: meta.GetName(), YAML: doc, Value: v})
	}
	return out, nil
}

// byKind returns the objects of one kind.
func (r *rendered) byKind(kind string) []object {
	var out []object
	for _, o := range r.Objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of a kind, failing unless there is exactly
// one.
func one[T any](t testing.TB, r *rendered, kind string) T {
	t.Helper()
	objs := r.byKind(kind)
	if len(objs) != 1 {
		t.Fatalf("want 1 %s, got %d\n%s", kind, len(objs), r.Manifest)
	}
	return objs[0].Value.(T)
}

func none(t testing.TB, r *rendered, kind string) {
	t.Helper()
	if objs := r.byKind(kind); len(objs) != 0 {
		t.Fatalf("want no %s, got %d\n%s", kind, len(objs), r.Manifest)
	}
}

func kinds(r *rendered) []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.Kind+"/"+o.Name)
	}
	return out
}

// container returns the named container of a pod spec, or nil.
func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func volume(spec *corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// exampleValuesFiles lists every Helm values file under examples/ (the
// embed chart's own values belong to that chart and are tested with it).
func exampleValuesFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(examplesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "embed-chart" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "values") && strings.HasSuffix(d.Name(), ".yaml") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 {
		t.Fatalf("found only %v under examples/", out)
	}
	return out
}

// cacheDir is where .ci/tools put their builds.
func cacheDir() string {
	if d := os.Getenv("SWITCHBOARD_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "switchboard")
}

// full reports whether tests that need heavy external components must run
// (and fail when the components are missing) rather than skip.
func full() bool { return os.Getenv("SWITCHBOARD_FULL") == "1" }

// tool returns the path of a binary built by a .ci/tools script, skipping
// the test when it is missing (or failing it under SWITCHBOARD_FULL=1).
func tool(t testing.TB, rel, script string) string {
	t.Helper()
	p := filepath.Join(cacheDir(), rel)
	if _, err := os.Stat(p); err != nil {
		if full() {
			t.Fatalf("%s is missing (SWITCHBOARD_FULL=1): run bash .ci/tools/%s", p, script)
		}
		t.Skipf("%s is missing: run bash .ci/tools/%s (or set SWITCHBOARD_FULL=1 to fail instead)", p, script)
	}
	return p
}
