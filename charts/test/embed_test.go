package test

import (
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
)

const embedDir = examplesDir + "/k8s/embed-chart"

// embedChart loads examples/k8s/embed-chart with this repository's chart as
// its dependency, as `helm dependency build` leaves it (the file://
// dependency copied into charts/).
func embedChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch := loadChart(t, embedDir)
	if len(ch.Dependencies()) == 0 {
		ch.AddDependency(loadChart(t, chartDir))
	}
	if err := action.CheckDependencies(ch, ch.Metadata.Dependencies); err != nil {
		t.Fatalf("embed chart dependencies: %v", err)
	}
	return ch
}

func renderEmbed(t testing.TB, vals map[string]any) *rendered {
	t.Helper()
	r, err := renderChart(embedChart(t), vals)
	if err != nil {
		t.Fatalf("render embed chart: %v", err)
	}
	return r
}

func TestEmbedChart(t *testing.T) {
	r := renderEmbed(t, nil)
	want := []string{"ServiceAccount/demo-orders", "ConfigMap/demo-switchboard-config", "Deployment/demo-orders"}
	if got := kinds(r); !slices.Equal(got, want) {
		t.Errorf("objects = %v, want %v (the subchart must render nothing itself)", got, want)
	}
	d := deployment(t, r)
	spec := &d.Spec.Template.Spec
	checkPod(t, spec, podWant{mode: "embedded", app: "orders"})
	checkConfigVolume(t, r, spec)
	if u, _ := envValue(container(spec.Containers, "orders"), "MCP_SERVER_URL"); u != "http://127.0.0.1:8931/mcp" {
		t.Errorf("MCP_SERVER_URL = %q", u)
	}
	sb := switchboardContainer(t, spec, false)
	if sb.Image != "mcp-switchboard/switchboard:0.1.0-node" {
		t.Errorf("image = %s, want the parent's override", sb.Image)
	}
	if r, _ := envValue(sb, "AWS_REGION"); r != "eu-west-1" {
		t.Errorf("AWS_REGION = %q", r)
	}
	if volume(spec, "mcp-credentials") == nil {
		t.Errorf("secretMounts not in the pod")
	}
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Errorf("ServiceAccount annotations = %v", sa.Annotations)
	}
	cfg, _ := configOf(t, r, "")
	checkNoLiteralCredentials(t, "embed chart", cfg, "config")

	// The parent's switchboard values are checked by switchboard's schema.
	_, err := renderChart(embedChart(t), parseValues(t, `{switchboard: {config: {mcpServers: {a: {comand: x}}}}}`))
	if err == nil {
		t.Fatalf("a typo under switchboard.config was accepted")
	}
	t.Logf("typo rejected: %v", err)

	// The config checksum through switchboard.podAnnotations.
	r = renderEmbed(t, parseValues(t, `{switchboard: {rollOnConfigChange: true}}`))
	if deployment(t, r).Spec.Template.Annotations["checksum/switchboard-config"] == "" {
		t.Errorf("switchboard.podAnnotations did not carry the checksum")
	}
}
