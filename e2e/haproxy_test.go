package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// haproxyVersion is the Debian version of HAProxy that .ci/tools/haproxy.sh
// pins; the two change together.
const haproxyVersion = "2.6.12-1+deb12u3"

// haproxy locates the HAProxy wrapper .ci/tools/haproxy.sh installs.
func haproxy(t *testing.T) string {
	t.Helper()
	return cachedTool(t, "HAProxy", filepath.Join("haproxy-"+haproxyVersion, "haproxy"))
}

// servedByHeader is the response header HAProxy sets to the name of the
// replica that answered: which replica a request reached is read from the
// load balancer, not from the replicas' own account.
const servedByHeader = "X-Served-By"

// startHAProxy runs HAProxy in the foreground in front of the replicas
// (name → switchboard) and returns its /mcp URL. Requests naming a session
// go to the replica named in the session ID's prefix while it is up, and
// by a consistent hash of the ID while it is not, so all of a session's
// requests reach one survivor; requests without a session (initialize,
// 2026-07-28) are balanced round robin (balance hdr's fallback). A request
// a replica never received (the connection refused) is retried on
// another; one it may have received is not (a tool might run twice).
func startHAProxy(t *testing.T, bin string, names []string, replicas map[string]*sb) string {
	t.Helper()
	port := freePort(t)
	var b strings.Builder
	fmt.Fprintf(&b, `global
	log stderr format raw local0 info

defaults
	mode http
	log global
	option httplog
	timeout connect 1s
	# Legacy clients hold a GET event stream open for the whole session.
	timeout client 5m
	timeout server 5m
	retries 3
	option redispatch 1
	retry-on conn-failure
	# A request on a reused connection to a replica that just died fails
	# after it was sent, which retry-on conn-failure rightly does not
	# retry; on a connection of its own it is refused, and retried.
	http-reuse never

listen mcp
	bind 127.0.0.1:%d
	balance hdr(mcp-session-id)
	hash-type consistent
	http-response set-header %s %%s
`, port, servedByHeader)
	for _, n := range names {
		fmt.Fprintf(&b, "\tuse-server %s if { req.hdr(mcp-session-id) -m beg %s. }\n", n, n)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "\tserver %s %s check inter 300ms fall 1 rise 2\n", n, replicas[n].addr)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, nil, bin, "-db", "-f", cfg)
	testutil.Eventually(t, 10*time.Second, "HAProxy listening", func() bool {
		select {
		case <-p.done:
			t.Fatalf("haproxy exited: %v\n%s\nconfig:\n%s", p.err, p.Stderr(), b.String())
		default:
		}
		c, err := dialLoopback(port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}
