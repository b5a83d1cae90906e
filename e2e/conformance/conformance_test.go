package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The suite is looked up as node_modules/@modelcontextprotocol/conformance
// (with node_modules/.bin/node, Node 22) under $SWITCHBOARD_NPM, then
// $SWITCHBOARD_CACHE/npm (default ~/.cache/switchboard/npm), where .ci/setup
// installs it. SWITCHBOARD_CONFORMANCE_DIR names another copy of the package
// (for example a newer release, to compare), and SWITCHBOARD_CONFORMANCE_ARGS
// adds space-separated arguments to the suite's command line (for example
// "--spec-version 2025-11-25" for releases that also test protocol
// 2026-07-28, which needs a stateless endpoint).

// full is set by .ci/run: a missing suite fails the test instead of skipping.
var full = os.Getenv("SWITCHBOARD_FULL") == "1"

const suiteTimeout = 150 * time.Second

func npmDirs() []string {
	var dirs []string
	if d := os.Getenv("SWITCHBOARD_NPM"); d != "" {
		dirs = append(dirs, d)
	}
	cache := os.Getenv("SWITCHBOARD_CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "switchboard")
		}
	}
	return append(dirs, filepath.Join(cache, "npm"))
}

// suite returns the Node 22 binary and the suite's CLI script.
func suite(t *testing.T) (node, script string) {
	t.Helper()
	for _, dir := range npmDirs() {
		n := filepath.Join(dir, "node_modules", ".bin", "node")
		pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance")
		if d := os.Getenv("SWITCHBOARD_CONFORMANCE_DIR"); d != "" {
			pkg = d
		}
		s := filepath.Join(pkg, "dist", "index.js")
		if fileExists(n) && fileExists(s) {
			return n, s
		}
	}
	msg := "Node 22 and @modelcontextprotocol/conformance are not installed (run .ci/setup)"
	if full {
		t.Fatal(msg)
	}
	t.Skip(msg + "; set SWITCHBOARD_FULL=1 to make this a failure")
	return "", ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fixtureBin is this package, compiled once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "conformance-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixtureBin = filepath.Join(dir, "conformance-fixture")
	cmd := exec.Command("go", "build", "-o", fixtureBin, ".")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fixture: %v\n", err)
		return 1
	}
	return m.Run()
}

// startHTTP starts the fixture on streamable HTTP at 127.0.0.1 and returns
// its URL; the process is stopped at cleanup.
func startHTTP(t *testing.T, bin, dir string, extra ...string) string {
	t.Helper()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(bin, append([]string{"--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready}, extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("fixture stderr:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			return string(b)
		}
		select {
		case err := <-exited:
			t.Fatalf("fixture exited before it was ready: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("fixture did not write %s within 15s\n%s", ready, stderr.String())
	return ""
}

// expectedFailures reads expected-failures.txt: scenario id -> reason.
func expectedFailures(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("expected-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, ok := strings.Cut(line, ":")
		id, reason = strings.TrimSpace(id), strings.TrimSpace(reason)
		if !ok || id == "" || reason == "" {
			t.Fatalf("expected-failures.txt:%d: want \"scenario-id: reason\", got %q", i+1, line)
		}
		m[id] = reason
	}
	return m
}

// scenarioResult is one line of the suite's summary.
type scenarioResult struct {
	passed, failed int
}

var (
	summaryLine = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed$`)
	runningLine = regexp.MustCompile(`^Running \S+ suite \((\d+) scenarios\)`)
)

// parseSummary reads the "=== SUMMARY ===" block of the suite's output and
// the scenario count announced at its start (-1 if absent).
func parseSummary(out string) (results map[string]scenarioResult, order []string, announced int) {
	results = map[string]scenarioResult{}
	announced = -1
	inSummary := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := runningLine.FindStringSubmatch(line); m != nil {
			announced, _ = strconv.Atoi(m[1])
		}
		if line == "=== SUMMARY ===" {
			inSummary = true
			continue
		}
		if !inSummary {
			continue
		}
		if m := summaryLine.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[2])
			f, _ := strconv.Atoi(m[3])
			if _, dup := results[m[1]]; !dup {
				order = append(order, m[1])
			}
			results[m[1]] = scenarioResult{passed: p, failed: f}
		}
	}
	return results, order, announced
}

// TestSuite runs every server scenario of the conformance suite (--suite
// all) directly against the fixture over streamable HTTP.
func TestSuite(t *testing.T) {
	node, script := suite(t)
	dir := t.TempDir()
	url := startHTTP(t, fixtureBin, dir)
	expected := expectedFailures(t)

	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	args := []string{script, "server", "--url", url, "--suite", "all"}
	args = append(args, strings.Fields(os.Getenv("SWITCHBOARD_CONFORMANCE_ARGS"))...)
	cmd := exec.CommandContext(ctx, node, args...)
	// The suite may write a results/ directory into its working directory.
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	start := time.Now()
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	exitCode := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ctx.Err() != nil {
			t.Fatalf("running the suite: %v (after %s)\n%s", err, time.Since(start).Round(time.Millisecond), out)
		}
		exitCode = ee.ExitCode()
	}
	t.Logf("suite finished in %s with exit status %d", time.Since(start).Round(time.Millisecond), exitCode)

	results, order, announced := parseSummary(out)
	if len(results) == 0 {
		t.Fatalf("no scenario summary in the suite's output (exit status %d):\n%s", exitCode, out)
	}
	if announced >= 0 && announced != len(results) {
		t.Errorf("the suite announced %d scenarios but summarised %d", announced, len(results))
	}

	var unexpected []string
	failedAny := false
	for _, id := range order {
		r := results[id]
		status := "pass"
		if r.failed > 0 {
			status = "FAIL"
			failedAny = true
			if reason, ok := expected[id]; ok {
				status = "fail (expected: " + reason + ")"
			} else {
				unexpected = append(unexpected, id)
			}
		} else if reason, ok := expected[id]; ok {
			t.Errorf("%s passes but expected-failures.txt lists it (%s); remove the entry", id, reason)
		}
		t.Logf("%-32s %3d passed %3d failed  %s", id, r.passed, r.failed, status)
	}
	var missing []string
	for id := range expected {
		if _, ok := results[id]; !ok {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	for _, id := range missing {
		t.Errorf("expected-failures.txt lists %s, which the suite did not run", id)
	}
	if len(unexpected) > 0 {
		t.Errorf("unexpected scenario failures: %s\n\nsuite output:\n%s", strings.Join(unexpected, ", "), out)
	}
	if exitCode != 0 && !failedAny {
		t.Errorf("the suite exited with status %d although no scenario failed:\n%s", exitCode, out)
	}
	if exitCode == 0 && failedAny {
		t.Errorf("the suite exited with status 0 although scenarios failed")
	}
}

func TestParseSummary(t *testing.T) {
	out := "Running all suite (3 scenarios) against http://127.0.0.1:1/mcp\n" +
		"\n=== Running scenario: ping ===\n✗ not-a-summary: 1 passed, 1 failed\n" +
		"\n\n=== SUMMARY ===\n" +
		"✓ ping: 1 passed, 0 failed\n" +
		"✗ tools-call-error: 0 passed, 1 failed\n" +
		"✓ server-sse-polling: 0 passed, 0 failed\n" +
		"\nTotal: 1 passed, 1 failed\n"
	got, order, announced := parseSummary(out)
	want := map[string]scenarioResult{
		"ping":               {1, 0},
		"tools-call-error":   {0, 1},
		"server-sse-polling": {0, 0},
	}
	if announced != 3 {
		t.Errorf("announced = %d, want 3", announced)
	}
	if fmt.Sprint(order) != "[ping tools-call-error server-sse-polling]" {
		t.Errorf("order = %v", order)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: got %+v, want %+v", id, got[id], w)
		}
	}
}
