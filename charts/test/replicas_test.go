package test

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// sessionKeyRef is the reference the chart writes into the config for
// sessionKey.existingSecret.
const sessionKeyRef = "secret://env/SWITCHBOARD_SESSION_KEY"

// replicaEnv is SWITCHBOARD_REPLICA as every gateway pod gets it: the pod's
// name, a DNS label.
var replicaEnv = corev1.EnvVar{Name: "SWITCHBOARD_REPLICA", ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
}}

// sessionKeyEnv is SWITCHBOARD_SESSION_KEY read from key of Secret name.
func sessionKeyEnv(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: "SWITCHBOARD_SESSION_KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key},
	}}
}

// envEntry returns the container's entry for name, or nil.
func envEntry(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// checkEnv fails unless the container's entry for want.Name equals want
// (or, with want.Value and want.ValueFrom empty, unless there is none).
func checkEnv(t testing.TB, where string, c *corev1.Container, want corev1.EnvVar) {
	t.Helper()
	got := envEntry(c, want.Name)
	switch {
	case want.Value == "" && want.ValueFrom == nil:
		if got != nil {
			t.Errorf("%s: %s = %+v, want none", where, want.Name, got)
		}
	case got == nil:
		t.Errorf("%s: no %s (env %+v)", where, want.Name, c.Env)
	case !equality.Semantic.DeepEqual(*got, want):
		t.Errorf("%s: %s = %+v, want %+v", where, want.Name, *got, want)
	}
}

// TestGatewayReplicas: gateway mode with several replicas (fixed or
// autoscaled) renders the PodDisruptionBudget and HorizontalPodAutoscaler,
// gives every pod its name as SWITCHBOARD_REPLICA and the session key from
// the Secret, and points the config's sessionKey and requestStateKey at it.
func TestGatewayReplicas(t *testing.T) {
	for _, c := range []struct {
		name      string
		vals      string
		replicas  int32 // 0: scaled by the HPA
		secretKey string
	}{
		{"replicas 3", `{mode: gateway, replicaCount: 3, podDisruptionBudget: {enabled: true}, sessionKey: {existingSecret: mcp-session-key}}`, 3, "session-key"},
		{"autoscaling", `{mode: gateway, autoscaling: {enabled: true, maxReplicas: 6}, podDisruptionBudget: {enabled: true}, sessionKey: {existingSecret: mcp-session-key, secretKey: key}}`, 0, "key"},
		{"replicas 3 and autoscaling", `{mode: gateway, replicaCount: 3, autoscaling: {enabled: true}, podDisruptionBudget: {enabled: true}, sessionKey: {existingSecret: mcp-session-key}}`, 0, "session-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, parseValues(t, c.vals))
			d := deployment(t, r)
			sb := checkPod(t, &d.Spec.Template.Spec, podWant{mode: "gateway", sessionSecret: "mcp-session-key", sessionSecretKey: c.secretKey})
			checkEnv(t, c.name, sb, replicaEnv)
			checkEnv(t, c.name, sb, sessionKeyEnv("mcp-session-key", c.secretKey))
			// The chart reads the Secret; it never renders one.
			none(t, r, "Secret")

			cfg, _ := configOf(t, r, "")
			if cfg["sessionKey"] != sessionKeyRef || cfg["requestStateKey"] != sessionKeyRef {
				t.Errorf("config sessionKey %v, requestStateKey %v, want %s", cfg["sessionKey"], cfg["requestStateKey"], sessionKeyRef)
			}
			checkNoLiteralCredentials(t, c.name, cfg, "config")

			pdb := one[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget")
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !equality.Semantic.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
				t.Errorf("PDB = %+v", pdb.Spec)
			}
			if c.replicas == 0 {
				if d.Spec.Replicas != nil {
					t.Errorf("replicas %d set although the HPA scales the Deployment", *d.Spec.Replicas)
				}
				hpa := one[*autoscalingv2.HorizontalPodAutoscaler](t, r, "HorizontalPodAutoscaler")
				if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != d.Name {
					t.Errorf("HPA targets %+v, want Deployment %s", hpa.Spec.ScaleTargetRef, d.Name)
				}
			} else {
				if d.Spec.Replicas == nil || *d.Spec.Replicas != c.replicas {
					t.Errorf("replicas = %v, want %d", d.Spec.Replicas, c.replicas)
				}
				none(t, r, "HorizontalPodAutoscaler")
			}
			if !strings.Contains(r.Notes, "The replicas share a session key") {
				t.Errorf("NOTES on sessions:\n%s", r.Notes)
			}
		})
	}

	// The config's own keys win; the chart fills in only the missing one.
	r := render(t, parseValues(t, `{mode: gateway, replicaCount: 2, sessionKey: {existingSecret: s}, config: {sessionKey: "secret://vault/kv/switchboard#session"}}`))
	cfg, _ := configOf(t, r, "")
	if cfg["sessionKey"] != "secret://vault/kv/switchboard#session" || cfg["requestStateKey"] != sessionKeyRef {
		t.Errorf("config sessionKey %v, requestStateKey %v: want the config's own sessionKey and the chart's requestStateKey", cfg["sessionKey"], cfg["requestStateKey"])
	}

	// Both keys in the config are a shared key too: no Secret needed.
	r = render(t, parseValues(t, `{mode: gateway, replicaCount: 2, config: {sessionKey: "secret://gcp/sb-session", requestStateKey: "secret://gcp/sb-session"}}`))
	sb := checkPod(t, &deployment(t, r).Spec.Template.Spec, podWant{mode: "gateway"})
	checkEnv(t, "config keys", sb, corev1.EnvVar{Name: "SWITCHBOARD_SESSION_KEY"})
	if cfg, _ := configOf(t, r, ""); cfg["sessionKey"] != "secret://gcp/sb-session" || cfg["requestStateKey"] != "secret://gcp/sb-session" {
		t.Errorf("config keys = %v, %v", cfg["sessionKey"], cfg["requestStateKey"])
	}
}

// TestGatewayReplicasNeedSessionKey: gateway mode with more than one replica
// and no shared key fails to render, with a message that says what to set
// and why, unless sessionKey.required is false. One replica, sidecar and
// embedded mode need no key.
func TestGatewayReplicasNeedSessionKey(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, c := range []struct {
		vals string
		want []string // substrings of the error
	}{
		{`{mode: gateway, replicaCount: 3}`, []string{"replicaCount 3"}},
		{`{mode: gateway, autoscaling: {enabled: true}}`, []string{"autoscaling.enabled, up to 10 replicas"}},
		{`{mode: gateway, replicaCount: 2, sessionKey: {secretKey: k}}`, []string{`whose key "k"`, "--from-literal=k="}},
		// Both keys are needed: 2026-07-28 request states cross replicas too.
		{`{mode: gateway, replicaCount: 2, config: {sessionKey: "secret://env/K"}}`, []string{"replicaCount 2"}},
		{`{mode: gateway, replicaCount: 2, config: {requestStateKey: "secret://env/K"}}`, []string{"replicaCount 2"}},
		// The chart cannot read an existing ConfigMap.
		{`{mode: gateway, replicaCount: 2, existingConfigMap: mine}`, []string{"existingConfigMap"}},
	} {
		_, err := renderChart(ch, parseValues(t, c.vals))
		if err == nil {
			t.Errorf("%s: rendered without a session key", c.vals)
			continue
		}
		for _, w := range append(c.want,
			"sessionKey.existingSecret", "at least 32 bytes", "no replica can resume another's sessions",
			"does not survive the loss of its pod", "config.sessionKey and config.requestStateKey",
			sessionKeyRef, "sessionKey.required=false", "namespace apps") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.vals, w, err)
			}
		}
	}

	for _, c := range []struct {
		name       string
		vals       string
		native     bool
		mode       string
		replica    bool   // SWITCHBOARD_REPLICA set
		secret     string // SWITCHBOARD_SESSION_KEY from this Secret
		configKeys bool   // the config holds the chart's references
	}{
		{"one gateway replica", `{mode: gateway}`, false, "gateway", true, "", false},
		{"opted out", `{mode: gateway, replicaCount: 3, sessionKey: {required: false}}`, false, "gateway", true, "", false},
		{"opted out, autoscaling", `{mode: gateway, autoscaling: {enabled: true}, sessionKey: {required: false}}`, false, "gateway", true, "", false},
		{"existingConfigMap with the Secret", `{mode: gateway, replicaCount: 2, existingConfigMap: mine, sessionKey: {existingSecret: s}}`, false, "gateway", true, "s", false},
		{"sidecar replicas", `{replicaCount: 3, autoscaling: {enabled: true}}`, false, "sidecar", false, "", false},
		{"sidecar with the Secret", `{replicaCount: 3, sessionKey: {existingSecret: s}, app: {image: {repository: acme/web}}}`, false, "sidecar", false, "s", true},
		{"native sidecar with the Secret", `{nativeSidecar: true, sessionKey: {existingSecret: s}, app: {image: {repository: acme/web}}}`, true, "sidecar", false, "s", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := renderChart(ch, parseValues(t, c.vals))
			if err != nil {
				t.Fatalf("%s: %v", c.vals, err)
			}
			w := podWant{mode: c.mode, sessionSecret: c.secret, native: c.native}
			if c.mode == "sidecar" && strings.Contains(c.vals, "repository") {
				w.app = "app"
			}
			if strings.Contains(c.vals, "existingConfigMap") {
				none(t, r, "ConfigMap")
				checkPod(t, &deployment(t, r).Spec.Template.Spec, w)
				return
			}
			sb := checkPod(t, &deployment(t, r).Spec.Template.Spec, w)
			if !c.replica {
				checkEnv(t, c.name, sb, corev1.EnvVar{Name: "SWITCHBOARD_REPLICA"})
			}
			cfg, _ := configOf(t, r, "")
			for _, k := range []string{"sessionKey", "requestStateKey"} {
				if got, set := cfg[k]; set != c.configKeys || (set && got != sessionKeyRef) {
					t.Errorf("config %s = %v (set %v), want set %v", k, got, set, c.configKeys)
				}
			}
			if c.mode == "gateway" && !c.configKeys {
				if !strings.Contains(r.Notes, "No session key is shared") {
					t.Errorf("NOTES do not say the key is not shared:\n%s", r.Notes)
				}
			}
		})
	}

	// A chart that embeds switchboard gets the same container and config.
	r := renderEmbed(t, parseValues(t, `{switchboard: {sessionKey: {existingSecret: shop-session-key}}}`))
	sb := checkPod(t, &deployment(t, r).Spec.Template.Spec, podWant{mode: "embedded", app: "orders", sessionSecret: "shop-session-key"})
	checkEnv(t, "embed chart", sb, corev1.EnvVar{Name: "SWITCHBOARD_REPLICA"})
	if cfg, _ := configOf(t, r, ""); cfg["sessionKey"] != sessionKeyRef || cfg["requestStateKey"] != sessionKeyRef {
		t.Errorf("embed chart config keys = %v, %v", cfg["sessionKey"], cfg["requestStateKey"])
	}
}

// TestIngressSessionRouting: with an nginx class, the Ingress hashes on the
// Mcp-Session-Id header, unless turned off or the annotations choose their
// own key; other classes get nothing.
func TestIngressSessionRouting(t *testing.T) {
	const hashBy = "nginx.ingress.kubernetes.io/upstream-hash-by"
	for _, c := range []struct {
		ingress string
		want    map[string]string
	}{
		{`{className: nginx, sessionRouting: true}`, map[string]string{hashBy: "$mcp_session_hash"}},
		{`{className: nginx-internal, sessionRouting: true, annotations: {a: b}}`, map[string]string{hashBy: "$mcp_session_hash", "a": "b"}},
		{`{className: nginx, sessionRouting: true, annotations: {` + hashBy + `: "$mcp_route"}}`, map[string]string{hashBy: "$mcp_route"}},
		{`{className: nginx}`, nil},
		{`{className: ""}`, nil},
		{`{className: traefik, annotations: {a: b}}`, map[string]string{"a": "b"}},
	} {
		vals := `{mode: gateway, ingress: {enabled: true, hosts: [{host: mcp.example.com}], ` + strings.TrimSuffix(strings.TrimPrefix(c.ingress, "{"), "}") + `}}`
		r := render(t, parseValues(t, vals))
		ing := one[*networkingv1.Ingress](t, r, "Ingress")
		if !equality.Semantic.DeepEqual(ing.Annotations, c.want) && !(len(ing.Annotations) == 0 && len(c.want) == 0) {
			t.Errorf("%s: annotations %v, want %v", c.ingress, ing.Annotations, c.want)
		}
		_, hashed := c.want[hashBy]
		if got := strings.Contains(r.Notes, "(upstream-hash-by)"); got != hashed {
			t.Errorf("%s: NOTES mention the hash: %v, want %v\n%s", c.ingress, got, hashed, r.Notes)
		}
	}
	// values.yaml leaves it off: it needs the controller's http-snippet.
	ing := loadChart(t, chartDir).Values["ingress"].(map[string]any)
	if ing["sessionRouting"] != false {
		t.Errorf("ingress.sessionRouting defaults to %v", ing["sessionRouting"])
	}
}
