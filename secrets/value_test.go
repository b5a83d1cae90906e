package secrets_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/secrets"
)

const hidden = "hunter2-value"

func TestValueFmt(t *testing.T) {
	v := secrets.NewValue(hidden)
	if v.Reveal() != hidden {
		t.Fatal("Reveal")
	}
	type wrapper struct {
		Name string
		Pass secrets.Value
		Ptr  *secrets.Value
	}
	w := wrapper{Name: "n", Pass: v, Ptr: &v}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%-8v"} {
		for _, arg := range []any{v, &v, w, []secrets.Value{v}, map[string]secrets.Value{"k": v}} {
			got := fmt.Sprintf(verb, arg)
			if strings.Contains(got, hidden) || !strings.Contains(got, "[redacted]") {
				t.Errorf("Sprintf(%q, %T) = %q", verb, arg, got)
			}
		}
	}
	if got := fmt.Sprint(v); got != "[redacted]" {
		t.Errorf("Sprint = %q", got)
	}
	if got := fmt.Sprintf("%q", v); got != `"[redacted]"` {
		t.Errorf("%%q = %q", got)
	}
}

func TestValueJSON(t *testing.T) {
	v := secrets.NewValue(hidden)
	b, err := json.Marshal(map[string]any{"v": v, "p": &v, "s": []secrets.Value{v}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), hidden) || strings.Count(string(b), `"[redacted]"`) != 3 {
		t.Fatalf("json = %s", b)
	}
	txt, _ := v.MarshalText()
	if string(txt) != "[redacted]" {
		t.Fatalf("MarshalText = %s", txt)
	}
}

func TestValueSlog(t *testing.T) {
	v := secrets.NewValue(hidden)
	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(h(&buf)).Info("msg", "token", v, "group", slog.GroupValue(slog.Any("inner", v)))
		if out := buf.String(); strings.Contains(out, hidden) || strings.Count(out, "[redacted]") != 2 {
			t.Errorf("%s: %s", name, out)
		}
	}
}

func TestValueHclog(t *testing.T) {
	v := secrets.NewValue(hidden)
	for _, jsonFormat := range []bool{false, true} {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: jsonFormat, Level: hclog.Debug})
		log.Info("upstream start", "token", v, "ptr", &v)
		log.With("token", v).Warn("with field")
		out := buf.String()
		if strings.Contains(out, hidden) || strings.Count(out, "[redacted]") != 3 {
			t.Errorf("json=%v: %s", jsonFormat, out)
		}
	}
}

func TestValueZero(t *testing.T) {
	var v secrets.Value
	if !v.IsZero() || v.Reveal() != "" || secrets.NewValue("x").IsZero() {
		t.Fatal("IsZero")
	}
}
