package secrets_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/secrets/awssm"
	"github.com/mcp-switchboard/switchboard/secrets/helper"
)

// testHelperEnv makes the test binary the secrets helper (what
// cmd/switchboard-secrets is), writing its PID to the directory it names.
// Besides Secrets Manager it serves three paths of its own: "crash" exits
// at once with a message, "slow" waits for the request's deadline, and
// "echo:X" answers X.
const testHelperEnv = "SWITCHBOARD_SECRETS_TEST_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(testHelperEnv); dir != "" {
		os.Exit(testHelper(dir))
	}
	os.Exit(m.Run())
}

func testHelper(dir string) int {
	f, err := os.OpenFile(filepath.Join(dir, "pids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(f, os.Getpid())
	f.Close()
	sm := awssm.New(awssm.Options{})
	fetch := func(ctx context.Context, path, key string) (string, error) {
		switch {
		case path == "crash":
			fmt.Fprintln(os.Stderr, "boom")
			os.Exit(3)
		case path == "slow":
			<-ctx.Done()
			return "", ctx.Err()
		case strings.HasPrefix(path, "echo:"):
			return strings.TrimPrefix(path, "echo:"), nil
		}
		return sm.Fetch(ctx, path, key)
	}
	notFound := func(err error) bool { return errors.Is(err, awssm.ErrNotFound) }
	if err := helper.Serve(context.Background(), os.Stdin, os.Stdout, map[string]helper.Fetch{"aws": fetch}, notFound); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testHelperOptions runs the test binary as the helper; pids lists the
// processes started so far.
func testHelperOptions(t *testing.T, idle time.Duration) (opt *secrets.HelperOptions, pids func() []int) {
	dir := t.TempDir()
	opt = &secrets.HelperOptions{Path: os.Args[0], Env: []string{testHelperEnv + "=" + dir}, Idle: idle}
	return opt, func() []int {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		var out []int
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
		return out
	}
}

// alive reports whether pid is a running process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestHelperLifecycle: one process serves every request while busy; it
// ends when idle and the next request starts another; Close ends it.
func TestHelperLifecycle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before := runtime.NumGoroutine()
	opt, pids := testHelperOptions(t, 200*time.Millisecond)
	r := secrets.NewResolver(secrets.Options{Helper: opt})
	defer r.Close()
	ctx := context.Background()

	in := map[string]string{}
	for i := range 16 {
		in[fmt.Sprint("K", i)] = fmt.Sprintf("secret://aws/echo:v%d", i)
	}
	got, err := r.ExpandMap(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if k := fmt.Sprint("K", i); got[k] != fmt.Sprint("v", i) {
			t.Fatalf("%s = %q", k, got[k])
		}
	}
	if p := pids(); len(p) != 1 || !alive(p[0]) {
		t.Fatalf("helpers started: %v (want one, running)", p)
	}
	first := pids()[0]
	waitFor(t, "the idle helper to exit", func() bool { return !alive(first) })

	if v, err := r.Expand(ctx, "secret://aws/echo:again"); err != nil || v != "again" {
		t.Fatalf("after idle exit: %q, %v", v, err)
	}
	p := pids()
	if len(p) != 2 || !alive(p[1]) {
		t.Fatalf("helpers started: %v (want a second, running)", p)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(p[1]) {
		t.Fatalf("helper %d still running after Close", p[1])
	}
	// Close waited for the process and the goroutines that read it.
	waitFor(t, "the helper's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if _, err := r.Expand(ctx, "secret://aws/echo:x"); !errors.Is(err, secrets.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestHelperFailures: a helper that exits fails its requests with its
// reason and is started again; a request that times out frees the helper
// for the others.
func TestHelperFailures(t *testing.T) {
	t.Parallel()
	opt, pids := testHelperOptions(t, time.Minute)
	r := secrets.NewResolver(secrets.Options{Helper: opt})
	defer r.Close()
	ctx := context.Background()

	var wg sync.WaitGroup
	var slowErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, slowErr = r.Expand(ctx, "secret://aws/slow")
	}()
	_, err := r.Expand(ctx, "secret://aws/crash")
	if err == nil || !strings.Contains(err.Error(), "switchboard-secrets exited: exit status 3: boom") {
		t.Fatalf("crash: %v", err)
	}
	wg.Wait()
	if slowErr == nil || !strings.Contains(slowErr.Error(), "exit status 3") {
		t.Fatalf("a request in flight when the helper exited: %v", slowErr)
	}
	if v, err := r.Expand(ctx, "secret://aws/echo:back"); err != nil || v != "back" {
		t.Fatalf("after a crash: %q, %v", v, err)
	}
	if n := len(pids()); n != 2 {
		t.Fatalf("%d helpers started, want 2", n)
	}

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Expand(tctx, "secret://aws/slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("slow took %v past its deadline", d)
	}
	if v, err := r.Expand(ctx, "secret://aws/echo:still"); err != nil || v != "still" {
		t.Fatalf("after a timeout: %q, %v", v, err)
	}
	if n := len(pids()); n != 2 {
		t.Fatalf("%d helpers started, want 2 (a timeout does not end the helper)", n)
	}
}

func TestHelperNotFound(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	tests := []struct {
		name    string
		opt     *secrets.HelperOptions
		env     map[string]string
		wantErr string
	}{
		{name: "nowhere", wantErr: "secret://aws/x: secret://aws is read by the switchboard-secrets helper, not found at " + filepath.Join(filepath.Dir(mustExe(t)), "switchboard-secrets") + " or on PATH: install it beside switchboard (its images have it) or set SWITCHBOARD_SECRETS_HELPER to its path"},
		{name: "named, missing", env: map[string]string{secrets.HelperEnv: filepath.Join(empty, "nope")}, wantErr: "switchboard-secrets: start " + filepath.Join(empty, "nope")},
		{name: "path, missing", opt: &secrets.HelperOptions{Path: filepath.Join(empty, "gone")}, wantErr: "switchboard-secrets: start " + filepath.Join(empty, "gone")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secrets.NewResolver(secrets.Options{Helper: tt.opt, Env: envMap(tt.env)})
			defer r.Close()
			_, err := r.Expand(context.Background(), "secret://aws/x")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, secrets.ErrNotFound) {
				t.Errorf("%v is ErrNotFound: a missing helper is not a missing secret", err)
			}
		})
	}
}

func mustExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	return exe
}
