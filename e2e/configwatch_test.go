package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// What the config watch follows besides edits in the config's own
// directory (TestReloadEveryFileChangeKind): symlinks into other
// directories and directories replaced whole. See issue 39.

// watchConfig is a config of fixture servers with the given names.
func watchConfig(servers ...string) map[string]any {
	m := map[string]any{}
	for _, s := range servers {
		m[s] = fixtureServer(s)
	}
	return map[string]any{"mcpServers": m}
}

// writeConfigAt writes cfg to path, creating its directory.
func writeConfigAt(t *testing.T, path string, cfg any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serveConfig starts switchboard on the config at path.
func serveConfig(t *testing.T, path string) *sb {
	t.Helper()
	s := &sb{dir: t.TempDir(), config: path}
	ready := filepath.Join(t.TempDir(), "ready")
	s.proc = start(t, s.dir, nil, switchboard, "serve", "--config", path, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ready-file", ready)
	parts := strings.Fields(waitFile(t, ready, 30*time.Second, s.proc))
	s.addr, s.admin = parts[0], parts[1]
	return s
}

// waitServers waits until the default view lists the echo tool of
// exactly the named fixture servers (of a to d).
func (s *sb) waitServers(t *testing.T, what string, servers ...string) {
	t.Helper()
	cs := connectHTTP(t, "http://"+s.addr+"/mcp", nil)
	defer cs.Close()
	want := strings.Join(servers, ",")
	testutil.Eventually(t, 10*time.Second, what, func() bool {
		tools := listTools(t, cs)
		var have []string
		for _, name := range []string{"a", "b", "c", "d"} {
			if tools["mcp_"+name+"_echo"] != nil {
				have = append(have, name)
			}
		}
		return strings.Join(have, ",") == want
	})
}

// swapConfigMap does what the kubelet does to a ConfigMap volume: a new
// timestamped directory, a new ..data symlink renamed over the old one,
// the old directory removed.
func swapConfigMap(t *testing.T, dir, version string, cfg any) {
	t.Helper()
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	writeConfigAt(t, filepath.Join(dir, version, "config.json"), cfg)
	must(t, os.Symlink(version, filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	if old != "" {
		must(t, os.RemoveAll(filepath.Join(dir, old)))
	}
}

// TestConfigWatchConfigMapThroughSymlink: --config is a symlink to a file
// of a ConfigMap volume mounted elsewhere (config.json ->
// ..data/config.json, ..data -> a timestamped directory): every swap of
// the volume is applied, the second one too (the first removed the
// directory the file was in).
func TestConfigWatchConfigMapThroughSymlink(t *testing.T) {
	cm := t.TempDir()
	swapConfigMap(t, cm, "..2026_01_01_v1", watchConfig("a"))
	must(t, os.Symlink(filepath.Join("..data", "config.json"), filepath.Join(cm, "config.json")))
	path := filepath.Join(t.TempDir(), "config.json")
	must(t, os.Symlink(filepath.Join(cm, "config.json"), path))

	s := serveConfig(t, path)
	s.waitServers(t, "a listed", "a")

	swapConfigMap(t, cm, "..2026_01_01_v2", watchConfig("a", "b"))
	s.waitGen(t, 2)
	s.waitServers(t, "a and b listed after the first swap", "a", "b")

	swapConfigMap(t, cm, "..2026_01_01_v3", watchConfig("b"))
	s.waitGen(t, 3)
	s.waitServers(t, "b alone listed after the second swap", "b")
}

// TestConfigWatchSymlinkIntoOtherDirectory: --config is a symlink into
// another directory, whose file an editor replaces by rename: applied,
// and again after the link is pointed at another file.
func TestConfigWatchSymlinkIntoOtherDirectory(t *testing.T) {
	target := filepath.Join(t.TempDir(), "real.json")
	writeConfigAt(t, target, watchConfig("a"))
	path := filepath.Join(t.TempDir(), "config.json")
	must(t, os.Symlink(target, path))

	s := serveConfig(t, path)
	s.waitServers(t, "a listed", "a")

	replaceByRename(t, target, watchConfig("a", "b"))
	s.waitGen(t, 2)
	s.waitServers(t, "a and b listed after the target was replaced", "a", "b")

	// The link moves to a file in a third directory; an edit there applies.
	other := filepath.Join(t.TempDir(), "other.json")
	writeConfigAt(t, other, watchConfig("a", "b", "c"))
	must(t, os.Symlink(other, path+".new"))
	must(t, os.Rename(path+".new", path))
	s.waitGen(t, 3)
	s.waitServers(t, "c listed after the link moved", "a", "b", "c")
	replaceByRename(t, other, watchConfig("b", "c", "d"))
	s.waitGen(t, 4)
	s.waitServers(t, "d listed after the new target was replaced", "b", "c", "d")
}

// TestConfigWatchDirectoryReplaced: the config's directory is replaced
// whole (the old one renamed aside, a new one renamed into place): the
// new file is applied, and an edit in the new directory too.
func TestConfigWatchDirectoryReplaced(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "conf")
	path := filepath.Join(dir, "config.json")
	writeConfigAt(t, path, watchConfig("a"))

	s := serveConfig(t, path)
	s.waitServers(t, "a listed", "a")

	writeConfigAt(t, filepath.Join(base, "conf.new", "config.json"), watchConfig("a", "b"))
	must(t, os.Rename(dir, filepath.Join(base, "conf.old")))
	must(t, os.Rename(filepath.Join(base, "conf.new"), dir))
	s.waitGen(t, 2)
	s.waitServers(t, "a and b listed after the directory was replaced", "a", "b")

	must(t, os.RemoveAll(filepath.Join(base, "conf.old")))
	rewrite(t, path, watchConfig("b"))
	s.waitGen(t, 3)
	s.waitServers(t, "b alone listed after an edit in the new directory", "b")
}
