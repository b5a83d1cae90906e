package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The tests in this file pin issue 41: the admin listener's status page,
// driven in headless Chromium.

const pageToken = "page-admin-token"

// pageServer is one server's row on the status page.
type pageServer struct {
	State, PID, Catalog, Text string
}

// pageServers reads the server rows of the page in the browser.
func pageServers(b *browser) map[string]pageServer {
	b.t.Helper()
	var out map[string]pageServer
	b.eval(`Object.fromEntries([...document.querySelectorAll("tbody.server")].map(e =>
		[e.dataset.server, {State: e.dataset.state, PID: e.dataset.pid, Catalog: e.dataset.catalog, Text: e.textContent}]))`, &out)
	return out
}

// signIn submits the page's token form with token and waits for the page
// it lands on.
func signIn(b *browser, token string) {
	b.t.Helper()
	b.expectLoad(func() {
		b.eval(fmt.Sprintf(`(() => { const f = document.querySelector("form.login");
			f.token.value = %q; f.submit(); return true })()`, token), nil)
	})
}

// screenshotTo writes the page to dir/name when SWITCHBOARD_SCREENSHOTS
// names a directory (docs/ for the pictures in docs/status-page.md).
func screenshotTo(b *browser, name string) {
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // relative to the repository, not e2e/
	}
	b.screenshot(filepath.Join(dir, name))
}

// TestStatusPage renders the status page of a config with a healthy, a
// failing (its command exits) and a partial server in a real browser:
// without the admin token it shows health only; signed in, each server
// in its state with its stderr and failing list; the restart button
// restarts the server (a new PID in /status); the page shows a crash
// within 2 s without a reload; the tool filter works with and without
// JavaScript; and the page requests nothing from another origin and
// reports no Content-Security-Policy violation or script error.
func TestStatusPage(t *testing.T) {
	chromium(t)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"good": map[string]any{"command": fixture},
			"bad":  map[string]any{"command": "sh", "args": []string{"-c", "echo 'boom: cannot start' >&2; exit 3"}},
			"part": map[string]any{"command": fixture, "args": []string{"--fail-list", "prompts/list"}},
		},
		"tools": map[string]any{"deny": []string{"mcp_part_huge"}},
		"admin": map[string]any{"reloadToken": pageToken},
	}
	s := startSwitchboard(t, cfg)
	s.waitPartial(t, "part", 20*time.Second)
	testutil.Eventually(t, 20*time.Second, "good ready, bad failing with its stderr", func() bool {
		good, bad := s.serverStatus(t, "good"), s.serverStatus(t, "bad")
		tail, _ := bad["stderrTail"].([]any)
		return good["state"] == "ready" && bad["state"] != "ready" && len(tail) > 0
	})
	base := "http://" + s.admin + "/"
	b := startBrowser(t)

	// Without the token: health only.
	b.navigate(base)
	var outside struct{ Login, Servers bool }
	b.eval(`({Login: !!document.querySelector("form.login"), Servers: !!document.getElementById("servers")})`, &outside)
	var text string
	b.eval(`document.body.textContent`, &text)
	if !outside.Login || outside.Servers || strings.Contains(text, "boom") || strings.Contains(text, "mcp_good_echo") {
		t.Fatalf("the page without the token shows more than health (login form %v, servers %v):\n%s", outside.Login, outside.Servers, text)
	}
	signIn(b, "wrong-token")
	if b.eval(`document.body.textContent`, &text); !strings.Contains(text, "That is not the admin token") {
		t.Fatalf("a wrong token: the page says\n%s", text)
	}
	signIn(b, pageToken)

	// Each server in its state.
	rows := pageServers(b)
	if g := rows["good"]; g.State != "ready" || g.Catalog != "complete" || g.PID == "0" {
		t.Errorf("good on the page: %+v", g)
	}
	if p := rows["part"]; p.State != "ready" || p.Catalog != "partial" || !strings.Contains(p.Text, "prompts/list failed") ||
		!strings.Contains(p.Text, "fixture: prompts/list is failing (--fail-list)") {
		t.Errorf("part on the page: %+v", p)
	}
	if bd := rows["bad"]; (bd.State != "restarting" && bd.State != "failed") || !strings.Contains(bd.Text, "boom: cannot start") {
		t.Errorf("bad on the page: %+v", bd)
	}
	screenshotTo(b, "status-failing.png")

	// The tools: hidden by policy shown as such; the filter with and
	// without JavaScript.
	var hidden string
	b.eval(`[...document.querySelectorAll("#tools tbody tr")].find(r => r.cells[0].textContent == "mcp_part_huge").cells[3].textContent`, &hidden)
	if hidden != "hidden: policy" {
		t.Errorf("mcp_part_huge shown as %q, want hidden: policy", hidden)
	}
	var visible []string
	b.eval(`(() => { const q = document.getElementById("q"); q.value = "good_ech"; q.dispatchEvent(new Event("input"));
		return [...document.querySelectorAll("#tools tbody tr")].filter(r => !r.hidden).map(r => r.cells[0].textContent) })()`, &visible)
	if strings.Join(visible, ",") != "mcp_good_echo" {
		t.Errorf("the filter good_ech shows %v, want mcp_good_echo", visible)
	}
	resp, err := httpGetCookie(base+"?q=good_ech", b)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(resp, "<td>mcp_"); n != 1 || !strings.Contains(resp, "<td>mcp_good_echo</td>") {
		t.Errorf("GET ?q=good_ech (no script) lists %d tools, want mcp_good_echo alone", n)
	}

	// A restart from the page.
	b.navigate(base)
	pid0 := s.serverStatus(t, "good")["pid"]
	b.expectLoad(func() { b.eval(`document.querySelector('[data-server="good"] button.restart').click(), true`, nil) })
	if b.eval(`document.body.textContent`, &text); !strings.Contains(text, "Restarted good.") {
		t.Errorf("after the restart button the page says:\n%s", text)
	}
	var pid1 float64
	testutil.Eventually(t, 15*time.Second, "good restarted with a new PID", func() bool {
		st := s.serverStatus(t, "good")
		pid1, _ = st["pid"].(float64)
		return st["state"] == "ready" && pid1 != 0 && st["pid"] != pid0
	})

	// A crash shows within 2 s, by the page's own refresh.
	testutil.Eventually(t, 5*time.Second, "the page shows the new PID", func() bool {
		return pageServers(b)["good"].PID == fmt.Sprint(pid1)
	})
	if err := syscall.Kill(int(pid1), syscall.SIGKILL); err != nil {
		t.Fatalf("kill good's process %v: %v", pid1, err)
	}
	killed := time.Now()
	for {
		g := pageServers(b)["good"]
		if g.State != "ready" || g.PID != fmt.Sprint(pid1) {
			t.Logf("the page showed the crash after %s: %+v", time.Since(killed).Round(time.Millisecond), g.State)
			break
		}
		if time.Since(killed) > 2*time.Second {
			t.Fatalf("2s after the crash the page still shows good ready with PID %v", pid1)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Nothing from another origin, no CSP violation, no script error.
	checkSameOrigin(t, b, base)
}

// checkSameOrigin fails the test for a request the page made to another
// origin than base's, and for any error its console reported.
func checkSameOrigin(t *testing.T, b *browser, base string) {
	t.Helper()
	reqs, errs := b.seen()
	for _, u := range reqs {
		if !strings.HasPrefix(u, base) {
			t.Errorf("the page requested %s, outside %s", u, base)
		}
	}
	for _, e := range errs {
		t.Errorf("the page reported: %s", e)
	}
	if len(reqs) < 4 {
		t.Errorf("the network log holds %d requests, want the page, its style, its script and refreshes: %v", len(reqs), reqs)
	}
}

// httpGetCookie fetches url with the browser's cookies, as a browser
// without JavaScript would.
func httpGetCookie(url string, b *browser) (string, error) {
	var cookies struct {
		Cookies []struct{ Name, Value string }
	}
	b.callInto("Network.getCookies", map[string]any{"urls": []string{url}}, &cookies)
	req, err := newRequest(context.Background(), url)
	if err != nil {
		return "", err
	}
	for _, c := range cookies.Cookies {
		req.Header.Add("Cookie", c.Name+"="+c.Value)
	}
	return doRequest(req)
}

// TestStatusPageHealthy renders a config whose servers are all up, after
// a few calls: every server ready, and the default view's calls per
// minute counted and drawn.
func TestStatusPageHealthy(t *testing.T) {
	// The browser first: the calls below must fall in the minute the
	// page counts, however long its launch takes.
	b := startBrowser(t)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"files":  map[string]any{"command": fixture},
			"search": map[string]any{"command": fixture},
		},
		"admin": map[string]any{"reloadToken": pageToken},
	}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "both servers listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_files_echo"] != nil && tools["mcp_search_echo"] != nil
	})
	for i := range 5 {
		mustCall(t, cs, "mcp_files_echo", map[string]any{"text": fmt.Sprint(i)})
	}
	base := "http://" + s.admin + "/"
	b.navigate(base)
	signIn(b, pageToken)
	for name, r := range pageServers(b) {
		if r.State != "ready" || r.Catalog != "complete" {
			t.Errorf("%s on the page: %+v", name, r)
		}
	}
	var calls string
	b.eval(`document.querySelector('[data-view="default"] td.calls').textContent`, &calls)
	if calls != "5" {
		t.Errorf("calls/min of the default view %q, want 5", calls)
	}
	screenshotTo(b, "status-healthy.png")
	checkSameOrigin(t, b, base)
}

func newRequest(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}

func doRequest(req *http.Request) (string, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return readAll(resp.Body), nil
}
