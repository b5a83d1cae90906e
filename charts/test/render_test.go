package test

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// exampleWant describes what each example values file must render.
func exampleWant(t testing.TB, vals map[string]any) podWant {
	t.Helper()
	w := podWant{mode: "sidecar"}
	if m, ok := vals["mode"].(string); ok {
		w.mode = m
	}
	if app, ok := vals["app"].(map[string]any); ok && w.mode == "sidecar" {
		if img, ok := app["image"].(map[string]any); ok && img["repository"] != "" && img["repository"] != nil {
			w.app = "app"
			if n, ok := app["name"].(string); ok {
				w.app = n
			}
			w.native, _ = vals["nativeSidecar"].(bool)
		}
	}
	if s, ok := vals["preStopSleepSeconds"].(float64); ok {
		w.preStop = int(s)
	}
	if cfg, ok := vals["config"].(map[string]any); ok {
		if s, ok := cfg["shutdownTimeout"].(float64); ok {
			w.shutdownMS = int(s)
		}
	}
	if sk, ok := vals["sessionKey"].(map[string]any); ok {
		w.sessionSecret, _ = sk["existingSecret"].(string)
		w.sessionSecretKey, _ = sk["secretKey"].(string)
	}
	return w
}

// TestExamples renders every example values file and checks the pod, the
// ConfigMap and the objects around them.
func TestExamples(t *testing.T) {
	for _, f := range exampleValuesFiles(t) {
		t.Run(filepath.ToSlash(strings.TrimPrefix(f, examplesDir+"/")), func(t *testing.T) {
			vals := readValues(t, f)
			r := render(t, vals)
			w := exampleWant(t, vals)
			d := deployment(t, r)
			checkPod(t, &d.Spec.Template.Spec, w)
			checkConfigVolume(t, r, &d.Spec.Template.Spec)
			cfg, _ := configOf(t, r, "")
			checkNoLiteralCredentials(t, f, cfg, "config")
			none(t, r, "Secret")

			// The ConfigMap holds the values' config as written (gateway
			// mode adds allowedHosts).
			want := chartutil.CoalesceTables(maps.Clone(vals["config"].(map[string]any)),
				loadChart(t, chartDir).Values["config"].(map[string]any))
			got := maps.Clone(cfg)
			if w.mode == "gateway" {
				if _, set := want["allowedHosts"]; !set {
					delete(got, "allowedHosts")
				}
			}
			// sessionKey.existingSecret adds the keys the config lacks.
			if w.sessionSecret != "" {
				for _, k := range []string{"sessionKey", "requestStateKey"} {
					if _, set := want[k]; !set {
						want[k] = sessionKeyRef
					}
				}
			}
			if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
				t.Errorf("ConfigMap config differs from values config\n got: %v\nwant: %v", got, want)
			}

			// The Deployment selects its own pods.
			for k, v := range d.Spec.Selector.MatchLabels {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("selector %s=%s does not match the pod labels %v", k, v, d.Spec.Template.Labels)
				}
			}
		})
	}
}

// normalize round-trips v through JSON so numbers compare equal whatever
// their Go type.
func normalize(t testing.TB, v any) any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDefaults(t *testing.T) {
	r := render(t, nil)
	d := deployment(t, r)
	// No app image: switchboard alone, and NOTES says so.
	checkPod(t, &d.Spec.Template.Spec, podWant{mode: "sidecar"})
	if !strings.Contains(r.Notes, "app.image.repository is empty") {
		t.Errorf("NOTES does not warn about the missing app image:\n%s", r.Notes)
	}
	none(t, r, "Service")
	none(t, r, "HorizontalPodAutoscaler")
	none(t, r, "Ingress")
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	if d.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("pod uses ServiceAccount %q, chart renders %q", d.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken = %v, want false without Vault", a)
	}
	if d.Annotations["checksum/switchboard-config"] != "" || d.Spec.Template.Annotations["checksum/switchboard-config"] != "" {
		t.Errorf("checksum annotation without rollOnConfigChange")
	}
	if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 30 {
		t.Errorf("terminationGracePeriodSeconds = %d, want 30", g)
	}
}

func TestSidecar(t *testing.T) {
	r := render(t, parseValues(t, `
app:
  name: web
  image: {repository: acme/web, tag: "1.0"}
  args: ["--port=8080"]
  env: [{name: A, value: b}]
  ports: [{name: http, containerPort: 8080}]
  volumeMounts: [{name: data, mountPath: /data}]
extraVolumes: [{name: data, emptyDir: {}}]
config:
  mcpServers:
    mem: {command: npx, args: ["-y", "@modelcontextprotocol/server-memory"]}
`))
	d := deployment(t, r)
	spec := &d.Spec.Template.Spec
	checkPod(t, spec, podWant{mode: "sidecar", app: "web"})
	app := container(spec.Containers, "web")
	if app.Image != "acme/web:1.0" || !slices.Equal(app.Args, []string{"--port=8080"}) {
		t.Errorf("app container = %s %v", app.Image, app.Args)
	}
	if u, _ := envValue(app, "MCP_SERVER_URL"); u != "http://127.0.0.1:8931/mcp" {
		t.Errorf("MCP_SERVER_URL = %q", u)
	}
	if v, _ := envValue(app, "A"); v != "b" {
		t.Errorf("app env A = %q", v)
	}
	if volume(spec, "data") == nil {
		t.Errorf("extraVolumes not in the pod")
	}
	// A sidecar pod keeps the user's pod security context (none by default).
	if spec.SecurityContext != nil {
		t.Errorf("sidecar mode set a pod securityContext %+v", spec.SecurityContext)
	}
	svc := one[*corev1.Service](t, r, "Service")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("app Service = %+v", svc.Spec)
	}
	if !strings.Contains(r.Notes, "http://127.0.0.1:8931/mcp") || !strings.Contains(r.Notes, "MCP_SERVER_URL") {
		t.Errorf("NOTES does not tell the app's URL:\n%s", r.Notes)
	}
}

func TestNativeSidecar(t *testing.T) {
	r := render(t, parseValues(t, `
nativeSidecar: true
app: {image: {repository: acme/web}}
`))
	d := deployment(t, r)
	checkPod(t, &d.Spec.Template.Spec, podWant{mode: "sidecar", app: "app", native: true})

	// Without an app, switchboard stays a regular container.
	r = render(t, parseValues(t, `nativeSidecar: true`))
	checkPod(t, &deployment(t, r).Spec.Template.Spec, podWant{mode: "sidecar"})
}

func TestGateway(t *testing.T) {
	r := render(t, parseValues(t, `
mode: gateway
replicaCount: 3
sessionKey: {existingSecret: mcp-session-key}
ingress:
  enabled: true
  className: nginx
  hosts: [{host: mcp.example.com}]
autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 5}
podDisruptionBudget: {enabled: true}
networkPolicy:
  enabled: true
  mcpFrom: [{namespaceSelector: {matchLabels: {team: a}}}]
extraAllowedHosts: [mcp.internal]
config:
  mcpServers:
    search: {type: http, url: "https://search.example.com/mcp"}
`))
	d := deployment(t, r)
	spec := &d.Spec.Template.Spec
	checkPod(t, spec, podWant{mode: "gateway", sessionSecret: "mcp-session-key"})
	if d.Spec.Replicas != nil {
		t.Errorf("replicas set although the HPA scales the Deployment")
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil {
		t.Errorf("gateway pod securityContext = %+v", psc)
	}

	svc := one[*corev1.Service](t, r, "Service")
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || svc.Spec.SessionAffinityConfig == nil ||
		*svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
		t.Errorf("Service session affinity = %v %+v", svc.Spec.SessionAffinity, svc.Spec.SessionAffinityConfig)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8931 || svc.Spec.Ports[0].TargetPort.String() != "mcp" {
		t.Errorf("Service ports = %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if spec := d.Spec.Template.Labels; spec[k] != v {
			t.Errorf("Service selector %s=%s does not match the pods", k, v)
		}
	}

	cfg, _ := configOf(t, r, "")
	hosts, _ := cfg["allowedHosts"].([]any)
	for _, h := range []string{"demo-switchboard", "demo-switchboard.apps.svc", "demo-switchboard.apps.svc.cluster.local", "localhost", "mcp.example.com", "mcp.internal"} {
		if !slices.Contains(hosts, any(h)) {
			t.Errorf("allowedHosts %v lacks %s", hosts, h)
		}
	}

	ing := one[*networkingv1.Ingress](t, r, "Ingress")
	be := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
	if ing.Spec.Rules[0].Host != "mcp.example.com" || be.Name != svc.Name || be.Port.Name != "mcp" {
		t.Errorf("Ingress = %+v", ing.Spec.Rules)
	}
	hpa := one[*autoscalingv2.HorizontalPodAutoscaler](t, r, "HorizontalPodAutoscaler")
	if hpa.Spec.ScaleTargetRef.Name != d.Name || hpa.Spec.ScaleTargetRef.Kind != "Deployment" ||
		hpa.Spec.MaxReplicas != 5 || len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("HPA = %+v", hpa.Spec)
	}
	pdb := one[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PDB = %+v", pdb.Spec)
	}
	np := one[*networkingv1.NetworkPolicy](t, r, "NetworkPolicy")
	if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].Ports[0].Port.String() != "mcp" || len(np.Spec.Ingress[0].From) != 1 {
		t.Errorf("NetworkPolicy = %+v", np.Spec)
	}
	if !strings.Contains(r.Notes, "http://demo-switchboard.apps.svc:8931/mcp") {
		t.Errorf("NOTES lacks the in-cluster URL:\n%s", r.Notes)
	}
	if strings.Contains(r.Notes, "WARNING") {
		t.Errorf("NOTES warns although a NetworkPolicy is on:\n%s", r.Notes)
	}
	// An open gateway gets a warning; tokens (global or per agent) end it.
	for vals, warn := range map[string]bool{
		`{mode: gateway}`: true,
		`{mode: gateway, config: {auth: {tokens: ["secret://env/T"]}}}`:                    false,
		`{mode: gateway, config: {agents: {list: [{id: a, tokens: ["secret://env/T"]}]}}}`: false,
		`{mode: gateway, config: {agents: {list: [{id: a}]}}}`:                             true,
	} {
		notes := render(t, parseValues(t, vals)).Notes
		if got := strings.Contains(notes, "WARNING: no bearer tokens"); got != warn {
			t.Errorf("%s: warning %v, want %v\n%s", vals, got, warn, notes)
		}
	}

	// allowedHosts set by the user are kept as they are.
	r = render(t, parseValues(t, `{mode: gateway, config: {allowedHosts: [only.example]}}`))
	cfg, _ = configOf(t, r, "")
	if !reflect.DeepEqual(cfg["allowedHosts"], []any{"only.example"}) {
		t.Errorf("allowedHosts = %v, want the user's", cfg["allowedHosts"])
	}
	// No affinity when turned off.
	r = render(t, parseValues(t, `{mode: gateway, service: {sessionAffinity: None}}`))
	if svc := one[*corev1.Service](t, r, "Service"); svc.Spec.SessionAffinity != corev1.ServiceAffinityNone || svc.Spec.SessionAffinityConfig != nil {
		t.Errorf("sessionAffinity None rendered %+v", svc.Spec)
	}
}

func TestEmbeddedModeRendersNothing(t *testing.T) {
	r := render(t, parseValues(t, `mode: embedded`))
	if len(r.Objects) != 0 {
		t.Errorf("embedded mode rendered %v", kinds(r))
	}
}

func TestRollOnConfigChange(t *testing.T) {
	sum := func(vals string) string {
		d := deployment(t, render(t, parseValues(t, vals)))
		return d.Spec.Template.Annotations["checksum/switchboard-config"]
	}
	if s := sum(`{config: {logLevel: info}}`); s != "" {
		t.Errorf("checksum %q with rollOnConfigChange false", s)
	}
	a := sum(`{rollOnConfigChange: true, config: {logLevel: info}}`)
	b := sum(`{rollOnConfigChange: true, config: {logLevel: debug}}`)
	if a == "" || b == "" || a == b {
		t.Errorf("checksums %q and %q: want two different ones", a, b)
	}
	d := deployment(t, render(t, parseValues(t, `{rollOnConfigChange: true, podAnnotations: {a: b}}`)))
	if d.Spec.Template.Annotations["a"] != "b" || d.Spec.Template.Annotations["checksum/switchboard-config"] == "" {
		t.Errorf("pod annotations = %v", d.Spec.Template.Annotations)
	}
}

func TestExistingConfigMap(t *testing.T) {
	r := render(t, parseValues(t, `{existingConfigMap: my-config, configKey: sb.json, rollOnConfigChange: true}`))
	none(t, r, "ConfigMap")
	d := deployment(t, r)
	spec := &d.Spec.Template.Spec
	checkPod(t, spec, podWant{mode: "sidecar", configKey: "sb.json"})
	if v := volume(spec, "switchboard-config"); v == nil || v.ConfigMap == nil || v.ConfigMap.Name != "my-config" {
		t.Errorf("config volume = %+v", v)
	}
}

func TestShutdownGrace(t *testing.T) {
	for _, c := range []struct {
		vals string
		want int64
	}{
		{`{}`, 30},
		{`{config: {shutdownTimeout: 60000}}`, 70},
		{`{config: {shutdownTimeout: 60001}, preStopSleepSeconds: 10}`, 76},
		{`{preStopSleepSeconds: 0}`, 30},
		{`{terminationGracePeriodSeconds: 120}`, 120},
	} {
		vals := parseValues(t, c.vals)
		d := deployment(t, render(t, vals))
		w := exampleWant(t, vals)
		if got := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; got != c.want {
			t.Errorf("%s: terminationGracePeriodSeconds = %d, want %d", c.vals, got, c.want)
		}
		sb := switchboardContainer(t, &d.Spec.Template.Spec, false)
		if w.preStop == 0 && strings.Contains(c.vals, "preStopSleepSeconds: 0") {
			if sb.Lifecycle != nil {
				t.Errorf("%s: lifecycle %+v, want none", c.vals, sb.Lifecycle)
			}
			continue
		}
		checkPod(t, &d.Spec.Template.Spec, w)
	}
}

func TestSecretsAndVault(t *testing.T) {
	r := render(t, parseValues(t, `
secretMounts:
  - {name: creds, secretName: mcp-creds, mountPath: /var/run/secrets/mcp}
  - {name: other, secretName: other, mountPath: /var/run/secrets/other, optional: true, items: [{key: a, path: a}]}
env:
  - name: TICKETS_KEY
    valueFrom: {secretKeyRef: {name: mcp-creds, key: tickets}}
vault:
  enabled: true
  address: https://vault.vault.svc:8200
  role: switchboard
  namespace: team-a
  caSecret: {name: vault-ca}
config:
  mcpServers:
    gh:
      command: npx
      args: ["-y", "@modelcontextprotocol/server-github"]
      env: {GITHUB_PERSONAL_ACCESS_TOKEN: "secret://file/var/run/secrets/mcp/github"}
    tickets:
      url: https://tickets.example.com/mcp
      headers: {X-Api-Key: "secret://env/TICKETS_KEY"}
    db:
      command: db-mcp
      env: {DB_PASSWORD: "secret://vault/secret/db#password"}
`))
	none(t, r, "Secret")
	d := deployment(t, r)
	spec := &d.Spec.Template.Spec
	sb := checkPod(t, spec, podWant{mode: "sidecar"})
	cfg, text := configOf(t, r, "")
	checkNoLiteralCredentials(t, "vault values", cfg, "config")
	if !strings.Contains(text, "secret://file/var/run/secrets/mcp/github") {
		t.Errorf("config lost its reference:\n%s", text)
	}

	if v := volume(spec, "creds"); v == nil || v.Secret == nil || v.Secret.SecretName != "mcp-creds" {
		t.Errorf("secret volume creds = %+v", v)
	}
	if v := volume(spec, "other"); v == nil || v.Secret.Optional == nil || !*v.Secret.Optional || len(v.Secret.Items) != 1 {
		t.Errorf("secret volume other = %+v", v)
	}
	mounted := false
	for _, m := range sb.VolumeMounts {
		if m.Name == "creds" && m.MountPath == "/var/run/secrets/mcp" && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("Secret creds not mounted read-only at /var/run/secrets/mcp: %+v", sb.VolumeMounts)
	}
	for name, want := range map[string]string{
		"VAULT_ADDR":      "https://vault.vault.svc:8200",
		"VAULT_K8S_ROLE":  "switchboard",
		"VAULT_K8S_MOUNT": "kubernetes",
		"VAULT_NAMESPACE": "team-a",
		"VAULT_CACERT":    "/var/run/secrets/switchboard/vault-ca/ca.crt",
	} {
		if got, _ := envValue(sb, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, ok := envValue(sb, "VAULT_K8S_TOKEN_PATH"); ok {
		t.Errorf("VAULT_K8S_TOKEN_PATH set without tokenAudience")
	}
	found := false
	for _, e := range sb.Env {
		if e.Name == "TICKETS_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "mcp-creds" {
			found = true
		}
	}
	if !found {
		t.Errorf("env TICKETS_KEY from the Secret missing: %+v", sb.Env)
	}
	// The Kubernetes auth login reads the automounted token.
	if a := spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Errorf("automountServiceAccountToken = %v, want true with Vault", a)
	}
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount automount = %v", sa.AutomountServiceAccountToken)
	}

	// With an audience: a projected token, and no automount.
	r = render(t, parseValues(t, `{vault: {enabled: true, address: "http://v:8200", role: r, tokenAudience: vault}}`))
	d = deployment(t, r)
	spec = &d.Spec.Template.Spec
	sb = checkPod(t, spec, podWant{mode: "sidecar"})
	if p, _ := envValue(sb, "VAULT_K8S_TOKEN_PATH"); p != "/var/run/secrets/switchboard/vault-token/token" {
		t.Errorf("VAULT_K8S_TOKEN_PATH = %q", p)
	}
	v := volume(spec, "switchboard-vault-token")
	if v == nil || v.Projected == nil || v.Projected.Sources[0].ServiceAccountToken.Audience != "vault" {
		t.Errorf("projected token volume = %+v", v)
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken = %v, want false with a projected token", a)
	}
}

func TestCloudIdentity(t *testing.T) {
	r := render(t, parseValues(t, `
serviceAccount: {annotations: {team: a}}
cloud:
  gcp: {serviceAccount: sb@p.iam.gserviceaccount.com, project: p}
  aws: {roleArn: "arn:aws:iam::123456789012:role/sb", region: eu-west-1}
`))
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	want := map[string]string{
		"team":                           "a",
		"iam.gke.io/gcp-service-account": "sb@p.iam.gserviceaccount.com",
		"eks.amazonaws.com/role-arn":     "arn:aws:iam::123456789012:role/sb",
	}
	if !reflect.DeepEqual(sa.Annotations, want) {
		t.Errorf("ServiceAccount annotations = %v, want %v", sa.Annotations, want)
	}
	sb := switchboardContainer(t, &deployment(t, r).Spec.Template.Spec, false)
	if p, _ := envValue(sb, "GOOGLE_CLOUD_PROJECT"); p != "p" {
		t.Errorf("GOOGLE_CLOUD_PROJECT = %q", p)
	}
	if p, _ := envValue(sb, "AWS_REGION"); p != "eu-west-1" {
		t.Errorf("AWS_REGION = %q", p)
	}

	// An existing ServiceAccount: none rendered, the pod uses it.
	r = render(t, parseValues(t, `{serviceAccount: {create: false, name: app-sa}}`))
	none(t, r, "ServiceAccount")
	if n := deployment(t, r).Spec.Template.Spec.ServiceAccountName; n != "app-sa" {
		t.Errorf("serviceAccountName = %q", n)
	}
}

func TestNamesAndImage(t *testing.T) {
	r := render(t, parseValues(t, `{fullnameOverride: edge, image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}`))
	d := deployment(t, r)
	if d.Name != "edge" || one[*corev1.ConfigMap](t, r, "ConfigMap").Name != "edge-config" {
		t.Errorf("names = %v", kinds(r))
	}
	sb := switchboardContainer(t, &d.Spec.Template.Spec, false)
	if !strings.HasSuffix(sb.Image, "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") {
		t.Errorf("image = %s, want the digest", sb.Image)
	}
	// A release name that already says switchboard is not repeated.
	ch := loadChart(t, chartDir)
	cfgRel, err := renderChart(ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deployment(t, cfgRel).Name != "demo-switchboard" {
		t.Errorf("name = %s", deployment(t, cfgRel).Name)
	}
}

func TestListenOverrides(t *testing.T) {
	d := deployment(t, render(t, parseValues(t, `{listenHost: 0.0.0.0, adminListenHost: "[::]", ports: {mcp: 9000, admin: 9001}, app: {image: {repository: a}}}`)))
	spec := &d.Spec.Template.Spec
	sb := switchboardContainer(t, spec, false)
	if l, _ := envValue(sb, "SWITCHBOARD_LISTEN"); l != "0.0.0.0:9000" {
		t.Errorf("SWITCHBOARD_LISTEN = %q", l)
	}
	if l, _ := envValue(sb, "SWITCHBOARD_ADMIN_LISTEN"); l != "[::]:9001" {
		t.Errorf("SWITCHBOARD_ADMIN_LISTEN = %q", l)
	}
	if u, _ := envValue(container(spec.Containers, "app"), "MCP_SERVER_URL"); u != "http://127.0.0.1:9000/mcp" {
		t.Errorf("MCP_SERVER_URL = %q", u)
	}
}

// TestGoMaxProcsFromCPULimit: the switchboard container gets GOMAXPROCS from
// its CPU limit through the downward API, before the user's env, unless it
// is turned off, there is no CPU limit, or env sets GOMAXPROCS itself.
func TestGoMaxProcsFromCPULimit(t *testing.T) {
	fromLimit := corev1.EnvVar{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{
		ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: "switchboard",
			Resource:      "limits.cpu",
			Divisor:       resource.MustParse("1"),
		},
	}}
	userA := corev1.EnvVar{Name: "A", Value: "b"}
	user4 := corev1.EnvVar{Name: "GOMAXPROCS", Value: "4"}
	// goMaxProcsEnv returns the entries of GOMAXPROCS and A, in order.
	goMaxProcsEnv := func(sb *corev1.Container) []corev1.EnvVar {
		var out []corev1.EnvVar
		for _, e := range sb.Env {
			if e.Name == "GOMAXPROCS" || e.Name == "A" {
				out = append(out, e)
			}
		}
		return out
	}
	for _, c := range []struct {
		vals   string
		native bool
		want   []corev1.EnvVar
	}{
		{`{}`, false, []corev1.EnvVar{fromLimit}},
		{`{mode: gateway}`, false, []corev1.EnvVar{fromLimit}},
		{`{nativeSidecar: true, app: {image: {repository: acme/web}}}`, true, []corev1.EnvVar{fromLimit}},
		{`{mode: gateway, resources: {limits: {cpu: 2500m}}}`, false, []corev1.EnvVar{fromLimit}},
		{`{env: [{name: A, value: b}]}`, false, []corev1.EnvVar{fromLimit, userA}},
		{`{goMaxProcsFromCPULimit: false}`, false, nil},
		{`{mode: gateway, goMaxProcsFromCPULimit: false}`, false, nil},
		// Helm merges maps, so a null removes the default CPU limit.
		{`{resources: {limits: {cpu: null, memory: 512Mi}}}`, false, nil},
		{`{mode: gateway, resources: null}`, false, nil},
		{`{env: [{name: GOMAXPROCS, value: "4"}]}`, false, []corev1.EnvVar{user4}},
		{`{mode: gateway, env: [{name: A, value: b}, {name: GOMAXPROCS, value: "4"}]}`, false, []corev1.EnvVar{userA, user4}},
	} {
		d := deployment(t, render(t, parseValues(t, c.vals)))
		sb := switchboardContainer(t, &d.Spec.Template.Spec, c.native)
		if got := goMaxProcsEnv(sb); !equality.Semantic.DeepEqual(got, c.want) {
			t.Errorf("%s: GOMAXPROCS and A entries = %+v, want %+v", c.vals, got, c.want)
		}
	}

	// The named template does the same in another chart's pod.
	sb := switchboardContainer(t, &deployment(t, renderEmbed(t, nil)).Spec.Template.Spec, false)
	if got, want := goMaxProcsEnv(sb), []corev1.EnvVar{fromLimit}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("embed chart: GOMAXPROCS entries = %+v, want %+v", got, want)
	}
}

// TestProbesOff: each probe can be turned off on its own.
func TestProbesOff(t *testing.T) {
	d := deployment(t, render(t, parseValues(t, `{probes: {startup: {enabled: false}, readiness: {enabled: false}}}`)))
	sb := switchboardContainer(t, &d.Spec.Template.Spec, false)
	if sb.StartupProbe != nil || sb.ReadinessProbe != nil || sb.LivenessProbe == nil {
		t.Errorf("probes = startup %v readiness %v liveness %v", sb.StartupProbe, sb.ReadinessProbe, sb.LivenessProbe)
	}
}

// TestSidecarKeepsAppName: in sidecar mode the Deployment is named after the
// release (<release>-switchboard); fullnameOverride keeps the app's own
// Deployment name, and podLabels keep the app's existing Service selecting
// its pods (docs/kubernetes.md).
func TestSidecarKeepsAppName(t *testing.T) {
	r := render(t, parseValues(t, `
fullnameOverride: orders
podLabels: {app: orders}
app: {name: orders, image: {repository: acme/orders-agent}, ports: [{name: http, containerPort: 8080}]}
`))
	d := deployment(t, r)
	if d.Name != "orders" {
		t.Errorf("Deployment %s, want orders", d.Name)
	}
	if d.Spec.Template.Labels["app"] != "orders" {
		t.Errorf("pod labels %v lack app=orders", d.Spec.Template.Labels)
	}
	if got := containerNames(d.Spec.Template.Spec.Containers); strings.Join(got, ",") != "orders,switchboard" {
		t.Errorf("containers %v", got)
	}
	if svc := one[*corev1.Service](t, r, "Service"); svc.Name != "orders" {
		t.Errorf("Service %s, want orders", svc.Name)
	}
}
