package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// serversDir holds the plain mcpServers files of examples/k8s/servers.
var serversDir = filepath.Join(examplesDir, "k8s", "servers")

// helmTemplate runs `helm template` with the real helm CLI on the chart
// (release demo in namespace apps) and decodes its output strictly.
func helmTemplate(t testing.TB, args ...string) *rendered {
	t.Helper()
	abs, _ := filepath.Abs(chartDir)
	out, err := helm(t, "", append([]string{"template", releaseName, abs, "-n", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return &rendered{Manifest: out, Objects: objs}
}

// absPath is p made absolute (helm runs in another directory).
func absPath(t testing.TB, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// readConfigFile parses a JSON or YAML config file into a map.
func readConfigFile(t testing.TB, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m
}

// validateRendered runs `switchboard validate` on the config a render's
// ConfigMap holds: what the pod will read.
func validateRendered(t testing.TB, r *rendered) {
	t.Helper()
	_, text := configOf(t, r, "")
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := validate(t, p); code != 0 {
		t.Errorf("rendered config: switchboard validate exit %d\n%s\n%s", code, out, text)
	}
}

// TestValuesFileServers: a user's plain mcpServers file is a values file.
// `helm template -f servers.yaml` (and -f of a JSON file holding only
// mcpServers: JSON is YAML) puts its servers into the config, beside the
// chart's config defaults. It runs without --kube-version, so it also shows
// that the chart's kubeVersion constraint accepts helm's built-in default.
func TestValuesFileServers(t *testing.T) {
	yamlFile := filepath.Join(serversDir, "servers.yaml")
	jsonFile := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	err := os.WriteFile(jsonFile, []byte(`{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp"}
  }
}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{yamlFile, jsonFile} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := helmTemplate(t, "-f", absPath(t, file))
			cfg, _ := configOf(t, r, "")
			want := readConfigFile(t, file)["mcpServers"]
			if !reflect.DeepEqual(normalize(t, cfg["mcpServers"]), normalize(t, want)) {
				t.Errorf("mcpServers = %v, want the file's %v", cfg["mcpServers"], want)
			}
			// The chart's own config defaults stay.
			if cfg["shutdownTimeout"] != float64(10000) {
				t.Errorf("shutdownTimeout = %v, want the chart default 10000", cfg["shutdownTimeout"])
			}
			d := deployment(t, r)
			switchboardContainer(t, &d.Spec.Template.Spec, false)
			checkConfigVolume(t, r, &d.Spec.Template.Spec)
			validateRendered(t, r)
		})
	}

	// A whole config file is a values file too: its top-level keys that
	// are not the chart's go into the config as they are (config.Load's
	// rules, not the chart's), the file's shutdownTimeout over the chart's.
	whole := filepath.Join(serversDir, "servers.json")
	r := helmTemplate(t, "-f", absPath(t, whole))
	cfg, _ := configOf(t, r, "")
	file := readConfigFile(t, whole)
	for k, v := range file {
		if !reflect.DeepEqual(normalize(t, cfg[k]), normalize(t, v)) {
			t.Errorf("-f a whole config file: %s = %v, want the file's %v", k, cfg[k], v)
		}
	}
	validateRendered(t, r)
	// A key that is neither the chart's nor switchboard's is refused, by
	// the name of both lists.
	abs, _ := filepath.Abs(chartDir)
	out, err := helm(t, "", "template", releaseName, abs, "--set", "replicaCont=2")
	if err == nil || !strings.Contains(out, "additional properties 'replicaCont' not allowed") {
		t.Errorf("helm template --set replicaCont=2: %v\n%s", err, out)
	}

	// The Go packages agree, and a server named in both config.mcpServers
	// and the top-level mcpServers is the top-level one, whole (not merged
	// field by field).
	r = render(t, parseValues(t, `
config:
  logLevel: debug
  mcpServers:
    a: {command: a}
    b: {command: old, args: [x], env: {K: v}}
mcpServers:
  b: {url: "https://b.example.com/mcp"}
  c: {command: c}
`))
	cfg, _ = configOf(t, r, "")
	want := map[string]any{
		"a": map[string]any{"command": "a"},
		"b": map[string]any{"url": "https://b.example.com/mcp"},
		"c": map[string]any{"command": "c"},
	}
	if !reflect.DeepEqual(normalize(t, cfg["mcpServers"]), normalize(t, want)) {
		t.Errorf("mcpServers = %v, want %v", cfg["mcpServers"], want)
	}
	if cfg["logLevel"] != "debug" {
		t.Errorf("logLevel = %v: the rest of config must stay", cfg["logLevel"])
	}
}

// TestSetFileConfig: `--set-file config=servers.json` makes a whole JSON
// (or YAML) config file the config, as it is.
func TestSetFileConfig(t *testing.T) {
	jsonFile := filepath.Join(serversDir, "servers.json")
	var want map[string]any
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}

	r := helmTemplate(t, "--set-file", "config="+absPath(t, jsonFile), "--kube-version", kubeVersion.Version)
	cfg, _ := configOf(t, r, "")
	if !reflect.DeepEqual(normalize(t, cfg), normalize(t, want)) {
		t.Errorf("config = %v\nwant the file: %v", cfg, want)
	}
	d := deployment(t, r)
	// The grace period follows the file's shutdownTimeout (30000 ms):
	// preStop 5 s + 30 s + 5 s.
	checkPod(t, &d.Spec.Template.Spec, podWant{mode: "sidecar", shutdownMS: 30000})
	if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 40 {
		t.Errorf("terminationGracePeriodSeconds = %d, want 40", g)
	}
	validateRendered(t, r)

	// A YAML file works the same way, and -f servers.yaml adds its servers.
	yamlFile := filepath.Join(serversDir, "servers.yaml")
	r = helmTemplate(t, "--set-file", "config="+absPath(t, yamlFile), "--kube-version", kubeVersion.Version)
	cfg, _ = configOf(t, r, "")
	if !reflect.DeepEqual(normalize(t, cfg), normalize(t, readConfigFile(t, yamlFile))) {
		t.Errorf("config from YAML = %v", cfg)
	}
	r = helmTemplate(t, "--set-file", "config="+absPath(t, jsonFile), "-f", absPath(t, yamlFile), "--kube-version", kubeVersion.Version)
	cfg, _ = configOf(t, r, "")
	servers, _ := cfg["mcpServers"].(map[string]any)
	if got := strings.Join(mapKeys(servers), ","); got != "filesystem,memory,search,tickets" {
		t.Errorf("servers = %s, want both files'", got)
	}
	validateRendered(t, r)

	// Gateway mode reads the parsed file: allowedHosts is added, and NOTES
	// sees that there are no tokens.
	r = render(t, map[string]any{"mode": "gateway", "config": string(b)})
	cfg, _ = configOf(t, r, "")
	if hosts, _ := cfg["allowedHosts"].([]any); len(hosts) == 0 {
		t.Errorf("gateway: no allowedHosts added to a string config: %v", cfg)
	}
	if !strings.Contains(r.Notes, "WARNING: no bearer tokens") {
		t.Errorf("NOTES:\n%s", r.Notes)
	}
	r = render(t, map[string]any{"mode": "gateway", "config": `{"auth": {"tokens": ["secret://env/T"]}, "mcpServers": {}}`})
	if strings.Contains(r.Notes, "WARNING: no bearer tokens") {
		t.Errorf("NOTES warns although the string config sets auth.tokens:\n%s", r.Notes)
	}
}

// TestConfigValuesReject: values that are neither a config nor a servers
// map fail with the path and what is wrong.
func TestConfigValuesReject(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, c := range []struct {
		name string
		vals map[string]any
		want []string
	}{
		{"config number", map[string]any{"config": 5}, []string{"at '/config'", "want string or object"}},
		{"config empty string", map[string]any{"config": ""}, []string{"at '/config'", "minLength"}},
		{"config text", map[string]any{"config": "not a config"}, []string{"config: a string config (--set-file config=FILE) must be a whole switchboard config file", "does not parse"}},
		{"config truncated JSON", map[string]any{"config": `{"mcpServers": `}, []string{"config: a string config", "unexpected end of JSON input"}},
		{"config JSON array", map[string]any{"config": `[{"mcpServers": {}}]`}, []string{"config: a string config", "cannot unmarshal array"}},
		{"mcpServers list of names", parseValues(t, `mcpServers: [memory]`), []string{"at '/mcpServers/0'", "want object"}},
		{"mcpServers typo", parseValues(t, `mcpServers: {memory: {comand: npx}}`), []string{"at '/mcpServers/memory'", "'comand' not allowed"}},
		{"JSON with comments and servers beside it", map[string]any{"config": jsoncConfig, "mcpServers": map[string]any{"b": map[string]any{"command": "y"}}},
			[]string{"config: the chart would add the servers of mcpServers to this config, but it is JSON with comments", "set them in the file itself, or remove its comments"}},
		{"JSON with comments and a client's keys beside it", map[string]any{"config": jsoncConfig, "globalShortcut": "x"},
			[]string{"the chart would add the values globalShortcut"}},
		{"JSON with comments in gateway mode", map[string]any{"config": jsoncConfig, "mode": "gateway"},
			[]string{"the chart would add allowedHosts (gateway mode)"}},
		{"JSON with comments and a session key Secret", map[string]any{"config": jsoncConfig, "sessionKey": map[string]any{"existingSecret": "k"}},
			[]string{"the chart would add sessionKey, requestStateKey"}},
		{"bad TOML", map[string]any{"config": "[mcp_servers.a]\ncommand = \n"},
			[]string{"config: a string config", "JSON, YAML or TOML"}},
		{"Continue's list beside config.mcpServers", map[string]any{"config": map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": "x"}}}, "mcpServers": []any{map[string]any{"name": "b", "command": "y"}}},
			[]string{"mcpServers: a list of servers (Continue's shape) cannot be added to the servers of config.mcpServers"}},
	} {
		_, err := renderChart(ch, c.vals)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.name, w, err)
			}
		}
	}
}

// TestPreStopFollowsKubeVersion: the sleep preStop action exists from
// Kubernetes 1.30; rendered for an older version the hook is left out
// instead of being rejected by the apiserver.
func TestPreStopFollowsKubeVersion(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"v1.20.0", false}, // helm's built-in default in a build from source
		{"v1.29.9", false},
		{"v1.30.0", true},
		{kubeVersion.Version, true},
	} {
		major, minor, _ := strings.Cut(strings.TrimPrefix(c.version, "v"), ".")
		minor, _, _ = strings.Cut(minor, ".")
		r, err := renderChartAt(ch, nil, &chartutil.KubeVersion{Version: c.version, Major: major, Minor: minor})
		if err != nil {
			t.Fatalf("%s: %v", c.version, err)
		}
		sb := switchboardContainer(t, &deployment(t, r).Spec.Template.Spec, false)
		if got := sb.Lifecycle != nil && sb.Lifecycle.PreStop != nil && sb.Lifecycle.PreStop.Sleep != nil; got != c.want {
			t.Errorf("Kubernetes %s: preStop sleep rendered = %v, want %v", c.version, got, c.want)
		}
	}
}
