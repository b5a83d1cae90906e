package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// authScenarios are the conformance suite's client auth scenarios that
// switchboard, as the OAuth client of a remote server, must pass: the
// tier-1 auth list and the client-credentials, workload-identity,
// enterprise and DPoP extensions (auth/dpop, auth/dpop-nonce: the
// authorization-code flow, DPoP by default since the authorization server
// offers ES256).
var authScenarios = []string{
	"metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
	"scope-from-www-authenticate", "scope-from-scopes-supported", "scope-omitted-when-undefined",
	"scope-step-up", "scope-retry-limit",
	"token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
	"pre-registration", "2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback",
	"resource-mismatch", "offline-access-scope", "offline-access-not-supported", "authorization-server-migration",
	"iss-supported", "iss-not-advertised", "iss-supported-missing", "iss-wrong-issuer", "iss-unexpected",
	"iss-normalized", "metadata-issuer-mismatch",
	"client-credentials-basic", "client-credentials-jwt", "wif-jwt-bearer", "enterprise-managed-authorization",
	"dpop", "dpop-nonce",
}

// TestConformanceClientAuth runs each auth scenario with e2e/authclient as
// the suite's client: switchboard reaches the scenario's server as a
// remote upstream with an oauth block, `auth login` consents for the
// authorization-code scenarios, and a call goes through switchboard.
func TestConformanceClientAuth(t *testing.T) {
	suite := filepath.Join(npmDir(t), "node_modules", "conformance-next", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		if full {
			t.Fatalf("the conformance suite 0.2.x is not installed (%v); run .ci/setup", err)
		}
		t.Skipf("the conformance suite 0.2.x is not installed (%v)", err)
	}
	client := filepath.Join(binDir, "authclient")
	if out, err := exec.Command("go", "build", "-o", client, "./authclient").CombinedOutput(); err != nil {
		t.Fatalf("build authclient: %v\n%s", err, out)
	}
	expected := authExpectedFailures(t)
	for _, sc := range authScenarios {
		ok, log := runAuthScenario(t, suite, client, sc)
		reason, listed := expected[sc]
		switch {
		case ok && listed:
			t.Errorf("%s passes but auth-expected-failures.txt lists it (%s); remove the entry", sc, reason)
		case !ok && !listed:
			t.Errorf("%s fails:\n%s", sc, tail(log, 3000))
		case ok:
			t.Logf("%s: pass", sc)
		default:
			t.Logf("%s: fails, as expected: %s", sc, reason)
		}
	}
}

// runAuthScenario runs one scenario and reports whether the suite's
// verdict was a pass, with its output.
func runAuthScenario(t *testing.T, suite, client, scenario string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node22(t), suite, "client", "--command", client, "--scenario", "auth/"+scenario, "-o", t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "SWITCHBOARD_BIN="+switchboard)
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: the suite did not finish:\n%s", scenario, tail(string(out), 3000))
	}
	return strings.Contains(string(out), "OVERALL: PASSED"), string(out)
}

// authExpectedFailures reads testdata/auth-expected-failures.txt.
func authExpectedFailures(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/auth-expected-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("auth-expected-failures.txt: want \"scenario: reason\", got %q", line)
		}
		m[id] = reason
	}
	return m
}
