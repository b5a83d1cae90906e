package test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// podWant is what checkPod expects of a pod that runs switchboard.
type podWant struct {
	mode       string // sidecar, gateway or embedded
	app        string // the app container's name; "" when the pod holds switchboard alone
	native     bool   // switchboard is a native sidecar (an init container)
	configKey  string // default config.yaml
	preStop    int    // seconds; default 5
	shutdownMS int    // config.shutdownTimeout; default 10000
	// sessionSecret is the Secret of sessionKey.existingSecret ("" for
	// none), sessionSecretKey its key (default session-key).
	sessionSecret    string
	sessionSecretKey string
}

// switchboardContainer finds the switchboard container, in containers or
// (as a native sidecar) in initContainers.
func switchboardContainer(t testing.TB, spec *corev1.PodSpec, native bool) *corev1.Container {
	t.Helper()
	inInit, inMain := container(spec.InitContainers, "switchboard"), container(spec.Containers, "switchboard")
	switch {
	case native && inInit == nil:
		t.Fatalf("native sidecar: no switchboard init container")
	case native && inMain != nil:
		t.Fatalf("native sidecar: switchboard is also a regular container")
	case !native && inMain == nil:
		t.Fatalf("no switchboard container (containers: %v)", containerNames(spec.Containers))
	case !native && inInit != nil:
		t.Fatalf("switchboard is an init container without nativeSidecar")
	}
	if native {
		if inInit.RestartPolicy == nil || *inInit.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("native sidecar: restartPolicy = %v, want Always", inInit.RestartPolicy)
		}
		return inInit
	}
	if inMain.RestartPolicy != nil {
		t.Errorf("regular container has restartPolicy %v", *inMain.RestartPolicy)
	}
	return inMain
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// checkPod asserts everything the chart promises about a pod that runs
// switchboard: containers, listeners, probes on the admin port, security
// context, the config directory mount, writable directories, shutdown.
func checkPod(t testing.TB, spec *corev1.PodSpec, w podWant) *corev1.Container {
	t.Helper()
	if w.configKey == "" {
		w.configKey = "config.yaml"
	}
	if w.preStop == 0 {
		w.preStop = 5
	}
	if w.shutdownMS == 0 {
		w.shutdownMS = 10000
	}
	sb := switchboardContainer(t, spec, w.native)

	// Containers: the app beside switchboard, nothing else.
	want := []string{"switchboard"}
	if w.app != "" {
		want = []string{w.app}
		if !w.native {
			want = append(want, "switchboard")
		}
		if container(spec.Containers, w.app) == nil {
			t.Errorf("no app container %q (containers: %v)", w.app, containerNames(spec.Containers))
		}
	}
	if got := containerNames(spec.Containers); !slices.Equal(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}

	// Command line: serve with the config file inside the mounted directory.
	wantArgs := []string{"serve", "--config", "/etc/switchboard/" + w.configKey}
	if len(sb.Args) < 3 || !slices.Equal(sb.Args[:3], wantArgs) {
		t.Errorf("args = %q, want prefix %q", sb.Args, wantArgs)
	}
	if len(sb.Command) != 0 {
		t.Errorf("command = %q; the image's entrypoint is switchboard", sb.Command)
	}

	// Listeners: MCP on loopback in a sidecar, every interface in a gateway;
	// admin reachable by the kubelet.
	listen, ok := envValue(sb, "SWITCHBOARD_LISTEN")
	if !ok {
		t.Fatalf("SWITCHBOARD_LISTEN not set")
	}
	admin, ok := envValue(sb, "SWITCHBOARD_ADMIN_LISTEN")
	if !ok {
		t.Fatalf("SWITCHBOARD_ADMIN_LISTEN not set")
	}
	lh, lp, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("SWITCHBOARD_LISTEN %q: %v", listen, err)
	}
	ah, ap, err := net.SplitHostPort(admin)
	if err != nil {
		t.Fatalf("SWITCHBOARD_ADMIN_LISTEN %q: %v", admin, err)
	}
	wantHost := "127.0.0.1"
	if w.mode == "gateway" {
		wantHost = "0.0.0.0"
	}
	if lh != wantHost {
		t.Errorf("MCP listener binds %q in %s mode, want %q", lh, w.mode, wantHost)
	}
	if ip := net.ParseIP(ah); ah == "localhost" || (ip != nil && ip.IsLoopback()) {
		t.Errorf("admin listener binds loopback %q: the kubelet cannot probe it", ah)
	}

	// A gateway pod's name prefixes its session IDs; no other pod gets one.
	if w.mode == "gateway" {
		// The apiserver stores the fieldRef with apiVersion v1.
		e := envEntry(sb, "SWITCHBOARD_REPLICA")
		if e == nil || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Errorf("gateway pod: SWITCHBOARD_REPLICA = %+v, want the pod's metadata.name", e)
		}
	} else {
		checkEnv(t, w.mode+" pod", sb, corev1.EnvVar{Name: "SWITCHBOARD_REPLICA"})
	}
	// The session key comes from sessionKey.existingSecret, or not at all.
	if w.sessionSecret != "" {
		key := w.sessionSecretKey
		if key == "" {
			key = "session-key"
		}
		checkEnv(t, "session key", sb, sessionKeyEnv(w.sessionSecret, key))
	} else {
		checkEnv(t, "no session key", sb, corev1.EnvVar{Name: "SWITCHBOARD_SESSION_KEY"})
	}

	// Ports named mcp and admin, matching the listeners.
	ports := map[string]int32{}
	for _, p := range sb.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if fmt.Sprint(ports["mcp"]) != lp || fmt.Sprint(ports["admin"]) != ap {
		t.Errorf("container ports %v do not match listen %s and admin %s", ports, listen, admin)
	}

	// Probes: all on the admin port, by name.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"startupProbe", sb.StartupProbe, "/healthz"},
		{"livenessProbe", sb.LivenessProbe, "/healthz"},
		{"readinessProbe", sb.ReadinessProbe, "/readyz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: missing or not httpGet", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: path %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if p.probe.HTTPGet.Port.String() != "admin" {
			t.Errorf("%s: port %q, want the named port admin", p.name, p.probe.HTTPGet.Port.String())
		}
	}

	// Security context.
	sc := sb.SecurityContext
	if sc == nil {
		t.Fatalf("switchboard has no securityContext")
	}
	switch {
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("runAsNonRoot not true")
	case sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("runAsUser not a non-root UID")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("readOnlyRootFilesystem not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("allowPrivilegeEscalation not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("capabilities = %+v, want drop [ALL]", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("seccompProfile = %+v, want RuntimeDefault", sc.SeccompProfile)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("privileged")
	}

	// Resources.
	if len(sb.Resources.Requests) == 0 || len(sb.Resources.Limits) == 0 {
		t.Errorf("resources = %+v, want requests and limits", sb.Resources)
	}

	// Mounts: no subPath anywhere (subPath copies never update); the config
	// ConfigMap as a read-only directory; writable /tmp and $HOME.
	vols := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if vols[v.Name] != nil {
			t.Errorf("volume %q defined twice", v.Name)
		}
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range sb.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			t.Errorf("mount %s at %s uses subPath %q%q", m.Name, m.MountPath, m.SubPath, m.SubPathExpr)
		}
		if vols[m.Name] == nil {
			t.Errorf("mount %s: no such volume", m.Name)
		}
		mounts[m.MountPath] = m
	}
	cfg, ok := mounts["/etc/switchboard"]
	switch {
	case !ok:
		t.Errorf("no mount at /etc/switchboard (mounts: %v)", sb.VolumeMounts)
	case !cfg.ReadOnly:
		t.Errorf("config mount is not read-only")
	case vols[cfg.Name] == nil || vols[cfg.Name].ConfigMap == nil:
		t.Errorf("config mount %s is not a ConfigMap volume", cfg.Name)
	case len(vols[cfg.Name].ConfigMap.Items) != 0:
		t.Errorf("config ConfigMap volume selects items %v; mount the whole ConfigMap", vols[cfg.Name].ConfigMap.Items)
	}
	home, _ := envValue(sb, "HOME")
	for _, dir := range []string{"/tmp", home} {
		m, ok := mounts[dir]
		if !ok || dir == "" {
			t.Errorf("no writable mount at %q (HOME=%q)", dir, home)
			continue
		}
		if m.ReadOnly || vols[m.Name] == nil || vols[m.Name].EmptyDir == nil {
			t.Errorf("mount at %s is not a writable emptyDir", dir)
		}
	}
	if tmp, _ := envValue(sb, "TMPDIR"); tmp != "/tmp" {
		t.Errorf("TMPDIR = %q, want /tmp", tmp)
	}
	if w.app != "" {
		for _, m := range container(spec.Containers, w.app).VolumeMounts {
			if m.SubPath != "" {
				t.Errorf("app mount %s uses subPath", m.Name)
			}
		}
	}

	// Shutdown: preStop sleep, then a grace period that covers the sleep and
	// switchboard's own shutdown timeout.
	if sb.Lifecycle == nil || sb.Lifecycle.PreStop == nil || sb.Lifecycle.PreStop.Sleep == nil {
		t.Errorf("no preStop sleep")
	} else if got := sb.Lifecycle.PreStop.Sleep.Seconds; got != int64(w.preStop) {
		t.Errorf("preStop sleep %d s, want %d", got, w.preStop)
	}
	if spec.TerminationGracePeriodSeconds == nil {
		t.Errorf("terminationGracePeriodSeconds not set")
	} else if g, min := *spec.TerminationGracePeriodSeconds, int64(w.preStop+(w.shutdownMS+999)/1000); g < min {
		t.Errorf("terminationGracePeriodSeconds %d < preStop %d s + shutdownTimeout %d ms", g, w.preStop, w.shutdownMS)
	}
	return sb
}

// deployment returns the one Deployment of a render.
func deployment(t testing.TB, r *rendered) *appsv1.Deployment {
	t.Helper()
	return one[*appsv1.Deployment](t, r, "Deployment")
}

// configOf returns the config file a render's ConfigMap holds (the one the
// pod mounts), parsed.
func configOf(t testing.TB, r *rendered, key string) (map[string]any, string) {
	t.Helper()
	if key == "" {
		key = "config.yaml"
	}
	cm := one[*corev1.ConfigMap](t, r, "ConfigMap")
	text, ok := cm.Data[key]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %q (keys: %v)", cm.Name, key, mapKeys(cm.Data))
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("ConfigMap %s: config is not YAML: %v", cm.Name, err)
	}
	return m, text
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkConfigVolume asserts that the pod mounts the ConfigMap the render
// contains.
func checkConfigVolume(t testing.TB, r *rendered, spec *corev1.PodSpec) {
	t.Helper()
	cm := one[*corev1.ConfigMap](t, r, "ConfigMap")
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			return
		}
	}
	t.Errorf("no volume of ConfigMap %s", cm.Name)
}

// credentialKey reports whether a config key names a credential (the same
// words switchboard warns about).
func credentialKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "secret", "token", "key", "credential", "auth"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// checkNoLiteralCredentials walks a config and fails on a credential-looking
// key whose value holds no secret:// reference.
func checkNoLiteralCredentials(t testing.TB, where string, v any, path string) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			p := path + "." + k
			if s, ok := val.(string); ok && credentialKey(k) && !strings.Contains(s, "secret://") {
				t.Errorf("%s: %s holds a literal value; use a secret:// reference", where, p)
			}
			if list, ok := val.([]any); ok && credentialKey(k) {
				for i, e := range list {
					if s, ok := e.(string); ok && !strings.Contains(s, "secret://") {
						t.Errorf("%s: %s[%d] holds a literal value; use a secret:// reference", where, p, i)
					}
				}
			}
			checkNoLiteralCredentials(t, where, val, p)
		}
	case []any:
		for i, e := range v {
			checkNoLiteralCredentials(t, where, e, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}
