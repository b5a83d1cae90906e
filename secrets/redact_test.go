package secrets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/secrets"
)

func TestSetRedact(t *testing.T) {
	const v = "s3cr3t/+?&=\"<>"
	s := secrets.NewSet()
	s.Add(v, "abc", "")
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + v))
	jsonEsc, _ := json.Marshal(v)
	tests := []struct{ name, in, want string }{
		{name: "nothing", in: "hello world", want: "hello world"},
		{name: "raw", in: "token=" + v + ";", want: "token=[REDACTED];"},
		{name: "twice", in: v + v, want: "[REDACTED][REDACTED]"},
		{name: "base64 std", in: "b=" + base64.StdEncoding.EncodeToString([]byte(v)), want: "b=[REDACTED]"},
		{name: "base64 raw url", in: "b=" + base64.RawURLEncoding.EncodeToString([]byte(v)) + ".", want: "b=[REDACTED]."},
		{name: "query escaped", in: "?t=" + url.QueryEscape(v), want: "?t=[REDACTED]"},
		{name: "path escaped", in: "/p/" + url.PathEscape(v), want: "/p/[REDACTED]"},
		{name: "json escaped", in: `{"t":` + string(jsonEsc) + `}`, want: `{"t":"[REDACTED]"}`},
		{name: "go quoted", in: "t=" + strconv.Quote(v), want: `t="[REDACTED]"`},
		{name: "short values ignored", in: "abc", want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Redact(tt.in); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	t.Run("inside basic auth", func(t *testing.T) {
		got := s.Redact("Authorization: Basic " + basic)
		if strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(v))[:8]) || !strings.Contains(got, secrets.Redacted) {
			t.Fatalf("Redact = %q", got)
		}
	})
}

func TestSetBase64Alignments(t *testing.T) {
	const v = "correct-horse-battery-staple"
	s := secrets.NewSet()
	s.Add(v)
	for k := range 3 {
		blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", k) + v + "tail"))
		got := s.Redact(blob)
		if !strings.Contains(got, secrets.Redacted) {
			t.Errorf("offset %d: %q not redacted", k, blob)
		}
		dec, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(got, secrets.Redacted, ""))
		if bytes.Contains(dec, []byte("horse-battery")) {
			t.Errorf("offset %d: value survives", k)
		}
	}
}

func TestSetLongestFirst(t *testing.T) {
	s := secrets.NewSet()
	s.Add("abcd", "abcdefgh")
	if got := s.Redact("xabcdefghx"); got != "x[REDACTED]x" {
		t.Fatalf("Redact = %q", got)
	}
}

func TestSetMultiline(t *testing.T) {
	pem := "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9\nQWERTYUIOPASDF\n-----END KEY-----\n"
	s := secrets.NewSet()
	s.Add(pem)
	got := s.Redact("line: QWERTYUIOPASDF\n")
	if got != "line: [REDACTED]\n" {
		t.Fatalf("line of a multi-line value not redacted: %q", got)
	}
}

func TestSetMarkerSubstringNotRegistered(t *testing.T) {
	s := secrets.NewSet()
	s.Add("REDACTED", "[RED")
	if s.Len() != 0 {
		t.Fatalf("Len = %d, want 0", s.Len())
	}
	if got := s.Redact("x [REDACTED] y"); got != "x [REDACTED] y" {
		t.Fatalf("Redact = %q", got)
	}
}

func TestSetOverlapWithMarker(t *testing.T) {
	s := secrets.NewSet()
	s.Add("ED]x")
	for _, in := range []string{"ED]xx", "ED]xED]xx", "[REDACTED]x"} {
		if got := s.Redact(in); strings.Contains(got, "ED]x") {
			t.Errorf("Redact(%q) = %q still holds the value", in, got)
		}
	}
}

func TestSetNil(t *testing.T) {
	var s *secrets.Set
	if got := s.Redact("x"); got != "x" {
		t.Fatal(got)
	}
	var zero secrets.Set
	zero.Add("zero-value-set")
	if got := zero.Redact("a zero-value-set"); got != "a [REDACTED]" {
		t.Fatal(got)
	}
}

func TestSetConcurrent(t *testing.T) {
	s := secrets.NewSet()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 50 {
				s.Add(fmt.Sprintf("value-%d-%d", i, j))
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				_ = s.Redact("value-1-1 value-7-49")
			}
		}()
	}
	wg.Wait()
	if got := s.Redact("value-1-1 value-7-49"); got != "[REDACTED] [REDACTED]" {
		t.Fatal(got)
	}
}

func TestWriterSplitWrites(t *testing.T) {
	s := secrets.NewSet()
	s.Add("supersecretvalue")
	var out bytes.Buffer
	w := s.Writer(&out)
	for _, chunk := range []string{"a line with super", "secret", "value in it\nsecond ", "supersecretvalue\n"} {
		n, err := w.Write([]byte(chunk))
		if err != nil || n != len(chunk) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got, want := out.String(), "a line with [REDACTED] in it\nsecond [REDACTED]\n"; got != want {
		t.Fatalf("out = %q, want %q", got, want)
	}
	if _, err := w.Write([]byte("tail supersecret")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("value")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasSuffix(got, "tail [REDACTED]") {
		t.Fatalf("after Close: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestWriterIdleFlush(t *testing.T) {
	s := secrets.NewSet()
	s.Add("idle-secret")
	var out syncBuffer
	w := s.Writer(&out)
	defer w.Close()
	if _, err := w.Write([]byte("prompt idle-secret> ")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for out.String() == "" {
		if time.Now().After(deadline) {
			t.Fatal("partial line never flushed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := out.String(); got != "prompt [REDACTED]> " {
		t.Fatalf("out = %q", got)
	}
}

// FuzzRedact checks that after Add(v), Redact of any text embedding v holds
// no occurrence of v.
func FuzzRedact(f *testing.F) {
	f.Add("password123", "before ", " after")
	f.Add("ED]x", "", "x")
	f.Add("abab", "ab", "ab")
	f.Add("tok=", "[REDACT", "ED]")
	f.Add("aaaa", "aaa", "aaaaa")
	f.Fuzz(func(t *testing.T, v, pre, post string) {
		s := secrets.NewSet()
		s.Add(v)
		in := pre + v + post
		got := s.Redact(in)
		if s.Len() == 0 {
			// v was too short or part of the marker: nothing to check.
			if got != in {
				t.Fatalf("empty set changed %q to %q", in, got)
			}
			return
		}
		if strings.Contains(got, v) {
			t.Fatalf("Redact(%q) = %q still contains %q", in, got, v)
		}
	})
}

func BenchmarkRedact(b *testing.B) {
	line := `2024-01-01T00:00:00.000Z [INFO]  switchboard.upstream.github: upstream ready: tools=42 duration=12ms session_id=3f9c2a7e-1d1b-4c55-9f0e-8d3e2c1a0b9f`
	b.Run("empty", func(b *testing.B) {
		s := secrets.NewSet()
		for b.Loop() {
			_ = s.Redact(line)
		}
	})
	b.Run("100 values", func(b *testing.B) {
		s := secrets.NewSet()
		for i := range 100 {
			s.Add(fmt.Sprintf("ghp_%032d", i))
		}
		for b.Loop() {
			_ = s.Redact(line)
		}
	})
}

func TestRedactSpreadAndHex(t *testing.T) {
	const v = "sk-live/9fQ+2xZ=env&LEAK?Wq7"
	s := secrets.NewSet()
	s.Add(v)
	h := hex.EncodeToString([]byte(v))
	for _, in := range []string{
		"hex " + h + " end",
		"HEX " + strings.ToUpper(h) + " end",
		"split " + v[:10] + "\n" + v[10:] + " end",
		"spaced " + strings.Join(strings.Split(v, ""), " ") + " end",
		"zw " + strings.Join(strings.Split(v, ""), "\u200b") + " end",
		"crlf " + v[:5] + "\r\n  " + v[5:] + " end",
		"hex split " + h[:20] + "\n" + h[20:] + " end",
	} {
		got := s.Redact(in)
		if strings.Contains(strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\u200b' {
				return -1
			}
			return r
		}, strings.ToLower(got)), strings.ToLower(v[:8])) || strings.Contains(strings.ToLower(got), h[:16]) || !strings.Contains(got, secrets.Redacted) || !strings.HasSuffix(got, " end") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
	// Words that merely follow each other are not a secret.
	for _, in := range []string{"sk-live is a prefix, and 9fQ is not", "plain text with spaces"} {
		if got := s.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

func BenchmarkRedactProse(b *testing.B) {
	s := secrets.NewSet()
	s.Add("sk-live/9fQ+2xZ=env&LEAK?Wq7", "ghp_Fi1e+S3cret/ValUE=with&q7")
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Redact(text)
	}
}

func TestRedactJoined(t *testing.T) {
	const v = "sk-live/9fQ+2xZ=env&LEAK?Wq7"
	s := secrets.NewSet()
	s.Add(v)
	parts := []string{"first " + v[:9], v[9:20], v[20:] + " last", "untouched"}
	got := s.RedactJoined(parts)
	joined := strings.Join(got, "")
	if strings.Contains(joined, v[:9]) || strings.Contains(joined, v[9:20]) || strings.Contains(joined, v[20:]) {
		t.Errorf("RedactJoined(%q) = %q: a piece of the secret is left", parts, got)
	}
	if !strings.HasPrefix(got[0], "first ") || !strings.HasSuffix(got[2], " last") || got[3] != "untouched" {
		t.Errorf("RedactJoined(%q) = %q: more than the secret changed", parts, got)
	}
	clean := []string{"a", "b"}
	if got := s.RedactJoined(clean); &got[0] != &clean[0] {
		t.Error("RedactJoined copied parts that hold no secret")
	}
}

// TestRedactSpreadInvalidUTF8: invalid bytes next to a spread-out secret
// neither panic nor move the replaced span off the secret.
func TestRedactSpreadInvalidUTF8(t *testing.T) {
	const v = "sk-live/9fQ+2xZ=env&LEAK?Wq7"
	s := secrets.NewSet()
	s.Add(v)
	for _, in := range []string{
		"\xff" + v[:10] + "\n" + v[10:] + "\xfe",
		v[:10] + " \xff" + v[10:],
		"a\xc3" + strings.Join(strings.Split(v, ""), " "),
	} {
		got := s.Redact(in)
		if strings.Contains(got, v[:8]) || strings.Contains(got, v[len(v)-8:]) {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}
