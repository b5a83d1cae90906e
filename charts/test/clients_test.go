package test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// clientsDir holds the client corpus of proxy/config: other MCP clients'
// files, each written as its client documents it.
var clientsDir = filepath.Join(repoRoot, "proxy", "config", "testdata", "clients")

// notValuesFiles are the corpus files helm cannot take as a values file
// although they are YAML (or JSON), with helm's error: a top-level key of
// the client's has the name of one of the chart's values and another type.
// --set-file config=FILE takes them.
var notValuesFiles = map[string]string{
	"amazon-q-agent/cli-agents/aws-rust-agent.json": "at '/resources': got array, want object",
}

// TestClientFilesRender: one set of rules. Every file of the client corpus
// renders both ways, `helm template -f FILE` and `--set-file config=FILE`,
// into a ConfigMap that switchboard reads exactly as it reads the file
// itself: `switchboard validate` gives the same verdict, server count and
// digest, or the same errors. The only difference -f makes is the chart's
// own config default (shutdownTimeout) next to the file's keys. A file helm
// cannot read as values (JSON with comments, TOML) or whose key clashes
// with a chart value fails -f with helm's error. See "First contact".
func TestClientFilesRender(t *testing.T) {
	var files []string
	err := filepath.WalkDir(clientsDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != ".env" {
			rel, _ := filepath.Rel(clientsDir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("the client corpus has %d files, want at least 20", len(files))
	}
	abs, _ := filepath.Abs(chartDir)
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			// A copy of the client's folder, so that what the file refers
			// to (an envFile, ${workspaceFolder}) is the same for the file
			// and for the rendered config beside it.
			client, inside, _ := strings.Cut(rel, "/")
			file := filepath.Join(copyTree(t, filepath.Join(clientsDir, client)), filepath.FromSlash(inside))
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}

			t.Run("set-file", func(t *testing.T) {
				r := helmTemplate(t, "--set-file", "config="+file)
				sameVerdict(t, file, writeBeside(t, file, configText(t, r)))
			})

			t.Run("values", func(t *testing.T) {
				var vals map[string]any
				if yerr := yaml.Unmarshal(data, &vals); yerr != nil || jsonComment.Match(data) {
					// Not YAML (TOML, most JSON with comments), or YAML
					// that reads a comment as a key: helm refuses it.
					out, err := helm(t, "", "template", releaseName, abs, "-n", namespace, "-f", file)
					if err == nil {
						t.Errorf("helm -f of a file that is not YAML rendered:\n%s", out)
					}
					return
				}
				if want, ok := notValuesFiles[rel]; ok {
					out, err := helm(t, "", "template", releaseName, abs, "-n", namespace, "-f", file)
					if err == nil || !strings.Contains(out, want) {
						t.Errorf("helm -f: %v, want %q\n%s", err, want, out)
					}
					return
				}
				r := helmTemplate(t, "-f", file)
				text := configText(t, r)
				// The file with the chart's config default is what -f gives.
				if _, ok := vals["shutdownTimeout"]; !ok {
					vals["shutdownTimeout"] = 10000
				}
				b, err := json.Marshal(vals)
				if err != nil {
					t.Fatal(err)
				}
				sameVerdict(t, writeBeside(t, file, string(b)), writeBeside(t, file, text))
			})
		})
	}
	for rel := range notValuesFiles {
		if !slices.Contains(files, rel) {
			t.Errorf("notValuesFiles names %s, which is not in the corpus", rel)
		}
	}
}

// jsonComment finds a comment in a JSON file (a line that starts one).
var jsonComment = regexp.MustCompile(`(?m)^\s*(//|/\*)`)

// configText is the config file of a render's ConfigMap, as written
// there (JSON with comments is not YAML).
func configText(t *testing.T, r *rendered) string {
	t.Helper()
	cm := one[*corev1.ConfigMap](t, r, "ConfigMap")
	text, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no config.yaml", cm.Name)
	}
	return text
}

// writeBeside writes text to a new file in the directory of file and
// returns its path.
func writeBeside(t *testing.T, file, text string) string {
	t.Helper()
	f, err := os.CreateTemp(filepath.Dir(file), "rendered-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// okLine is validate's verdict on a config it accepts, without the path.
var okLine = regexp.MustCompile(`: ok \(\d+ servers, digest [0-9a-f]+\)`)

// sameVerdict runs `switchboard validate` on want and got and fails
// unless both accept with the same server count and digest, or both
// refuse with the same errors.
func sameVerdict(t *testing.T, want, got string) {
	t.Helper()
	wc, wout := validate(t, want)
	gc, gout := validate(t, got)
	verdict := func(code int, out, path string) string {
		if code == 0 {
			return okLine.FindString(out)
		}
		return strings.ReplaceAll(out, path, "CONFIG")
	}
	if wc != gc || verdict(wc, wout, want) != verdict(gc, gout, got) {
		text, _ := os.ReadFile(got)
		t.Errorf("the rendered config reads differently from the file:\nfile: exit %d\n%s\nrendered: exit %d\n%s\nrendered config:\n%s", wc, wout, gc, gout, text)
	}
}

// TestOwnValuesMatchSchema: the chart's list of its own top-level values
// (every other top-level value goes into the config file) is the list of
// values.schema.json's properties.
func TestOwnValuesMatchSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)define "switchboard.ownValues" -}}\n(.*?)\n\{\{- end`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no switchboard.ownValues in _helpers.tpl")
	}
	own := strings.Fields(string(m[1]))
	slices.Sort(own)
	if want := propertyNames(schema(t)); !slices.Equal(own, want) {
		t.Errorf("switchboard.ownValues = %v\nschema properties = %v", own, want)
	}
}

// jsoncConfig is a string config of JSON with comments and trailing commas.
const jsoncConfig = "{\n  // servers\n  \"mcpServers\": {\"a\": {\"command\": \"x\",},},\n}\n"

// TestStringConfigFormats: a string config (--set-file config=FILE) may be
// JSON, YAML, TOML (Codex CLI) or JSON with comments (VS Code, Zed). The
// chart reads and edits the first three; JSON with comments goes into the
// ConfigMap as written (where the chart would have to add to it, the
// render fails: TestConfigValuesReject).
func TestStringConfigFormats(t *testing.T) {
	const toml = "# Codex\nmodel = \"o3\"\n\n[mcp_servers.a]\ncommand = \"x\"\n"

	r := render(t, map[string]any{"config": jsoncConfig})
	if got := configText(t, r); got != strings.TrimSpace(jsoncConfig) {
		t.Errorf("JSON with comments: ConfigMap holds\n%s\nwant it as written", got)
	}
	r = render(t, map[string]any{"config": toml, "mode": "gateway"})
	cfg, _ := configOf(t, r, "")
	if _, ok := cfg["mcp_servers"]; !ok || cfg["allowedHosts"] == nil {
		t.Errorf("TOML in gateway mode: config %v, want mcp_servers and the chart's allowedHosts", cfg)
	}
	r = render(t, map[string]any{"mode": "gateway", "config": "{\n  // gateway\n  \"allowedHosts\": [\"mcp.example.com\"],\n  \"mcpServers\": {}\n}"})
	if !strings.Contains(configText(t, r), "// gateway") {
		t.Errorf("JSON with comments and allowedHosts in gateway mode: %s", configText(t, r))
	}
}
