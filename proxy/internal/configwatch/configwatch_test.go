package configwatch

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// TestResolveChainConfigMap: --config a symlink to a ConfigMap volume's
// file (config.json -> ..data/config.json, ..data -> ..v1): the watch
// covers the link's directory, the volume (where ..data is swapped) and
// the directory the file is in, and the swap's names are config changes.
func TestResolveChainConfigMap(t *testing.T) {
	cm, link := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cm, "..v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"..v1", filepath.Join(cm, "..data")}, {"..data/config.json", filepath.Join(cm, "config.json")}, {filepath.Join(cm, "config.json"), filepath.Join(link, "config.json")}} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	names, dirs := resolveChain(filepath.Join(link, "config.json"))
	for _, d := range []string{link, cm, filepath.Join(cm, "..v1")} {
		if !slices.Contains(dirs, d) {
			t.Errorf("directory %s not watched: %v", d, dirs)
		}
	}
	for _, n := range []string{filepath.Join(cm, "config.json"), filepath.Join(cm, "..data"), filepath.Join(cm, "..v1", "config.json")} {
		if !slices.Contains(names, n) {
			t.Errorf("a change of %s is not a config change: %v", n, names)
		}
	}
}

// TestConfigWatchWarnsOnce: a directory that cannot be watched is logged
// at WARN with its path, once however many events follow.
func TestConfigWatchWarnsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // every Add fails
	var logs bytes.Buffer
	cw := New(w, path, func() string { return "" }, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	for range 3 {
		cw.Event(fsnotify.Event{Name: path, Op: fsnotify.Write})
	}
	if n := strings.Count(logs.String(), "config watch incomplete"); n != 2 {
		t.Errorf("%d warnings, want one for the config's directory and one for its parent:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "[WARN]") || !strings.Contains(logs.String(), "path="+filepath.Dir(path)) {
		t.Errorf("the warning does not name the directory:\n%s", logs.String())
	}
}
