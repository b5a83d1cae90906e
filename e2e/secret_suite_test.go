package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The planted secrets: one from the environment, one from a file. Both
// hold characters that URL-escaping and base64's two alphabets change.
const (
	plantedEnv  = "sk-live/9fQ+2xZ=env&LEAK?Wq7"
	plantedFile = "ghp_Fi1e+S3cret/ValUE=with&q7"
)

// secretPayloads are the ways an upstream may echo a secret: raw, in hex
// (both cases), base64 (both alphabets, padded or not), URL-escaped, split
// across two lines, spaced out and interleaved with zero-width characters.
func secretPayloads(secret string) []string {
	h := len(secret) / 2
	spaced := strings.Join(strings.Split(secret, ""), " ")
	zw := strings.Join(strings.Split(secret, ""), "\u200b")
	return []string{
		secret,
		"token=" + secret + " end",
		hex.EncodeToString([]byte(secret)),
		strings.ToUpper(hex.EncodeToString([]byte(secret))),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)),
		url.QueryEscape(secret),
		url.PathEscape(secret),
		secret[:h] + "\n" + secret[h:],
		spaced,
		zw,
	}
}

// leakForms are what must never appear: the secret and its encodings, in
// any case for hex.
func leakForms(secret string) []string {
	return []string{
		secret,
		hex.EncodeToString([]byte(secret)),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)),
		strings.TrimRight(base64.RawURLEncoding.EncodeToString([]byte(secret)), "="),
		strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(secret)), "="),
		url.QueryEscape(secret),
		url.PathEscape(secret),
	}
}

// squeeze drops whitespace and invisible format characters, so that a
// secret split across lines, spaced out or interleaved reads whole again.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// percentRE is one percent-escape, of any byte, in either case.
var percentRE = regexp.MustCompile(`%[0-9a-fA-F]{2}`)

// percentReadings is s and its percent-decoded readings (up to three
// rounds, for an escape escaped again): how a client may read a URI.
func percentReadings(s string) []string {
	out := []string{s}
	for range 3 {
		d := percentRE.ReplaceAllStringFunc(s, func(m string) string {
			b, _ := hex.DecodeString(m[1:])
			return string(b)
		})
		if d == s {
			break
		}
		out, s = append(out, d), d
	}
	return out
}

// leaks names the planted secrets (in any encoding) found in s or in a
// percent-decoded reading of it.
func leaks(s string) []string {
	var found []string
	for level, reading := range percentReadings(s) {
		sq := strings.ToLower(squeeze(reading))
		for name, secret := range map[string]string{"env": plantedEnv, "file": plantedFile} {
			for i, f := range leakForms(secret) {
				if strings.Contains(sq, strings.ToLower(squeeze(f))) {
					found = append(found, fmt.Sprintf("%s secret (form %d, percent-decoded %d times)", name, i, level))
				}
			}
		}
	}
	return found
}

// TestSecretsNeverLeak: the upstream echoes the planted secret://env and
// secret://file values, raw and encoded, in every location; nothing a
// client receives holds them, in any message or across the strings of one
// message (split across blocks), and neither do switchboard's logs at trace
// level, /status, /metrics or the audit log.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, []byte(plantedFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.log")
	var payloads []string
	for _, s := range []string{plantedEnv, plantedFile} {
		payloads = append(payloads, secretPayloads(s)...)
	}
	extra := map[string]any{
		"logLevel": "trace",
		"audit":    map[string]any{"enabled": true, "file": audit, "arguments": true},
		// The secrets are resolved for a server that uses them: that is
		// what registers them with the redactor.
		"mcpServers": nil,
	}
	delete(extra, "mcpServers")
	checks := 0
	failed, s := driveLocationsWith(t, extra, []string{"SB_PLANTED=" + plantedEnv},
		map[string]any{"SB_TOKEN": "secret://env/SB_PLANTED", "SB_FILE_TOKEN": "secret://file/" + secretFile},
		payloads, func(_ int, r received) []string {
			var bad []string
			for _, raw := range r.msgs {
				var v any
				if json.Unmarshal(raw, &v) != nil {
					continue
				}
				var all strings.Builder
				eachString(v, "", func(path, s string) {
					checks++
					// A model reads the texts of consecutive blocks one
					// after the other: join them without their boundary
					// markers.
					if strings.HasSuffix(path, ".text") {
						all.WriteString(boundaryBodies(s))
					}
					for _, l := range leaks(s) {
						bad = append(bad, fmt.Sprintf("%s: %s in %.100q", path, l, s))
					}
				})
				// Split across blocks or fields of one message.
				if l := leaks(all.String()); len(l) > 0 && len(bad) == 0 {
					bad = append(bad, fmt.Sprintf("across the strings of one message: %v", l))
				}
			}
			return bad
		})
	logByLocation(t, failed, "leaking")

	// switchboard's own outputs.
	outputs := map[string]string{"stderr (trace)": s.proc.Stderr()}
	for _, path := range []string{"/status", "/metrics"} {
		resp, err := http.Get("http://" + s.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		outputs[path] = string(b)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	outputs["audit log"] = string(b)
	inOutputs := 0
	for name, out := range outputs {
		for _, line := range strings.Split(out, "\n") {
			if l := leaks(line); len(l) > 0 {
				inOutputs++
				if inOutputs <= 5 {
					t.Errorf("%s: %v in %.160q", name, l, line)
				}
			}
		}
	}
	t.Logf("%d secret payloads × %d locations (+4 lists and the resource-context prompt): %d strings checked, %d (payload, location) pairs leaking; %d leaking lines in logs, /status, /metrics and audit (%d bytes looked at)",
		len(payloads), len(hostileLocations()), checks, sum(failed), inOutputs, len(outputs["stderr (trace)"])+len(outputs["/status"])+len(outputs["/metrics"])+len(outputs["audit log"]))
}

// boundaryBodies is s with every switchboard boundary replaced by its body
// (the marker lines and the notice line left out).
func boundaryBodies(s string) string {
	for {
		m := realOpenRE.FindStringSubmatchIndex(s)
		if m == nil {
			return s
		}
		end := "\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\"" + s[m[2]:m[3]] + "\">>>"
		j := strings.Index(s[m[1]:], end)
		if j < 0 {
			return s
		}
		body := s[m[1] : m[1]+j]
		if _, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(body, "SECURITY NOTICE:") {
			body = rest
		} else if strings.HasPrefix(body, "SECURITY NOTICE:") {
			body = ""
		}
		s = s[:m[0]] + body + s[m[1]+j+len(end):]
	}
}

// TestSecretsInChildStderr: a server prints the planted secret on stderr
// across two lines, and at the 4096-byte cut of a long line; no 8 bytes in
// a row of the secret appear in switchboard's log or in /status.
func TestSecretsInChildStderr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := len(plantedEnv) / 2
	out := "token: " + plantedEnv[:h] + "\n" + plantedEnv[h:] + " (continued)\n" +
		strings.Repeat("x", 4096-10) + plantedEnv + "\n" + "last line\n"
	errFile := filepath.Join(dir, "stderr.txt")
	if err := os.WriteFile(errFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := hostileServer(t, toolsScript("read"))
	srv["args"] = append(srv["args"].([]string), "--stderr-file", errFile)
	srv["env"] = map[string]any{"SB_TOKEN": "secret://env/SB_PLANTED"}
	s := startSwitchboardIn(t, dir, dir, map[string]any{"logLevel": "trace", "mcpServers": map[string]any{"h": srv}}, []string{"SB_PLANTED=" + plantedEnv})
	testutil.Eventually(t, 20*time.Second, "the stderr lines logged", func() bool { return strings.Contains(s.proc.Stderr(), "last line") })
	resp, err := http.Get("http://" + s.admin + "/status")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pieces := 0
	for name, text := range map[string]string{"log": s.proc.Stderr(), "/status": string(status)} {
		for i := 0; i+8 <= len(plantedEnv); i++ {
			if strings.Contains(text, plantedEnv[i:i+8]) {
				pieces++
				t.Errorf("%s holds %q, a piece of the secret", name, plantedEnv[i:i+8])
				break
			}
		}
	}
	t.Logf("secret across two stderr lines and at the line cut: %d outputs hold a piece of it", pieces)
}

// TestCleanedStructuredContentStillValid: structured content that the
// boundary changed (here a secret redacted) is checked against the tool's
// output schema; one that no longer matches is a tool error that says so,
// and an unchanged one passes.
func TestCleanedStructuredContentStillValid(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "properties": map[string]any{"token": map[string]any{"type": "string", "pattern": "^[^\\[]*$"}}}
	script := map[string]any{"answers": []map[string]any{
		{"method": "tools/list", "result": map[string]any{"tools": []any{
			map[string]any{"name": "leaky", "inputSchema": map[string]any{"type": "object"}, "outputSchema": schema},
			map[string]any{"name": "fine", "inputSchema": map[string]any{"type": "object"}, "outputSchema": schema},
		}}},
		{"method": "tools/call", "name": "leaky", "result": map[string]any{"content": []any{}, "structuredContent": map[string]any{"token": plantedEnv}}},
		{"method": "tools/call", "name": "fine", "result": map[string]any{"content": []any{}, "structuredContent": map[string]any{"token": "plain"}}},
	}}
	srv := hostileServer(t, script)
	srv["env"] = map[string]any{"SB_TOKEN": "secret://env/SB_PLANTED"}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{"mcpServers": map[string]any{"h": srv}}, []string{"SB_PLANTED=" + plantedEnv})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_h_leaky", "mcp_h_fine")
	res := mustCall(t, cs, "mcp_h_leaky", map[string]any{})
	if !res.IsError || !strings.Contains(textOf(res), "no longer matches its output schema") || strings.Contains(js(res), plantedEnv) {
		t.Errorf("redacted structured content: %s", js(res))
	}
	if res := mustCall(t, cs, "mcp_h_fine", map[string]any{}); res.IsError {
		t.Errorf("unchanged structured content: %s", js(res))
	}
}
