package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser drives a headless Chromium over the DevTools protocol on a
// pipe (--remote-debugging-pipe: commands on fd 3, answers and events on
// fd 4, each message a JSON object ended by a NUL byte), so no websocket
// client is needed. It keeps every URL the page requested and every error
// the page's console reported (a Content-Security-Policy violation is one).
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	session string

	mu       sync.Mutex
	next     int
	waiting  map[int]chan cdpMessage
	requests []string
	errors   []string
	loads    chan struct{}
	gone     chan struct{} // closed when Chromium's pipe closes
}

type cdpMessage struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

// chromium is the browser's binary: $SWITCHBOARD_CHROMIUM, else chromium
// on PATH (.ci/tools/chromium.sh installs it). Without it the test is
// skipped, or fails under SWITCHBOARD_FULL.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SWITCHBOARD_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		if full {
			t.Fatal("chromium is not installed; run .ci/setup (.ci/tools/chromium.sh)")
		}
		t.Skip("chromium is not installed; run .ci/tools/chromium.sh (or set SWITCHBOARD_FULL=1 to make this a failure)")
	}
	return p
}

// startBrowser starts headless Chromium with one blank page attached.
// Headless Chromium now and then comes up without ever answering on its
// pipe (browser-automation tools retry its launch for this), so a
// browser that has not answered its first command within launchWait, or
// that exited, is ended and started afresh, up to launchAttempts times;
// each failed attempt's stderr is logged.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium(t)
	for attempt := 1; attempt <= launchAttempts; attempt++ {
		b, err := launchBrowser(t, bin)
		if err == nil {
			return b
		}
		t.Logf("chromium launch %d of %d: %v", attempt, launchAttempts, err)
	}
	t.Fatalf("chromium did not come up in %d launches (each one's error and stderr are logged above)", launchAttempts)
	return nil
}

const (
	launchAttempts = 3
	launchWait     = 20 * time.Second
)

// launchBrowser starts Chromium once and attaches a blank page. On an
// error the process is ended and its user-data directory removed.
func launchBrowser(t *testing.T, bin string) (*browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "switchboard-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless=new", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
		"--user-data-dir="+dir, "--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		// No crash reporter to set up, and shared memory in /tmp where
		// /dev/shm is small (a container's is 64 MiB).
		"--disable-breakpad", "--disable-crash-reporter", "--disable-dev-shm-usage",
		// The page's refresh timer runs at its pace in a tab nobody looks at.
		"--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
		"--window-size=1280,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	var stderr strings.Builder // read once stop's Wait returned
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	evW.Close()
	b := &browser{t: t, cmd: cmd, in: cmdW, waiting: map[int]chan cdpMessage{}, loads: make(chan struct{}, 16), gone: make(chan struct{})}
	stop := func() {
		cmdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	go b.read(evR)
	var target struct{ TargetID string }
	raw, err := b.send("Target.createTarget", map[string]any{"url": "about:blank"}, launchWait)
	if err == nil {
		err = json.Unmarshal(raw, &target)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("%w; stderr:\n%s", err, tail(stderr.String(), 3000))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", tail(stderr.String(), 3000))
		}
	})
	var att struct{ SessionID string }
	b.callInto("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	for _, domain := range []string{"Page", "Network", "Runtime", "Log"} {
		b.call(domain+".enable", nil)
	}
	return b, nil
}

// read hands answers to their callers and keeps what the events say.
// When the pipe closes (Chromium exited) it closes b.gone, so a caller
// waiting for an answer learns it at once.
func (b *browser) read(r io.Reader) {
	defer close(b.gone)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch := b.waiting[m.ID]; m.ID != 0 && ch != nil {
			delete(b.waiting, m.ID)
			ch <- m
		}
		b.event(m)
		b.mu.Unlock()
	}
}

// event notes one event; b.mu is held.
func (b *browser) event(m cdpMessage) {
	var p struct {
		Request   struct{ URL string }
		Entry     struct{ Level, Source, Text, URL string }
		Type      string
		Args      []struct{ Value any }
		Exception struct{ Text string } `json:"exceptionDetails"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "Network.requestWillBeSent":
		b.requests = append(b.requests, p.Request.URL)
	case "Log.entryAdded":
		if p.Entry.Level == "error" {
			b.errors = append(b.errors, fmt.Sprintf("%s: %s (%s)", p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	case "Runtime.consoleAPICalled":
		if p.Type == "error" {
			b.errors = append(b.errors, fmt.Sprintf("console.error %v", p.Args))
		}
	case "Runtime.exceptionThrown":
		b.errors = append(b.errors, "exception: "+p.Exception.Text)
	case "Page.loadEventFired":
		select {
		case b.loads <- struct{}{}:
		default:
		}
	}
}

// call sends one command to the page (Target commands to the browser)
// and returns its result.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	res, err := b.send(method, params, 20*time.Second)
	if err != nil {
		b.t.Fatal(err)
	}
	return res
}

// send sends one command and waits up to wait for its answer.
func (b *browser) send(method string, params any, wait time.Duration) (json.RawMessage, error) {
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = b.session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-b.gone:
		return nil, fmt.Errorf("%s: chromium closed its pipe (exited) before answering", method)
	case <-time.After(wait):
		return nil, fmt.Errorf("%s: no answer from chromium in %v", method, wait)
	}
}

func (b *browser) callInto(method string, params, out any) {
	b.t.Helper()
	if err := json.Unmarshal(b.call(method, params), out); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
}

// navigate loads url and waits for its load event.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.expectLoad(func() { b.call("Page.navigate", map[string]any{"url": url}) })
}

// expectLoad runs do, which makes the page navigate (a form submitted),
// and waits for the new page's load event.
func (b *browser) expectLoad(do func()) {
	b.t.Helper()
	for len(b.loads) > 0 {
		<-b.loads
	}
	do()
	select {
	case <-b.loads:
	case <-time.After(20 * time.Second):
		b.t.Fatal("the page did not load within 20s")
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct{ Text string }
	}
	b.callInto("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("eval %s: %s", expr, res.ExceptionDetails.Text)
	}
	if out != nil {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			b.t.Fatalf("eval %s: %v (value %s)", expr, err, res.Result.Value)
		}
	}
}

// screenshot writes what the window shows (1280×1000) as a PNG to path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var shot struct{ Data string }
	b.callInto("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// seen returns the URLs the page requested and the errors it reported.
func (b *browser) seen() (requests, errors []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...), append([]string(nil), b.errors...)
}
