package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// devVault is a real Vault dev server on loopback.
type devVault struct {
	addr, token string
}

func startDevVault(t *testing.T) *devVault {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_VAULT")
	if bin == "" {
		bin = cachedTool(t, "vault", filepath.Join("vault-1.21.0-minimal", "vault"))
	} else if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SWITCHBOARD_VAULT=%s: %v", bin, err)
	}
	v := &devVault{token: "root-" + fmt.Sprint(time.Now().UnixNano())}
	for attempt := 0; attempt < 3; attempt++ {
		v.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := start(t, t.TempDir(), []string{"VAULT_DEV_ROOT_TOKEN_ID=" + v.token}, bin, "server", "-dev",
			"-dev-root-token-id="+v.token, "-dev-listen-address="+v.addr)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := http.Get("http://" + v.addr + "/v1/sys/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return v
				}
			}
			select {
			case <-p.done:
				deadline = time.Time{}
			default:
				time.Sleep(100 * time.Millisecond)
			}
		}
		p.stop(5 * time.Second)
	}
	t.Fatal("vault dev server did not start")
	return nil
}

// put writes a KV v2 secret at secret/<path>.
func (v *devVault) put(t *testing.T, path string, data map[string]string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"data": data})
	req, _ := http.NewRequest(http.MethodPost, "http://"+v.addr+"/v1/secret/data/"+path, bytes.NewReader(b))
	req.Header.Set("X-Vault-Token", v.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("vault put %s: %s %s", path, resp.Status, body)
	}
}

// TestSecretLeakSuite plants distinct values in every provider (env, file,
// Vault, AWS, GCP), feeds them to fixture servers that echo their
// environment to stderr, results and error messages, and runs the real
// binary through start, a crash and restart, a failed resolution, debug
// logging, /status and the audit log. No byte it writes may hold a value.
// Rotating the Vault value and crashing the child gives it the new value.
func TestSecretLeakSuite(t *testing.T) {
	vault := startDevVault(t)
	dir := t.TempDir()
	plant := func(name string) string { return "planted-" + name + "-" + fmt.Sprint(time.Now().UnixNano()%1e9) }
	values := map[string]string{
		"env": plant("env"), "file": plant("file"), "vault": plant("vault"), "vault2": plant("vault-rotated"),
		"aws": plant("aws"), "gcp": plant("gcp"), "header": plant("header"),
	}
	vault.put(t, "app", map[string]string{"token": values["vault"]})
	if err := os.WriteFile(filepath.Join(dir, "file-secret"), []byte(values["file"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The fake clouds speak the real AWS and GCP wire protocols; the binary
	// reaches them through the vendors' SDKs.
	seed := map[string]any{
		"aws": map[string]any{"accessKeyId": "AKIDTEST", "secretAccessKey": "test-secret-access-key",
			"secrets": map[string]string{"app/aws": values["aws"]}},
		"gcp": map[string]any{"token": "", "project": "proj", "credentialsFile": filepath.Join(dir, "sa.json"),
			"secrets": map[string]string{"projects/proj/secrets/app-gcp": values["gcp"]}},
	}
	seedB, _ := json.Marshal(seed)
	if err := os.WriteFile(filepath.Join(dir, "seed.json"), seedB, 0o600); err != nil {
		t.Fatal(err)
	}
	cloudReady := filepath.Join(dir, "cloud.json")
	cloud := start(t, dir, nil, fakecloud, "-seed", filepath.Join(dir, "seed.json"), "-ready", cloudReady)
	var urls map[string]string
	if err := json.Unmarshal([]byte(waitFile(t, cloudReady, 20*time.Second, cloud)), &urls); err != nil {
		t.Fatal(err)
	}

	headers := filepath.Join(dir, "headers")
	webURL, _ := startFixtureHTTP(t, "http", "--name", "web", "--headers-file", headers)
	auditPath := filepath.Join(dir, "audit.log")
	env := map[string]string{
		"SECRET_FROM_ENV": values["env"], "HEADER_TOKEN": values["header"],
		"VAULT_ADDR": "http://" + vault.addr, "VAULT_TOKEN": vault.token,
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret-access-key", "AWS_REGION": "us-east-1",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": urls["aws"], "AWS_EC2_METADATA_DISABLED": "true",
		"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(dir, "sa.json"), "GOOGLE_CLOUD_PROJECT": "proj",
		"SWITCHBOARD_GCP_SECRETMANAGER_ENDPOINT": urls["gcp"],
	}
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	cfg := map[string]any{
		"logLevel": "trace",
		"audit":    map[string]any{"file": auditPath, "arguments": true},
		"mcpServers": map[string]any{
			"leaky": map[string]any{
				"command": fixture, "args": []string{"--name", "leaky", "--echo-env-stderr", "--stderr-lines", "--error-echo-env", "S_VAULT"},
				"env": map[string]string{
					"S_ENV":   "secret://env/SECRET_FROM_ENV",
					"S_FILE":  "secret://file" + filepath.Join(dir, "file-secret"),
					"S_VAULT": "secret://vault/secret/app#token",
					"S_AWS":   "secret://aws/app/aws",
					"S_GCP":   "secret://gcp/app-gcp",
					"S_MIXED": "prefix-${secret://env/SECRET_FROM_ENV}-suffix",
				},
			},
			"web": map[string]any{"type": "http", "url": webURL,
				"headers": map[string]string{"Authorization": "Bearer ${secret://env/HEADER_TOKEN}"}},
			"broken": map[string]any{"command": fixture, "args": []string{"--name", "broken"},
				"env": map[string]string{"S_MISSING": "secret://vault/secret/missing#token"}, "restartOnCrash": false},
		},
	}
	s := startSwitchboardIn(t, dir, dir, cfg, envList)
	cs := s.client(t, nil)
	testutil.Eventually(t, 30*time.Second, "leaky and web listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_leaky_env"] != nil && tools["mcp_web_echo"] != nil
	})

	var transcript strings.Builder // every byte a client saw
	record := func(v any) { b, _ := json.Marshal(v); transcript.Write(b); transcript.WriteString("\n") }
	// Each value reached the child: it reports the value's hash, compared
	// here, and the value itself comes back redacted.
	envHash := func(key string) string {
		res := mustCall(t, cs, "mcp_leaky_env_sha256", map[string]any{"name": key})
		return strings.TrimSpace(unwrap(textOf(res)))
	}
	for name, key := range map[string]string{"env": "S_ENV", "file": "S_FILE", "vault": "S_VAULT", "aws": "S_AWS", "gcp": "S_GCP"} {
		if got := envHash(key); got != sha256hex(values[name]) {
			t.Errorf("%s: the child got the wrong value (hash %s)", name, got)
		}
		res := mustCall(t, cs, "mcp_leaky_env", map[string]any{"name": key})
		record(res)
		if res.IsError || !strings.Contains(textOf(res), "[REDACTED]") {
			t.Errorf("%s: the value was not redacted: %s", name, textOf(res))
		}
	}
	if got := envHash("S_MIXED"); got != sha256hex("prefix-"+values["env"]+"-suffix") {
		t.Errorf("interpolated value wrong (hash %s)", got)
	}
	res := mustCall(t, cs, "mcp_leaky_env_all", map[string]any{})
	record(res)
	_, err := callTool(t, cs, "mcp_leaky_fail_env", map[string]any{})
	record(fmt.Sprint(err))
	record(mustCall(t, cs, "mcp_leaky_echo", map[string]any{"text": values["env"]}))
	if b, _ := os.ReadFile(headers); !strings.Contains(string(b), "authorization=Bearer "+values["header"]) {
		t.Errorf("the HTTP upstream did not get its header from the reference")
	}
	// The broken server fails alone, naming the reference, not a value.
	testutil.Eventually(t, 15*time.Second, "broken failed", func() bool {
		st := s.serverStatus(t, "broken")
		return st != nil && st["state"] == "failed"
	})
	if st := s.serverStatus(t, "broken"); !strings.Contains(fmt.Sprint(st["lastError"]), "secret://vault/secret/missing#token") {
		t.Errorf("broken server's error does not name the reference: %v", st["lastError"])
	}
	if st := s.serverStatus(t, "leaky"); st["state"] != "ready" {
		t.Errorf("a failed reference stopped another server: %v", st["state"])
	}

	// Rotation: a new value in Vault, a crash, and the restarted child has it.
	vault.put(t, "app", map[string]string{"token": values["vault2"]})
	_, _ = callTool(t, cs, "mcp_leaky_crash", map[string]any{"code": 3})
	var last string // the last answer, and the server's state, if it never restarts
	func() {
		defer func() {
			if t.Failed() {
				t.Logf("leaky's last answer: %s; its status: %v", last, s.serverStatus(t, "leaky"))
			}
		}()
		testutil.Eventually(t, 30*time.Second, "leaky restarted with the rotated value", func() bool {
			res, err := callTool(t, cs, "mcp_leaky_env_sha256", map[string]any{"name": "S_VAULT"})
			if last = fmt.Sprint(err); err == nil {
				last = textOf(res)
			}
			return err == nil && !res.IsError && strings.TrimSpace(unwrap(textOf(res))) == sha256hex(values["vault2"])
		})
	}()
	res = mustCall(t, cs, "mcp_leaky_env", map[string]any{"name": "S_VAULT"})
	record(res)
	status, _ := json.Marshal(s.status(t))
	transcript.Write(status)
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		transcript.Write(b)
	}

	s.stop(10 * time.Second)
	audit, _ := os.ReadFile(auditPath)
	outputs := map[string]string{
		"switchboard stderr": s.Stderr(), "audit log": string(audit), "client transcript": transcript.String(),
	}
	for where, out := range outputs {
		for name, v := range values {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), url.QueryEscape(v)} {
				if strings.Contains(out, form) {
					t.Errorf("the %s value leaked into the %s", name, where)
				}
			}
		}
	}
	if !strings.Contains(s.Stderr(), "[REDACTED]") {
		t.Error("child stderr with secrets was not re-logged (nothing redacted)")
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
