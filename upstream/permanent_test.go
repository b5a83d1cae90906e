//go:build unix

package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// expandFunc is an Expander.
type expandFunc func(string) (string, error)

func (f expandFunc) Expand(_ context.Context, v string) (string, error) { return f(v) }

// unresolved is an Expander for which every secret:// reference does not
// resolve, as proxy's is for an unset variable or a missing file.
var unresolved = expandFunc(func(v string) (string, error) {
	if strings.HasPrefix(v, "secret://") {
		return "", upstream.Permanent(errors.New(v + ": environment variable TOKEN is not set"))
	}
	return v, nil
})

func writeExec(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPermanentStartFailsOnce: a start that fails in a way trying again
// cannot change is failed at once, without restarts, logged once, and
// kept as the last error; Restart tries again. See "First contact", item 6.
func TestPermanentStartFailsOnce(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		name    string
		spec    func(t *testing.T) upstream.Spec
		expand  upstream.Expander
		wantErr string
	}{
		{name: "command not found", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "nocmd", nil)
			s.Command = "switchboard-test-no-such-command"
			return s
		}, wantErr: "executable file not found"},
		{name: "command path missing", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "nopath", nil)
			s.Command = filepath.Join(t.TempDir(), "missing", "server")
			return s
		}, wantErr: "no such file or directory"},
		{name: "permission denied", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "noexec", nil)
			s.Command = writeExec(t, "server", "#!/bin/sh\nexit 0\n", 0o644)
			return s
		}, wantErr: "permission denied"},
		{name: "interpreter missing", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "nointerp", nil)
			s.Command = writeExec(t, "server", "#!/switchboard-test/no-such-interpreter\n", 0o755)
			return s
		}, wantErr: "no such file or directory"},
		{name: "not a program", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "garbage", nil)
			s.Command = writeExec(t, "server", "\x00\x01\x02 not a program\n", 0o755)
			return s
		}, wantErr: "exec format error"},
		{name: "working directory missing", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "nodir", nil)
			s.Dir = filepath.Join(t.TempDir(), "missing")
			return s
		}, wantErr: "no such file or directory"},
		{name: "secret does not resolve", spec: func(t *testing.T) upstream.Spec {
			return childSpec(t, "nosecret", map[string]string{"TOKEN": "secret://env/TOKEN"})
		}, expand: unresolved, wantErr: "env TOKEN: secret://env/TOKEN: environment variable TOKEN is not set"},
		{name: "remote secret does not resolve", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "webnosecret", nil)
			s.Transport, s.Command, s.Env, s.URL = upstream.TransportHTTP, "", nil, "http://127.0.0.1:1/mcp"
			s.Headers = map[string]string{"Authorization": "secret://env/TOKEN"}
			return s
		}, expand: unresolved, wantErr: "headers Authorization: secret://env/TOKEN"},
		{name: "unparseable url", spec: func(t *testing.T) upstream.Spec {
			s := childSpec(t, "badurl", nil)
			s.Transport, s.Command, s.Env, s.URL = upstream.TransportHTTP, "", nil, "http://${HOST}/mcp"
			return s
		}, expand: expandFunc(func(v string) (string, error) {
			return strings.ReplaceAll(v, "${HOST}", "[::1"), nil
		}), wantErr: "url: not an absolute http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec(t)
			spec.BackoffInitial = 10 * time.Millisecond // a retry would come at once
			log, logs := testLogger(t)
			h := startHandle(t, spec, upstream.Options{Logger: log, Expander: tc.expand})
			st := waitState(t, h, 20*time.Second, upstream.StateFailed)
			if st.Restarts != 0 || st.Failures != 1 || !st.NextAttempt.IsZero() {
				t.Errorf("restarts %d, failures %d, next attempt %v: want failed at the first attempt, no retry",
					st.Restarts, st.Failures, st.NextAttempt)
			}
			if !strings.Contains(st.LastError, tc.wantErr) {
				t.Errorf("last error %q, want %q", st.LastError, tc.wantErr)
			}
			if n := strings.Count(logs.String(), "upstream failed"); n != 1 {
				t.Errorf("%d upstream failed lines, want 1", n)
			}
			if strings.Contains(logs.String(), "upstream restart") {
				t.Error("a permanent failure was logged as a restart")
			}
			_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}, nil)
			if err == nil || !strings.Contains(err.Error(), "failed: ") || strings.Contains(err.Error(), "next attempt") {
				t.Errorf("call to the failed server: %v, want failed with no next attempt", err)
			}
			// An explicit restart tries again, once.
			if !h.Restart() {
				t.Fatal("Restart refused a failed server")
			}
			testutil.Eventually(t, 20*time.Second, "the second attempt", func() bool {
				return strings.Count(logs.String(), "upstream failed") == 2
			})
			if st := waitState(t, h, 20*time.Second, upstream.StateFailed); st.Restarts != 0 || st.Failures != 1 {
				t.Errorf("after Restart: restarts %d, failures %d, want 0 and 1", st.Restarts, st.Failures)
			}
		})
	}
}

// TestTransientStartFailsAreRetried: a failure that may go away (the
// process exits during its start, the secret backend does not answer) is
// retried with backoff, as before.
func TestTransientStartFailsAreRetried(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		expand  upstream.Expander
		wantErr string
	}{
		{name: "exit during start", env: map[string]string{"UPSTREAM_TEST_EXIT": "3"},
			wantErr: "process exited before initialize finished"},
		{name: "secret backend down", env: map[string]string{"TOKEN": "secret://vault/kv/app#token"},
			expand: expandFunc(func(v string) (string, error) {
				if strings.HasPrefix(v, "secret://") {
					return "", errors.New(v + ": vault: connection refused")
				}
				return v, nil
			}), wantErr: "vault: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := childSpec(t, "flaky", tc.env)
			spec.MaxRestarts = 2
			spec.BackoffInitial = 10 * time.Millisecond
			log, logs := testLogger(t)
			h := startHandle(t, spec, upstream.Options{Logger: log, Expander: tc.expand})
			st := waitState(t, h, 20*time.Second, upstream.StateFailed)
			if st.Restarts != 2 || st.Failures != 3 {
				t.Errorf("restarts %d, failures %d, want 2 and 3", st.Restarts, st.Failures)
			}
			if !strings.Contains(st.LastError, tc.wantErr) {
				t.Errorf("last error %q, want %q", st.LastError, tc.wantErr)
			}
			if n := strings.Count(logs.String(), "upstream restart"); n != 2 {
				t.Errorf("%d upstream restart lines, want 2", n)
			}
		})
	}
}

func TestPermanentMarker(t *testing.T) {
	base := errors.New("environment variable X is not set")
	p := upstream.Permanent(base)
	if p.Error() != base.Error() || !errors.Is(p, base) || !errors.Is(p, upstream.ErrPermanent) {
		t.Errorf("Permanent(%v) = %v: want the same message, wrapping it, matching ErrPermanent", base, p)
	}
	if upstream.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	if errors.Is(base, upstream.ErrPermanent) {
		t.Error("an unmarked error matches ErrPermanent")
	}
}

// failingStore is a token store whose every Load fails with err.
type failingStore struct{ err error }

func (s failingStore) Load(oauth.Key) (*oauth.Entry, error) { return nil, s.err }
func (s failingStore) Save(oauth.Key, *oauth.Entry) error   { return s.err }
func (s failingStore) Delete(oauth.Key) error               { return s.err }
func (s failingStore) Keys() ([]oauth.Key, error)           { return nil, s.err }

// TestOAuthStoreUnreachableIsRetried: a remote server whose token store
// cannot be reached (Vault down: oauth.ErrStoreUnreachable) is started
// again with backoff, since its token may be there next time; a store
// that refuses for good (an entry the key does not open) fails the server
// at once (issue 35).
func TestOAuthStoreUnreachableIsRetried(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		name  string
		err   error
		retry bool
	}{
		{name: "unreachable", retry: true,
			err: fmt.Errorf("token store: vault: read secret/sb/tokens/web: %w", oauth.ErrStoreUnreachable)},
		{name: "wrong key", err: errors.New("token store: vault secret/sb/tokens/web does not open with this tokenStoreKey")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := childSpec(t, "web", nil)
			spec.Transport, spec.Command, spec.Env, spec.URL = upstream.TransportHTTP, "", nil, "http://127.0.0.1:1/mcp"
			spec.OAuth = &oauth.Config{Grant: oauth.GrantClientCredentials, ClientID: "c", ClientSecret: "s"}
			spec.BackoffInitial = 10 * time.Millisecond
			store := func(context.Context, *oauth.Config) (oauth.Store, error) { return failingStore{tc.err}, nil }
			h := startHandle(t, spec, upstream.Options{TokenStore: store})
			if !tc.retry {
				st := waitState(t, h, 20*time.Second, upstream.StateFailed)
				if st.Failures != 1 || !st.NextAttempt.IsZero() || !strings.Contains(st.LastError, "does not open") {
					t.Errorf("failures %d, next attempt %v, last error %q: want failed at once", st.Failures, st.NextAttempt, st.LastError)
				}
				return
			}
			var st upstream.Status
			testutil.Eventually(t, 20*time.Second, "a second start", func() bool {
				st = h.Status()
				return st.Failures >= 2
			})
			if !strings.Contains(st.LastError, "secret/sb/tokens/web") {
				t.Errorf("last error %q does not name the Vault path", st.LastError)
			}
		})
	}
}
