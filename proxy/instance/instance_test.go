package instance_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/instance"
)

func TestRegisterListRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "switchboard")
	if rs, err := instance.List(dir); err != nil || len(rs) != 0 {
		t.Fatalf("missing dir: %v, %v; want nothing and no error", rs, err)
	}
	me := instance.Record{PID: os.Getpid(), Config: "/etc/switchboard/a.json", Listen: "stdio", Admin: "127.0.0.1:40000", Version: "v1", Started: time.Now()}
	remove, err := instance.Register(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	// A record of a process that is gone is skipped and removed.
	gone := filepath.Join(dir, "999999999-1.json")
	if err := os.WriteFile(gone, []byte(`{"pid":999999999,"admin":"127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Files that are no records are left alone.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := instance.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].PID != me.PID || rs[0].Admin != me.Admin || rs[0].Config != me.Config || rs[0].Listen != "stdio" {
		t.Fatalf("list %+v, want only %+v", rs, me)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("stale record kept: %v", err)
	}
	remove()
	if rs, _ := instance.List(dir); len(rs) != 0 {
		t.Errorf("after remove: %+v", rs)
	}
}

func TestDir(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}
	if d, err := instance.Dir(func(k string) string { return env[k] }); err != nil || d != filepath.Join("/run/user/1000", "switchboard") {
		t.Errorf("Dir with XDG_RUNTIME_DIR = %q, %v", d, err)
	}
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	t.Setenv("HOME", "/home/u")
	if d, err := instance.Dir(func(string) string { return "" }); err != nil || d == "" {
		t.Errorf("Dir without XDG_RUNTIME_DIR = %q, %v", d, err)
	}
}
