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
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium(t)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless=new", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
		"--user-data-dir="+t.TempDir(), "--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		// The page's refresh timer runs at its pace in a tab nobody looks at.
		"--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
		"--window-size=1280,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	var stderr strings.Builder // read once Wait returned
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	evW.Close()
	b := &browser{t: t, cmd: cmd, in: cmdW, waiting: map[int]chan cdpMessage{}, loads: make(chan struct{}, 16)}
	t.Cleanup(func() {
		cmdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", tail(stderr.String(), 30))
		}
	})
	go b.read(evR)
	var target struct{ TargetID string }
	b.callInto("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.callInto("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	for _, domain := range []string{"Page", "Network", "Runtime", "Log"} {
		b.call(domain+".enable", nil)
	}
	return b
}

// read hands answers to their callers and keeps what the events say.
func (b *browser) read(r io.Reader) {
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
		b.t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			b.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		return m.Result
	case <-time.After(20 * time.Second):
		b.t.Fatalf("%s: no answer from chromium in 20s", method)
	}
	return nil
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
