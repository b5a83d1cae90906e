//go:build linux

package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// The versions .ci/tools/kube.sh builds.
const kubeToolDir = "kube-1.36.3-etcd-3.6.8"

// cluster is an etcd and a kube-apiserver started by this test: no kubelet,
// no controllers, so objects are stored and validated but pods never run.
type cluster struct {
	config     *rest.Config
	kubeconfig string
	client     *kubernetes.Clientset
	dynamic    dynamic.Interface
	mapper     meta.RESTMapper
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process this test started; stop ends exactly it.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func start(t testing.TB, dir, name, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test binary dies, so does the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	return p
}

// stop sends SIGTERM to the process and SIGKILL after a grace period.
func (p *proc) stop(t testing.TB, grace time.Duration) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		t.Logf("%s (pid %d) ignored SIGTERM for %s; killing it", p.name, p.cmd.Process.Pid, grace)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the end of the process's log.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitFor polls ok until it returns true, the process exits or the
// deadline passes.
func waitFor(t testing.TB, p *proc, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited: %v\n%s", p.name, err, p.tail())
		default:
		}
		if ok() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %s\n%s", p.name, timeout, p.tail())
}

// writePEM writes one PEM block.
func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// selfSigned writes a self-signed serving certificate for 127.0.0.1 and
// returns it PEM-encoded (clients trust it as their CA).
func selfSigned(t testing.TB, certPath, keyPath string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "EC PRIVATE KEY", kder)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// startCluster starts etcd and kube-apiserver on 127.0.0.1 with free ports.
// Cleanup stops the apiserver, then etcd.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	apiserverBin := tool(t, filepath.Join(kubeToolDir, "kube-apiserver"), "kube.sh")
	etcdBin := tool(t, filepath.Join(kubeToolDir, "etcd"), "kube.sh")
	dir := t.TempDir()

	// etcd.
	clientPort, peerPort := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := start(t, dir, "etcd", etcdBin,
		"--name=test",
		"--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	t.Cleanup(func() { etcd.stop(t, 10*time.Second) })
	waitFor(t, etcd, 60*time.Second, func() bool {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// Credentials: a serving certificate, a ServiceAccount signing key, a
	// static token.
	caPEM := selfSigned(t, filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"))
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	saDER, _ := x509.MarshalECPrivateKey(saKey)
	saPub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	writePEM(t, filepath.Join(dir, "sa.key"), "EC PRIVATE KEY", saDER)
	writePEM(t, filepath.Join(dir, "sa.pub"), "PUBLIC KEY", saPub)
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	apiserver := start(t, dir, "kube-apiserver", apiserverBin,
		"--etcd-servers="+clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file="+filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(dir, "serving.key"),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=0",
	)
	// Registered after etcd's, so it runs first: the apiserver stops before
	// its storage.
	t.Cleanup(func() { apiserver.stop(t, 20*time.Second) })

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	waitFor(t, apiserver, 180*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	cfg := &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, QPS: 100, Burst: 200}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caPEM}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	return &cluster{config: cfg, kubeconfig: kubeconfig, client: client, dynamic: dyn, mapper: mapper}
}

func (c *cluster) createNamespace(t testing.TB, name string) {
	t.Helper()
	_, err := c.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// dryRun creates every object of a manifest with a server-side dry run and
// strict field validation: the apiserver's own validation of each object,
// and an error for any unknown or duplicated field. It returns the
// Deployments as the apiserver would store them (defaults filled in).
func (c *cluster) dryRun(t testing.TB, manifest string) []*appsv1.Deployment {
	t.Helper()
	objs, err := decodeManifests(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("nothing to create")
	}
	var deployments []*appsv1.Deployment
	for _, o := range objs {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(o.YAML), &u.Object); err != nil {
			t.Fatalf("%s: %v", o.Source, err)
		}
		gvk := u.GroupVersionKind()
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %s is not served: %v", o.Source, gvk, err)
			continue
		}
		var ri dynamic.ResourceInterface = c.dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := u.GetNamespace()
			if ns == "" {
				ns = namespace // helm install -n would put it there
			}
			ri = c.dynamic.Resource(m.Resource).Namespace(ns)
		}
		got, err := ri.Create(context.Background(), &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err != nil {
			t.Errorf("%s %s/%s: server-side dry run: %v", o.Source, o.Kind, o.Name, err)
			continue
		}
		if gvk.Kind == "Deployment" {
			d := new(appsv1.Deployment)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, d); err != nil {
				t.Fatalf("%s: %v", o.Name, err)
			}
			deployments = append(deployments, d)
		}
	}
	return deployments
}

// install installs a chart with the helm Go packages, storing the release
// in the cluster (the Secret driver, as the helm CLI does).
func (c *cluster) install(t testing.TB, ch *chart.Chart, name, ns string, vals map[string]any) *release.Release {
	t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(kube.GetConfig(c.kubeconfig, "", ns), ns, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName = name
	inst.Namespace = ns
	inst.CreateNamespace = true
	inst.Timeout = 2 * time.Minute
	rel, err := inst.Run(ch, vals)
	if err != nil {
		t.Fatalf("helm install %s: %v", name, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release %s is %s", name, rel.Info.Status)
	}
	return rel
}

func (c *cluster) upgrade(t testing.TB, ch *chart.Chart, name, ns string, vals map[string]any) {
	t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(kube.GetConfig(c.kubeconfig, "", ns), ns, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatal(err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = ns
	up.Timeout = 2 * time.Minute
	if _, err := up.Run(name, ch, vals); err != nil {
		t.Fatalf("helm upgrade %s: %v", name, err)
	}
}

// TestCluster installs the chart into a real kube-apiserver (built by
// .ci/tools/kube.sh) in both modes and as an embedded sidecar, reads the
// objects back, and has the apiserver validate every rendered manifest of
// the examples with a strict server-side dry run.
func TestCluster(t *testing.T) {
	if testing.Short() && !full() {
		t.Skip("-short")
	}
	c := startCluster(t)
	ctx := context.Background()
	v, err := c.client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
	c.createNamespace(t, namespace)

	t.Run("dry-run", func(t *testing.T) {
		for _, f := range exampleValuesFiles(t) {
			c.dryRun(t, render(t, readValues(t, f)).Manifest)
		}
		c.dryRun(t, renderEmbed(t, nil).Manifest)
		for _, vals := range []string{
			`{}`,
			`{nativeSidecar: true, app: {image: {repository: a}}}`,
			`{vault: {enabled: true, address: "http://v:8200", role: r, tokenAudience: vault, caSecret: {name: ca}}}`,
			`{mode: gateway, service: {exposeAdmin: true}, ingress: {enabled: true, hosts: [{host: a.example.com}]}, autoscaling: {enabled: true, targetMemoryUtilizationPercentage: 80}, podDisruptionBudget: {enabled: true, maxUnavailable: 1}, networkPolicy: {enabled: true, egress: [{to: [{ipBlock: {cidr: 0.0.0.0/0}}]}]}, sessionKey: {existingSecret: k}}`,
			`{mode: gateway, replicaCount: 3, autoscaling: {enabled: true}, podDisruptionBudget: {enabled: true}, sessionKey: {existingSecret: mcp-session-key, secretKey: key}, ingress: {enabled: true, className: nginx, hosts: [{host: a.example.com}]}}`,
			`{mode: gateway, replicaCount: 3, sessionKey: {required: false}}`,
			`{adminListenHost: "[::]", listenHost: 0.0.0.0, existingConfigMap: mine, rollOnConfigChange: true}`,
		} {
			c.dryRun(t, render(t, parseValues(t, vals)).Manifest)
		}
	})

	// The Kustomize component on a plain Deployment: the apiserver accepts
	// the result strictly, and stores the app's container exactly as it
	// stores it without the component.
	t.Run("kustomize", func(t *testing.T) {
		base := c.dryRun(t, kustomize(t, filepath.Join(kustomizeDir, "base")).Manifest)
		withSidecar := c.dryRun(t, kustomize(t, filepath.Join(kustomizeDir, "overlay")).Manifest)
		if len(base) != 1 || len(withSidecar) != 1 {
			t.Fatalf("Deployments: %d in base, %d in the overlay", len(base), len(withSidecar))
		}
		spec := &withSidecar[0].Spec.Template.Spec
		if got := containerNames(spec.Containers); strings.Join(got, ",") != "orders,switchboard" {
			t.Fatalf("stored containers %v", got)
		}
		if !equality.Semantic.DeepEqual(spec.Containers[0], base[0].Spec.Template.Spec.Containers[0]) {
			t.Errorf("the app's stored container differs with the component:\n got %+v\nwant %+v", spec.Containers[0], base[0].Spec.Template.Spec.Containers[0])
		}
		sb := &spec.Containers[1]
		if sb.ReadinessProbe == nil || sb.ReadinessProbe.HTTPGet.Path != "/readyz" || sb.LivenessProbe == nil || sb.StartupProbe == nil {
			t.Errorf("stored switchboard probes: %+v %+v %+v", sb.StartupProbe, sb.LivenessProbe, sb.ReadinessProbe)
		}
		for _, v := range []string{"cache", "switchboard-config", "switchboard-tmp", "switchboard-home"} {
			if volume(spec, v) == nil {
				t.Errorf("stored pod has no volume %s", v)
			}
		}
	})

	// The chart fed with a user's mcpServers file (-f, with helm's default
	// Kubernetes version) and with a whole config file (--set-file).
	t.Run("values-files", func(t *testing.T) {
		yamlFile := absPath(t, filepath.Join(serversDir, "servers.yaml"))
		jsonFile := absPath(t, filepath.Join(serversDir, "servers.json"))
		for _, args := range [][]string{
			{"-f", yamlFile},
			{"-f", yamlFile, "--kube-version", kubeVersion.Version},
			{"--set-file", "config=" + jsonFile, "--kube-version", kubeVersion.Version},
			{"--set-file", "config=" + jsonFile, "-f", yamlFile, "--set", "mode=gateway", "--kube-version", kubeVersion.Version},
		} {
			c.dryRun(t, helmTemplate(t, args...).Manifest)
		}
	})

	t.Run("sidecar", func(t *testing.T) {
		vals := readValues(t, filepath.Join(examplesDir, "k8s", "sidecar", "values.yaml"))
		c.install(t, loadChart(t, chartDir), "orders", "sidecar", vals)
		d, err := c.client.AppsV1().Deployments("sidecar").Get(ctx, "orders-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := &d.Spec.Template.Spec
		checkPod(t, spec, exampleWant(t, vals))
		cm, err := c.client.CoreV1().ConfigMaps("sidecar").Get(ctx, "orders-switchboard-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cm.Data["config.yaml"], "secret://file/var/run/secrets/mcp/github-token") {
			t.Errorf("stored config:\n%s", cm.Data["config.yaml"])
		}
		if _, err := c.client.CoreV1().ServiceAccounts("sidecar").Get(ctx, spec.ServiceAccountName, metav1.GetOptions{}); err != nil {
			t.Errorf("ServiceAccount: %v", err)
		}
		if _, err := c.client.CoreV1().Services("sidecar").Get(ctx, "orders-switchboard", metav1.GetOptions{}); err != nil {
			t.Errorf("app Service: %v", err)
		}

		// A config change reaches the ConfigMap and leaves the pod template
		// alone: the pods reload it live, nothing rolls.
		gen := d.Generation
		vals["config"].(map[string]any)["logLevel"] = "debug"
		c.upgrade(t, loadChart(t, chartDir), "orders", "sidecar", vals)
		d2, _ := c.client.AppsV1().Deployments("sidecar").Get(ctx, "orders-switchboard", metav1.GetOptions{})
		cm2, _ := c.client.CoreV1().ConfigMaps("sidecar").Get(ctx, "orders-switchboard-config", metav1.GetOptions{})
		if !strings.Contains(cm2.Data["config.yaml"], "logLevel: debug") {
			t.Errorf("ConfigMap not updated:\n%s", cm2.Data["config.yaml"])
		}
		if d2.Generation != gen {
			t.Errorf("Deployment generation %d -> %d: a config change rolled the pods", gen, d2.Generation)
		}
		// With rollOnConfigChange it does roll.
		vals["rollOnConfigChange"] = true
		c.upgrade(t, loadChart(t, chartDir), "orders", "sidecar", vals)
		d3, _ := c.client.AppsV1().Deployments("sidecar").Get(ctx, "orders-switchboard", metav1.GetOptions{})
		if d3.Generation == gen || d3.Spec.Template.Annotations["checksum/switchboard-config"] == "" {
			t.Errorf("rollOnConfigChange: generation %d -> %d, annotations %v", gen, d3.Generation, d3.Spec.Template.Annotations)
		}
	})

	t.Run("gateway", func(t *testing.T) {
		vals := readValues(t, filepath.Join(examplesDir, "k8s", "gateway", "values.yaml"))
		c.install(t, loadChart(t, chartDir), "mcp", "mcp", vals)
		d, err := c.client.AppsV1().Deployments("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPod(t, &d.Spec.Template.Spec, exampleWant(t, vals))
		svc, err := c.client.CoreV1().Services("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || svc.Spec.ClusterIP == "" {
			t.Errorf("Service: affinity %s, clusterIP %q", svc.Spec.SessionAffinity, svc.Spec.ClusterIP)
		}
		for _, get := range []func() error{
			func() error {
				_, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := c.client.PolicyV1().PodDisruptionBudgets("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := c.client.NetworkingV1().NetworkPolicies("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := c.client.NetworkingV1().Ingresses("mcp").Get(ctx, "mcp-switchboard", metav1.GetOptions{})
				return err
			},
		} {
			if err := get(); err != nil {
				t.Errorf("read back: %v", err)
			}
		}
	})

	// Three gateway replicas that share a session key from a Secret: the
	// apiserver stores the downward-API and Secret references as rendered,
	// with the PodDisruptionBudget; autoscaling adds the HPA.
	t.Run("gateway-replicas", func(t *testing.T) {
		const ns = "replicas"
		c.createNamespace(t, ns)
		key := make([]byte, 48)
		_, _ = rand.Read(key)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "mcp-session-key"},
			StringData: map[string]string{"session-key": base64.StdEncoding.EncodeToString(key)},
		}
		if _, err := c.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		vals := parseValues(t, `{mode: gateway, replicaCount: 3, podDisruptionBudget: {enabled: true}, sessionKey: {existingSecret: mcp-session-key}}`)
		c.install(t, loadChart(t, chartDir), "mcp", ns, vals)
		d, err := c.client.AppsV1().Deployments(ns).Get(ctx, "mcp-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			t.Errorf("stored replicas = %v, want 3", d.Spec.Replicas)
		}
		sb := checkPod(t, &d.Spec.Template.Spec, exampleWant(t, vals))
		stored := replicaEnv
		stored.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		checkEnv(t, "stored", sb, stored)
		checkEnv(t, "stored", sb, sessionKeyEnv("mcp-session-key", "session-key"))
		pdb, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "mcp-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
			t.Errorf("PDB selects %v, Deployment %v", pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels)
		}
		cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "mcp-switchboard-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"sessionKey", "requestStateKey"} {
			if !strings.Contains(cm.Data["config.yaml"], k+": "+sessionKeyRef) {
				t.Errorf("stored config lacks %s: %s:\n%s", k, sessionKeyRef, cm.Data["config.yaml"])
			}
		}

		vals["autoscaling"] = map[string]any{"enabled": true}
		c.upgrade(t, loadChart(t, chartDir), "mcp", ns, vals)
		hpa, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "mcp-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hpa.Spec.ScaleTargetRef.Name != d.Name || hpa.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("HPA targets %+v", hpa.Spec.ScaleTargetRef)
		}
	})

	t.Run("embed-chart", func(t *testing.T) {
		c.install(t, embedChart(t), "shop", "embed", nil)
		d, err := c.client.AppsV1().Deployments("embed").Get(ctx, "shop-orders", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPod(t, &d.Spec.Template.Spec, podWant{mode: "embedded", app: "orders"})
		if _, err := c.client.CoreV1().ConfigMaps("embed").Get(ctx, "shop-switchboard-config", metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap: %v", err)
		}
	})

	t.Run("native-sidecar", func(t *testing.T) {
		c.install(t, loadChart(t, chartDir), "native", "native", parseValues(t, `{nativeSidecar: true, app: {image: {repository: acme/app}}}`))
		d, err := c.client.AppsV1().Deployments("native").Get(ctx, "native-switchboard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPod(t, &d.Spec.Template.Spec, podWant{mode: "sidecar", app: "app", native: true})
	})

	// The dry run above can fail: an invalid object and an unknown field
	// are rejected.
	t.Run("dry-run-rejects", func(t *testing.T) {
		bad := render(t, nil).Manifest
		bad = strings.Replace(bad, "- name: switchboard\n", "- name: Switch_Board\n", 1)
		objs, _ := decodeManifests(bad)
		var u unstructured.Unstructured
		for _, o := range objs {
			if o.Kind == "Deployment" {
				_ = yaml.Unmarshal([]byte(o.YAML), &u.Object)
			}
		}
		_, err := c.dynamic.Resource(deploymentsGVR).Namespace(namespace).Create(ctx, &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err == nil {
			t.Errorf("an invalid container name passed the dry run")
		}
		u.Object["spec"].(map[string]any)["replicaz"] = 1
		_, err = c.dynamic.Resource(deploymentsGVR).Namespace(namespace).Create(ctx, &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err == nil || !strings.Contains(err.Error(), "replicaz") {
			t.Errorf("an unknown field passed the strict dry run: %v", err)
		}
	})
}

var deploymentsGVR = k8sschema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
