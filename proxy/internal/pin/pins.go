package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// File is the on-disk form of approved tool definitions. Pins maps
// server -> tool -> the hash approved; Pending holds changed definitions the
// proxy saw and holds back in block mode until `switchboard pins approve`
// moves them into Pins.
type File struct {
	Version int                          `json:"version"`
	Pins    map[string]map[string]string `json:"pins"`
	Pending map[string]map[string]string `json:"pending,omitempty"`
}

// errEmpty is a pin file with nothing in it: what a write cut short
// by a crash leaves (an older switchboard renamed it into place without
// fsync; a file system can also leave its blocks zeroed).
var errEmpty = errors.New("pin file empty")

// Read reads the pin file at path: a missing one is an empty set of
// pins; an empty one (errEmpty, with an empty set) is what a crash
// leaves; one that does not parse is refused with what to do about it.
func Read(path string) (*File, []byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyFile(), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pin file: %w", err)
	}
	pf, err := parse(path, b)
	return pf, b, err
}

func emptyFile() *File {
	return &File{Version: 1, Pins: map[string]map[string]string{}, Pending: map[string]map[string]string{}}
}

func parse(path string, b []byte) (*File, error) {
	pf := emptyFile()
	if len(bytes.Trim(b, " \t\r\n\x00")) == 0 {
		return pf, errEmpty
	}
	if err := json.Unmarshal(b, pf); err != nil {
		return nil, fmt.Errorf("pin file %s is corrupt (%v): it holds the approved tool definitions, so switchboard will not start without it; restore it from a backup, or move it aside to start with no pins (every tool is then pinned afresh as it is listed, and changes pending approval are lost)", path, err)
	}
	if pf.Pins == nil {
		pf.Pins = map[string]map[string]string{}
	}
	if pf.Pending == nil {
		pf.Pending = map[string]map[string]string{}
	}
	return pf, nil
}

// CheckFile reads the pin file at path as serve would: an error for
// one serve refuses, a note for one it starts with anyway.
func CheckFile(path string) (note string, err error) {
	_, _, err = Read(path)
	if errors.Is(err, errEmpty) {
		return fmt.Sprintf("pin file %s is empty (a write cut short by a crash): serve starts with no pins and pins every tool afresh as it is listed", path), nil
	}
	return "", err
}

func (pf *File) marshal() []byte {
	b, _ := json.MarshalIndent(pf, "", "  ") // maps of strings: cannot fail
	return append(b, '\n')
}

func (pf *File) write(path string) error { return writeFileDurable(path, pf.marshal()) }

// syncFile flushes a file or directory to stable storage (a test counts
// the calls).
var syncFile = (*os.File).Sync

// writeFileDurable replaces path with data so that after a crash path
// holds either its old or its new content: a temporary file beside it,
// synced, renamed over it, and the directory synced.
func writeFileDurable(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = syncFile(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if runtime.GOOS == "windows" {
		// A rename is durable there once the file's data is; a directory
		// handle cannot be flushed.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return syncFile(d)
}

func setPin(m map[string]map[string]string, server, tool, hash string) {
	if m[server] == nil {
		m[server] = map[string]string{}
	}
	m[server][tool] = hash
}

// pinFlushDelay is how long a pin file write waits for more changes: the
// first listing of many servers pins their tools one after another, and
// they go to disk in one write.
var pinFlushDelay = 200 * time.Millisecond

// pinRetryDelay is how long a failed pin file write waits to be tried
// again (a full disk).
var pinRetryDelay = 10 * time.Second

// Store remembers the definition hash of every tool the first time it is
// seen. A later different definition (a rug pull) is reported once; in block
// mode the tool is withheld until approved. Safe for concurrent use.
//
// Changes go to the file in batches (pinFlushDelay), one writer at a time;
// the store knows the bytes it last wrote or read, so the file watch can
// tell its own writes from an approval.
type Store struct {
	log hclog.Logger

	mu       sync.Mutex
	path     string // "" keeps pins in memory only
	file     *File
	reported map[string]bool // server\x00tool\x00hash already logged
	// OnViolation is called once per changed definition seen.
	OnViolation func()
	dirty       bool        // file holds changes not written yet
	timer       *time.Timer // the flush to come, if any
	last        []byte      // the file's content as last written or read
	failing     bool        // the last write failed (logged once per streak)

	writeMu sync.Mutex // one flush at a time
	// write replaces the file (writeFileDurable; a test counts writes).
	write func(path string, data []byte) error
}

func NewStore(log hclog.Logger) *Store {
	return &Store{log: log, file: emptyFile(), reported: map[string]bool{}, write: writeFileDurable}
}

// use switches to path (or memory for ""), loading its pins after writing
// what the previous file still lacks. An empty file (a write a crash cut
// short) starts with no pins, loudly; a corrupt one is refused.
func (s *Store) Use(path string) error {
	s.mu.Lock()
	same := path == s.path
	s.mu.Unlock()
	if same {
		return nil
	}
	s.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if path == "" {
		s.path = ""
		return nil
	}
	pf, b, err := Read(path)
	if errors.Is(err, errEmpty) {
		s.log.Warn("pin file empty, every tool is pinned afresh", "path", path, "reason", "interrupted write")
		s.path, s.file, s.last = path, pf, b
		s.markDirtyLocked()
		return nil
	}
	if err != nil {
		return err
	}
	s.path, s.file, s.last = path, pf, b
	return nil
}

// reloadFile picks up approvals written by `switchboard pins approve`. It
// reports whether the pins changed: a file that holds what the store last
// wrote (its own write, seen by the watch) changes nothing, and an empty
// one is written again from memory.
func (s *Store) ReloadFile() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" {
		return false, nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("pin file: %w", err)
	}
	if bytes.Equal(b, s.last) {
		return false, nil
	}
	pf, err := parse(s.path, b)
	if errors.Is(err, errEmpty) || errors.Is(err, fs.ErrNotExist) || b == nil {
		s.markDirtyLocked()
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.file, s.last = pf, b
	return true, nil
}

// markDirtyLocked schedules a write of the file (s.mu held).
func (s *Store) markDirtyLocked() {
	if s.path == "" {
		return
	}
	s.dirty = true
	if s.timer == nil {
		s.timer = time.AfterFunc(pinFlushDelay, s.Flush)
	}
}

// flush writes the pins if they changed since the last write. Someone
// else's write since (an approval) is merged first so it is not lost. A
// failed write is logged once until one succeeds, and tried again after
// pinRetryDelay.
func (s *Store) Flush() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.dirty || s.path == "" {
		s.mu.Unlock()
		return
	}
	path := s.path
	if b, err := os.ReadFile(path); err == nil && !bytes.Equal(b, s.last) {
		if pf, err := parse(path, b); err == nil {
			s.file = mergePins(pf, s.file)
		}
	}
	data := s.file.marshal()
	prev := s.last
	s.dirty, s.last = false, data
	s.mu.Unlock()

	err := s.write(path, data)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if bytes.Equal(s.last, data) {
			s.last = prev
		}
		s.dirty = true
		if !s.failing {
			s.failing = true
			s.log.Warn("pin file not written, retrying", "path", path, "error", err, "duration", pinRetryDelay)
		}
		if s.timer == nil {
			s.timer = time.AfterFunc(pinRetryDelay, s.Flush)
		}
		return
	}
	if s.failing {
		s.failing = false
		s.log.Info("pin file written again", "path", path)
	}
}

// mergePins is disk, someone else's write, with what mem learned that
// disk does not know: pins of tools disk has none for, and changed
// definitions disk neither approved nor holds pending.
func mergePins(disk, mem *File) *File {
	for server, tools := range mem.Pins {
		for tool, h := range tools {
			if _, ok := disk.Pins[server][tool]; !ok {
				setPin(disk.Pins, server, tool, h)
			}
		}
	}
	for server, tools := range mem.Pending {
		for tool, h := range tools {
			if _, ok := disk.Pending[server][tool]; !ok && disk.Pins[server][tool] != h {
				setPin(disk.Pending, server, tool, h)
			}
		}
	}
	return disk
}

// approve accepts the pending definitions of the servers a reload changed:
// editing a server's entry is its operator's approval of what it now
// serves. Other servers' pending changes wait for `switchboard pins
// approve`: a reload for another reason approves nothing.
func (s *Store) Approve(servers map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for server, tools := range s.file.Pending {
		if !servers[server] {
			continue
		}
		for tool, h := range tools {
			setPin(s.file.Pins, server, tool, h)
		}
		delete(s.file.Pending, server)
		changed = true
	}
	if changed {
		s.markDirtyLocked()
	}
}

// Check reports whether tool t of server, whose sanitize.DefinitionHash is
// h, may be exposed under mode ("warn", "block" or "off").
func (s *Store) Check(server string, t *mcp.Tool, h, mode string) bool {
	if mode == "off" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pinned, ok := s.file.Pins[server][t.Name]
	if !ok || !strings.HasPrefix(pinned, sanitize.DefinitionHashPrefix) && pinned == sanitize.PinHash(t) {
		// First sight, or a pin of the older form the definition still
		// matches: pinned in full now.
		setPin(s.file.Pins, server, t.Name, h)
		s.markDirtyLocked()
		return true
	}
	if pinned == h {
		if _, pending := s.file.Pending[server][t.Name]; pending {
			delete(s.file.Pending[server], t.Name) // changed back
			s.markDirtyLocked()
		}
		return true
	}
	key := server + "\x00" + t.Name + "\x00" + h
	if !s.reported[key] {
		s.reported[key] = true
		if s.OnViolation != nil {
			s.OnViolation()
		}
		s.log.Warn("tool definition changed since pinned", "upstream", server, "tool", t.Name, "reason", "rug-pull", "state", mode)
		if s.file.Pending[server][t.Name] != h {
			setPin(s.file.Pending, server, t.Name, h)
			s.markDirtyLocked()
		}
	}
	return mode != "block"
}

// approved reports, recording nothing, whether t's definition is one the
// pins let through in mode: in "block" mode a definition that differs from
// its pin is not (a tool never seen is: its first sight pins it).
func (s *Store) Approved(server string, t *mcp.Tool, mode string) bool {
	if mode != "block" {
		return true
	}
	s.mu.Lock()
	pinned, ok := s.file.Pins[server][t.Name]
	s.mu.Unlock()
	if !ok {
		return true
	}
	if strings.HasPrefix(pinned, sanitize.DefinitionHashPrefix) {
		return pinned == sanitize.DefinitionHash(t)
	}
	return pinned == sanitize.PinHash(t)
}

// Run is `switchboard pins list|approve`.
func Run(path string, args []string, server, tool string, out func(string)) error {
	pf, _, err := Read(path)
	if err != nil && !errors.Is(err, errEmpty) {
		return err
	}
	switch args[0] {
	case "list":
		rows := []string{}
		for srv, tools := range pf.Pins {
			for t, h := range tools {
				state := "approved"
				if p, ok := pf.Pending[srv][t]; ok && p != h {
					state = "CHANGED (pending approval)"
				}
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s", srv, t, h[:16], state))
			}
		}
		sort.Strings(rows)
		out("SERVER\tTOOL\tHASH\tSTATE")
		for _, r := range rows {
			out(r)
		}
		return nil
	case "approve":
		n := 0
		for srv, tools := range pf.Pending {
			if server != "" && srv != server {
				continue
			}
			for t, h := range tools {
				if tool != "" && t != tool {
					continue
				}
				setPin(pf.Pins, srv, t, h)
				delete(tools, t)
				out(fmt.Sprintf("approved %s/%s", srv, t))
				n++
			}
		}
		if n == 0 {
			out("nothing pending")
			return nil
		}
		return pf.write(path)
	}
	return fmt.Errorf("unknown pins command %q (want list or approve)", args[0])
}

// Change is a changed tool definition held for approval, in /status:
// the hash pinned and the hash of the definition the server lists now
// (the definitions themselves are not kept).
type Change struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Pinned  string `json:"pinned"`
	Pending string `json:"pending"`
}

// pending lists the held definitions, by server and tool.
func (s *Store) Pending() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Change
	for srv, tools := range s.file.Pending {
		for t, h := range tools {
			out = append(out, Change{Server: srv, Tool: t, Pinned: s.file.Pins[srv][t], Pending: h})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out
}
