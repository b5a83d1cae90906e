package logbridge_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/internal/logbridge"
)

func TestBridge(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	sl := slog.New(logbridge.New(log, false))
	sl.Debug("hidden")
	sl.With("a", 1).WithGroup("g").Warn("shown", "b", "two")
	out := buf.String()
	if strings.Contains(out, "hidden") {
		t.Errorf("debug line passed an info logger: %q", out)
	}
	for _, want := range []string{"[WARN]", "shown", "a=1", "g.b=two"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

func TestDemote(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug})
	slog.New(logbridge.New(log, true)).Info("session connected")
	if !strings.Contains(buf.String(), "[DEBUG]") {
		t.Errorf("info not demoted: %q", buf.String())
	}
}
