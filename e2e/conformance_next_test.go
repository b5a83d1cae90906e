package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The conformance suite's newest release (0.2.x, installed beside 0.1.16
// under the alias conformance-next by .ci/setup) has the 2026-07-28
// scenarios. TestConformanceNext runs it with --requirements 2025-11-25
// and --requirements 2026-07-28 against the conformance fixture directly,
// then through switchboard over a stdio and over a streamable HTTP
// upstream, and requires every check that passes directly to pass
// through switchboard too.

// runStamp is the timestamp ending the directory of a scenario's checks.
var runStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z?$`)

// checkResults counts the passing checks of a run by scenario and check
// ID, and lists every check that ran.
type checkResults struct {
	passed map[string]int
	ran    map[string]int
	info   map[string]int // reported INFO: a note, neither passed nor failed
	total  int
	ok     int
}

// runConformanceNext runs the suite's scenarios of requirements against
// url (or, with a scenario, that one only at that spec version) and reads
// the checks it saved.
func runConformanceNext(t *testing.T, url, requirements string, scenario ...string) checkResults {
	t.Helper()
	suite := filepath.Join(npmDir(t), "node_modules", "conformance-next", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		if full {
			t.Fatalf("the conformance suite 0.2.x is not installed (%v); run .ci/setup", err)
		}
		t.Skipf("the conformance suite 0.2.x is not installed (%v)", err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := []string{suite, "server", "--url", url, "--timeout", "15000", "-o", out}
	if len(scenario) == 0 {
		args = append(args, "--requirements", requirements)
	}
	for _, sc := range scenario {
		// An extension's scenario is on no spec version's timeline: it
		// runs with --force.
		args = append(args, "--scenario", sc, "--spec-version", requirements, "--force")
	}
	cmd := exec.CommandContext(ctx, node22(t), args...)
	cmd.Dir = t.TempDir()
	text, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish: %v\n%s", ctx.Err(), tail(string(text), 4000))
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("the suite saved no checks (%v):\n%s", err, tail(string(text), 4000))
	}
	res := checkResults{passed: map[string]int{}, ran: map[string]int{}, info: map[string]int{}}
	for _, f := range files {
		// The directory is server-<scenario>-<the run's timestamp>.
		scenario := runStamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"), "")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			key := scenario + " " + c.ID
			res.ran[key]++
			res.total++
			switch c.Status {
			case "SUCCESS":
				res.passed[key]++
				res.ok++
			case "INFO":
				res.info[key]++
			}
		}
	}
	return res
}

// notThroughStdio are the checks that cannot pass through a stdio
// upstream, and why.
var notThroughStdio = map[string]string{
	// switchboard closes its client's stream mid-call (SEP-1699) when the
	// upstream closed its own; a stdio server has no stream to close, the
	// answer comes on the POST's stream, and the suite reports INFO.
	"server-sse-polling server-sse-disconnect-resume": "a stdio server cannot close a request's stream",
}

// notThrough are the checks that cannot pass through switchboard over any
// upstream, and why.
var notThrough = map[string]string{
	// The trust boundary wraps a tool's text as untrusted content; the
	// check wants it byte for byte (the other tools-call checks look for
	// the text within it).
	"tasks-request-headers tasks-headers-tolerate-mcp-method-on-tools-call": "switchboard wraps a tool's text result as untrusted content",
}

// onlyOnStreams are the checks the suite runs on event streams only, each
// with the check by which it reports INFO instead when the answer came as
// plain JSON ("SSE streaming is optional"; the priming and retry checks
// are then not run at all). switchboard answers a lone call with nothing
// streamed before its answer as JSON (docs/protocol.md), where the
// fixture always streams; such a check is not lost when the suite says
// so.
var onlyOnStreams = map[string]string{
	"server-sse-multiple-streams server-sse-streams-functional": "server-sse-multiple-streams server-sse-streams-functional",
	"server-sse-polling server-sse-priming-event":               "server-sse-polling server-sse-content-type",
	"server-sse-polling server-sse-retry-field":                 "server-sse-polling server-sse-content-type",
}

// taskChecks counts the checks of the tasks extension's scenarios
// (tasks-*) that ran and that passed, and lists those that ran and did not
// pass, but the scenario of optional status notifications (which the suite
// skips).
func taskChecks(res checkResults) (ran, passed int, failed []string) {
	for key, n := range res.ran {
		if !strings.HasPrefix(key, "tasks-") || strings.HasPrefix(key, "tasks-status-notifications ") {
			continue
		}
		ran += n
		passed += res.passed[key]
		if res.passed[key] < n {
			failed = append(failed, key)
		}
	}
	sort.Strings(failed)
	return ran, passed, failed
}

// lostThrough lists the checks that pass directly more often than through
// switchboard, but those in except and those the suite did not apply to
// a plain JSON answer (onlyOnStreams).
func lostThrough(direct, through checkResults, except map[string]string) []string {
	var lost []string
	for key, n := range direct.passed {
		if _, ok := except[key]; ok {
			continue
		}
		if marker, ok := onlyOnStreams[key]; ok && through.passed[key] == 0 && through.info[marker] > 0 {
			continue
		}
		if through.passed[key] < n {
			lost = append(lost, fmt.Sprintf("%s (%d of %d passed through, %d directly)", key, through.passed[key], through.ran[key], n))
		}
	}
	sort.Strings(lost)
	return lost
}

func TestConformanceNext(t *testing.T) {
	t.Parallel()
	startFixture := func(t *testing.T, args ...string) string {
		dir := t.TempDir()
		ready := filepath.Join(dir, "url")
		p := start(t, dir, nil, conffix, append([]string{"--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready}, args...)...)
		return strings.TrimSpace(waitFile(t, ready, 20*time.Second, p))
	}
	for _, tc := range []struct {
		requirements string
		fixture      []string // how the fixture serves HTTP for this era
		protocol     string   // the stdio upstream's protocol setting
	}{
		// 2025-11-25: a stateful fixture, legacy upstreams (the stdio
		// default).
		{"2025-11-25", nil, ""},
		// 2026-07-28: a stateless fixture; the stdio upstream is probed
		// (protocol auto) and found to speak 2026-07-28 too.
		{"2026-07-28", []string{"--stateless"}, "auto"},
	} {
		t.Run(tc.requirements, func(t *testing.T) {
			t.Parallel()
			direct := runConformanceNext(t, startFixture(t, tc.fixture...), tc.requirements)
			t.Logf("directly: %d of %d checks passed", direct.ok, direct.total)
			if direct.ok == 0 {
				t.Fatal("the fixture passed nothing directly")
			}
			if tc.requirements == "2026-07-28" {
				// The fixture serves the tasks extension (SEP-2663):
				// every check of its scenarios passes directly.
				ran, passed, failed := taskChecks(direct)
				t.Logf("the tasks extension: %d of %d checks passed directly", passed, ran)
				if ran == 0 || len(failed) > 0 {
					t.Errorf("the tasks extension's checks that fail directly: %v", failed)
				}
			}
			upstreams := map[string]map[string]any{
				"stdio": {"command": conffix, "namespace": false, "protocol": tc.protocol},
				"http":  {"type": "http", "url": startFixture(t, tc.fixture...), "namespace": false},
			}
			if tc.protocol == "" {
				delete(upstreams["stdio"], "protocol")
			}
			for _, name := range []string{"stdio", "http"} {
				s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"conformance": upstreams[name]}})
				waitTools(t, s, "test_simple_text")
				through := runConformanceNext(t, "http://"+s.addr+"/mcp", tc.requirements)
				t.Logf("through switchboard over a %s upstream: %d of %d checks passed", name, through.ok, through.total)
				if ran, passed, _ := taskChecks(through); ran > 0 {
					t.Logf("the tasks extension through switchboard over a %s upstream: %d of %d checks passed", name, passed, ran)
				}
				except := maps.Clone(notThrough)
				if name == "stdio" {
					maps.Copy(except, notThroughStdio)
				}
				for key, why := range except {
					if direct.passed[key] > 0 {
						t.Logf("over a %s upstream, %s passes directly and not through switchboard: %s", name, key, why)
					}
				}
				if lost := lostThrough(direct, through, except); len(lost) > 0 {
					t.Errorf("over a %s upstream, checks that pass directly fail through switchboard:\n  %s", name, strings.Join(lost, "\n  "))
				}
				if tc.requirements == "2026-07-28" {
					tasksUnwrapped(t, name, upstreams[name], direct)
				}
			}
		})
	}
}

// tasksUnwrapped runs the one tasks scenario with a check that wants a
// tool's text byte for byte (notThrough) through switchboard with the
// trust boundary off for the server ("wrap": false): there every check of
// it that passes directly passes through, so what notThrough excuses is
// the wrapping and nothing in how tasks are routed.
func tasksUnwrapped(t *testing.T, name string, upstream map[string]any, direct checkResults) {
	t.Helper()
	const scenario = "tasks-request-headers"
	unwrapped := maps.Clone(upstream)
	unwrapped["wrap"] = false
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"conformance": unwrapped}})
	waitTools(t, s, "test_simple_text")
	through := runConformanceNext(t, "http://"+s.addr+"/mcp", "2026-07-28", scenario)
	ran := 0
	for key, n := range direct.passed {
		if !strings.HasPrefix(key, scenario+" ") {
			continue
		}
		ran++
		if through.passed[key] < n {
			t.Errorf("over a %s upstream with wrap false, %s passes directly and not through switchboard", name, key)
		}
	}
	if ran == 0 || through.ok == 0 {
		t.Fatalf("over a %s upstream with wrap false, %s ran no check that passes (directly %d, through %d of %d)", name, scenario, ran, through.ok, through.total)
	}
	t.Logf("the tasks extension's %s through switchboard over a %s upstream with wrap false: %d of %d checks passed", scenario, name, through.ok, through.total)
}

// TestConformanceLegacyClientModernUpstream runs the 2025-11-25
// requirements through switchboard with the upstream era left at auto,
// against the fixture serving 2026-07-28 (stateless over HTTP, probed over
// stdio): what the upstream asks inside a call (input_required) reaches
// the legacy client as requests on its session, and subscriptions open a
// subscriptions/listen upstream. Every check that passes directly against
// the stateful fixture must pass through switchboard too.
func TestConformanceLegacyClientModernUpstream(t *testing.T) {
	t.Parallel()
	startFixture := func(t *testing.T, args ...string) string {
		dir := t.TempDir()
		ready := filepath.Join(dir, "url")
		p := start(t, dir, nil, conffix, append([]string{"--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready}, args...)...)
		return strings.TrimSpace(waitFile(t, ready, 20*time.Second, p))
	}
	direct := runConformanceNext(t, startFixture(t), "2025-11-25")
	t.Logf("directly: %d of %d checks passed", direct.ok, direct.total)
	if direct.ok == 0 {
		t.Fatal("the fixture passed nothing directly")
	}
	upstreams := map[string]map[string]any{
		"stdio": {"command": conffix, "namespace": false, "protocol": "auto"},
		"http":  {"type": "http", "url": startFixture(t, "--stateless"), "namespace": false},
	}
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"conformance": upstreams[name]}})
			waitTools(t, s, "test_simple_text")
			if p := s.serverStatus(t, "conformance")["protocol"]; p != "2026-07-28" {
				t.Fatalf("the upstream speaks %v, want 2026-07-28", p)
			}
			through := runConformanceNext(t, "http://"+s.addr+"/mcp", "2025-11-25")
			t.Logf("through switchboard over a %s upstream of 2026-07-28: %d of %d checks passed", name, through.ok, through.total)
			// Neither a stdio server nor a stateless one closes a
			// request's stream mid-call for the client to resume.
			except := map[string]string{
				"server-sse-polling server-sse-disconnect-resume": "a 2026-07-28 upstream's request streams are not resumable, so it never closes one mid-call",
			}
			for key, why := range except {
				if direct.passed[key] > 0 {
					t.Logf("over a %s upstream of 2026-07-28, %s passes directly and not through switchboard: %s", name, key, why)
				}
			}
			if lost := lostThrough(direct, through, except); len(lost) > 0 {
				t.Errorf("over a %s upstream of 2026-07-28, checks that pass directly fail through switchboard:\n  %s", name, strings.Join(lost, "\n  "))
			}
		})
	}
}
