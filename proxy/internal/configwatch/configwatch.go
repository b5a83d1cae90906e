package configwatch

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// maxLinkHops bounds the symlinks followed resolving the config path (the
// kernel's own limit).
const maxLinkHops = 40

// Watch watches every directory whose entries decide what the config
// path reads: the config's directory and its parent (the directory can be
// replaced), the directory of each symlink met resolving it (a Kubernetes
// ConfigMap swaps a ..data symlink; --config can be a symlink into another
// directory), and the resolved file's directory and its parent. The
// symlinks are resolved again on every event, and a watched directory that
// is removed or replaced is watched again; one that cannot be is logged.
// The pin file's directory is watched too, for approvals.
type Watch struct {
	w      *fsnotify.Watcher
	log    hclog.Logger
	config string        // the config path, absolute
	pin    func() string // the pin file, absolute ("" if none)

	dirs   map[string]bool // watched
	names  map[string]bool // paths whose change may change the config
	failed map[string]bool // directories that could not be watched (logged)
}

func New(w *fsnotify.Watcher, config string, pin func() string, log hclog.Logger) *Watch {
	abs, err := filepath.Abs(config)
	if err != nil {
		abs = config
	}
	cw := &Watch{w: w, log: log, config: abs, pin: pin, dirs: map[string]bool{}, names: map[string]bool{}, failed: map[string]bool{}}
	cw.sync()
	return cw
}

// event sorts out ev: whether it may change the config, or the pin file.
// It resolves the config path again and adjusts the watches first.
func (cw *Watch) Event(ev fsnotify.Event) (config, pin bool) {
	name := filepath.Clean(ev.Name)
	if p := cw.pin(); p != "" && name == p {
		return false, true
	}
	config = cw.names[name] || strings.HasPrefix(filepath.Base(name), "..")
	if cw.dirs[name] {
		// The watched directory itself was removed, renamed or replaced:
		// its watch is gone or on the old one.
		delete(cw.dirs, name)
		_ = cw.w.Remove(name)
		config = true
	}
	cw.sync()
	return config || cw.names[name], false
}

// sync watches the directories the config path resolves through now, and
// stops watching the others.
func (cw *Watch) sync() {
	names, dirs := resolveChain(cw.config)
	if p := cw.pin(); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	want := map[string]bool{}
	for _, d := range dirs {
		want[d] = true
	}
	for d := range want {
		if cw.dirs[d] {
			continue
		}
		if err := cw.w.Add(d); err != nil {
			if !cw.failed[d] {
				cw.failed[d] = true
				cw.log.Warn("config watch incomplete, changes there need a reload or SIGHUP", "path", d, "error", err)
			}
			continue
		}
		if cw.failed[d] {
			delete(cw.failed, d)
			cw.log.Info("config watch restored", "path", d)
		}
		cw.dirs[d] = true
	}
	for d := range cw.dirs {
		if !want[d] {
			_ = cw.w.Remove(d)
			delete(cw.dirs, d)
		}
	}
	for d := range cw.failed {
		if !want[d] {
			delete(cw.failed, d)
		}
	}
	cw.names = map[string]bool{}
	for _, n := range names {
		cw.names[n] = true
	}
	for d := range want {
		cw.names[d] = true
	}
}

// resolveChain follows path through its symlinks, of the file and of any
// directory on the way. names are the paths whose change changes what
// path reads (the path, each symlink, the file reached); dirs are the
// directories to watch for such changes. Every directory it names is a
// real one (no symlink on its way), so the watch's event names match.
func resolveChain(path string) (names, dirs []string) {
	root := filepath.VolumeName(path) + string(filepath.Separator)
	split := func(p string) []string {
		var out []string
		for _, c := range strings.Split(strings.TrimPrefix(p, filepath.VolumeName(p)), string(filepath.Separator)) {
			if c != "" {
				out = append(out, c)
			}
		}
		return out
	}
	names = []string{path}
	dirs = []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))}
	cur, comps := root, split(path)
	for hops := 0; len(comps) > 0; {
		next := filepath.Join(cur, comps[0])
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing from here on: what is there to watch is above.
			cur = filepath.Join(append([]string{cur}, comps...)...)
			break
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, comps = next, comps[1:]
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > maxLinkHops {
			cur = filepath.Join(append([]string{cur}, comps...)...)
			break
		}
		names = append(names, next)
		dirs = append(dirs, cur)
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		cur, comps = root, append(split(target), comps[1:]...)
	}
	names = append(names, cur, filepath.Dir(cur))
	dirs = append(dirs, filepath.Dir(cur), filepath.Dir(filepath.Dir(cur)))
	return names, dirs
}
