package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// seq numbers the records of one process.
var seq atomic.Int64

// Record is what a running switchboard tells about itself.
type Record struct {
	PID int `json:"pid"`
	// Config is the absolute path of the config file; empty for the
	// embedded demo config.
	Config string `json:"config"`
	// Listen is the bound MCP address, or "stdio".
	Listen string `json:"listen"`
	// Admin is the bound admin address (/healthz, /readyz, /status).
	Admin   string    `json:"admin"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
}

// Dir is where records live: $XDG_RUNTIME_DIR/switchboard when that is
// set (a per-user directory cleared at logout), else the user's cache
// directory's switchboard/instances. getenv is os.Getenv in production.
func Dir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "switchboard"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("instance dir: %w", err)
	}
	return filepath.Join(d, "switchboard", "instances"), nil
}

// Register writes r into dir and returns a func that removes it again.
func Register(dir string, r Record) (remove func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("instance register: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("instance register: %w", err)
	}
	// A process normally serves one proxy; tests serve several.
	path := filepath.Join(dir, fmt.Sprintf("%d-%d.json", r.PID, seq.Add(1)))
	tmp, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return nil, fmt.Errorf("instance register: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("instance register: %w", werr)
	}
	return func() { os.Remove(path) }, nil
}

// List returns the records in dir of processes that are still running,
// oldest first, and removes those of processes that are gone. A missing
// dir is no error: nothing registered yet.
func List(dir string) ([]Record, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("instance list: %w", err)
	}
	var out []Record
	for _, e := range entries {
		name := e.Name()
		base, ok := strings.CutSuffix(name, ".json")
		pidText, _, _ := strings.Cut(base, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) != nil || r.PID != pid {
			continue
		}
		if !alive(pid) {
			os.Remove(path)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return a.Started.Compare(b.Started) })
	return out, nil
}
