package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// TestPinsCoverTheWholeDefinition: a change of title, annotations, _meta
// or output schema is a rug pull like a changed description; a pin of the
// older form is upgraded while the fields it covers match; approval comes
// only for the servers a reload changed.
func TestPinsCoverTheWholeDefinition(t *testing.T) {
	base := func() *mcp.Tool {
		return &mcp.Tool{Name: "t", Description: "d", InputSchema: map[string]any{"type": "object"}}
	}
	for name, change := range map[string]func(*mcp.Tool){
		"title":         func(x *mcp.Tool) { x.Title = "Delete everything" },
		"annotations":   func(x *mcp.Tool) { x.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true} },
		"_meta":         func(x *mcp.Tool) { x.Meta = mcp.Meta{"note": "x"} },
		"output schema": func(x *mcp.Tool) { x.OutputSchema = map[string]any{"type": "object"} },
		"description":   func(x *mcp.Tool) { x.Description = "new" },
	} {
		s := NewStore(hclog.NewNullLogger())
		if !check(s, "srv", base(), "block") {
			t.Fatalf("%s: first sight withheld", name)
		}
		changed := base()
		change(changed)
		if check(s, "srv", changed, "block") {
			t.Errorf("%s changed: not withheld in block mode", name)
		}
		s.Approve(map[string]bool{"other": true})
		if check(s, "srv", changed, "block") {
			t.Errorf("%s changed: approved by a reload that changed another server", name)
		}
		s.Approve(map[string]bool{"srv": true})
		if !check(s, "srv", changed, "block") {
			t.Errorf("%s changed: still withheld after a reload that changed its server", name)
		}
	}

	// A pin written in the older form (name, description, schemas).
	s := NewStore(hclog.NewNullLogger())
	old := base()
	setPin(s.file.Pins, "srv", "t", sanitize.PinHash(old))
	withTitle := base()
	withTitle.Title = "same fields the old pin covers"
	if !check(s, "srv", withTitle, "block") {
		t.Error("a definition matching its older pin was withheld")
	}
	if got := s.file.Pins["srv"]["t"]; got != sanitize.DefinitionHash(withTitle) {
		t.Errorf("older pin not upgraded: %q", got)
	}
	withTitle.Title = "changed after the upgrade"
	if check(s, "srv", withTitle, "block") {
		t.Error("a title change after the upgrade was not withheld")
	}
}

// pinTools are n distinct tools, as a first listing of many servers
// brings them.
func pinTools(n int) []*mcp.Tool {
	var ts []*mcp.Tool
	for i := range n {
		ts = append(ts, &mcp.Tool{Name: fmt.Sprintf("t%d", i), Description: "d", InputSchema: map[string]any{"type": "object"}})
	}
	return ts
}

// countWrites makes s count (and do) its file writes.
func countWrites(s *Store) *atomic.Int32 {
	var n atomic.Int32
	s.write = func(path string, data []byte) error {
		n.Add(1)
		return writeFileDurable(path, data)
	}
	return &n
}

// TestPinFileWritesBatched: 60 servers' first-seen tools go to the file
// in one write, which holds them all; the watch's own-write check sees no
// change in it, and an approval written by someone else is one.
func TestPinFileWritesBatched(t *testing.T) {
	defer func(d time.Duration) { pinFlushDelay = d }(pinFlushDelay)
	pinFlushDelay = 100 * time.Millisecond
	path := filepath.Join(t.TempDir(), "pins.json")
	s := NewStore(hclog.NewNullLogger())
	writes := countWrites(s)
	if err := s.Use(path); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		for _, tool := range pinTools(3) {
			check(s, fmt.Sprintf("srv%d", i), tool, "block")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for writes.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.Flush()
	if n := writes.Load(); n != 1 {
		t.Errorf("180 first-seen tools of 60 servers: %d pin file writes, want 1", n)
	}
	pf, _, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Pins) != 60 || len(pf.Pins["srv59"]) != 3 {
		t.Errorf("pin file holds %d servers, want 60 with 3 tools each", len(pf.Pins))
	}
	if changed, err := s.ReloadFile(); err != nil || changed {
		t.Errorf("the store's own write seen by the watch: changed %v, error %v; want no change (no view rebuild)", changed, err)
	}

	// A changed definition, then its approval by `switchboard pins approve`.
	changed := pinTools(1)[0]
	changed.Description = "new"
	if check(s, "srv0", changed, "block") {
		t.Fatal("changed definition not withheld")
	}
	s.Flush()
	if err := Run(path, []string{"approve"}, "", "", func(string) {}); err != nil {
		t.Fatal(err)
	}
	if ch, err := s.ReloadFile(); err != nil || !ch {
		t.Errorf("an approval written by the CLI: changed %v, error %v; want a change", ch, err)
	}
	if !check(s, "srv0", changed, "block") {
		t.Error("approved definition still withheld")
	}
}

// TestPinFileApprovalNotLostToBatchedWrite: pins learned before an
// approval is written by the CLI, flushed after it, keep the approval.
func TestPinFileApprovalNotLostToBatchedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	s := NewStore(hclog.NewNullLogger())
	if err := s.Use(path); err != nil {
		t.Fatal(err)
	}
	tool := pinTools(1)[0]
	check(s, "srv", tool, "block")
	s.Flush()
	changed := pinTools(1)[0]
	changed.Description = "new"
	check(s, "srv", changed, "block")
	s.Flush()
	if err := Run(path, []string{"approve"}, "", "", func(string) {}); err != nil {
		t.Fatal(err)
	}
	check(s, "other", tool, "block") // first sight, not written yet
	s.Flush()
	pf, _, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if pf.Pins["srv"]["t0"] != sanitize.DefinitionHash(changed) || len(pf.Pending["srv"]) != 0 {
		t.Errorf("approval lost to the proxy's write: pins %v, pending %v", pf.Pins["srv"], pf.Pending["srv"])
	}
	if pf.Pins["other"]["t0"] == "" {
		t.Error("the new pin was not written")
	}
}

// TestPinFileWriteDurable: the pin file is written through a synced
// temporary file and a synced directory; a failed sync leaves the old
// content and no temporary file.
func TestPinFileWriteDurable(t *testing.T) {
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	dir := t.TempDir()
	path := filepath.Join(dir, "pins.json")
	var synced []string
	syncFile = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		kind := "file"
		if fi.IsDir() {
			kind = "dir"
		}
		synced = append(synced, kind)
		return f.Sync()
	}
	s := NewStore(hclog.NewNullLogger())
	if err := s.Use(path); err != nil {
		t.Fatal(err)
	}
	check(s, "srv", pinTools(1)[0], "block")
	s.Flush()
	if strings.Join(synced, ",") != "file,dir" {
		t.Errorf("syncs %v, want the file then its directory", synced)
	}
	if pf, _, err := Read(path); err != nil || pf.Pins["srv"]["t0"] == "" {
		t.Fatalf("pin file after the write: %v, %v", pf, err)
	}
	before, _ := os.ReadFile(path)

	syncFile = func(*os.File) error { return syscall.EIO }
	if err := writeFileDurable(path, []byte(`{"version":1}`)); !errors.Is(err, syscall.EIO) {
		t.Errorf("a failed sync: error %v, want EIO", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Errorf("a failed sync replaced the file: %s", after)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want the pin file only", len(ents))
	}
}

// TestPinFileWriteFailureWarnsOnce: on a full disk the pins of 30
// servers, learned in several batches, give one WARN; the write that
// succeeds again says so.
func TestPinFileWriteFailureWarnsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	var logs bytes.Buffer
	s := NewStore(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}))
	if err := s.Use(path); err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	full.Store(true)
	s.write = func(path string, data []byte) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return writeFileDurable(path, data)
	}
	for i := range 30 {
		for _, tool := range pinTools(2) {
			check(s, fmt.Sprintf("srv%d", i), tool, "block")
		}
		if i%3 == 0 {
			s.Flush()
		}
	}
	s.Flush()
	if n := strings.Count(logs.String(), "pin file not written"); n != 1 {
		t.Errorf("%d warnings for one failure streak, want 1:\n%s", n, logs.String())
	}
	full.Store(false)
	s.Flush()
	if !strings.Contains(logs.String(), "pin file written again") {
		t.Errorf("no word when the write succeeded again:\n%s", logs.String())
	}
	if pf, _, err := Read(path); err != nil || len(pf.Pins) != 30 {
		t.Errorf("pin file after the disk has room: %d servers (error %v), want 30", len(pf.Pins), err)
	}
}

// TestPinFileCorruptOrEmpty: a corrupt pin file is refused with its path
// and what to do; an empty one (a write a crash cut short) starts with no
// pins, says so, and is written again.
func TestPinFileCorruptOrEmpty(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte(`{"version":1,"pins":{"srv":`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := NewStore(hclog.NewNullLogger()).Use(corrupt)
	if err == nil || !strings.Contains(err.Error(), corrupt) || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("corrupt pin file: error %v, want its path and what to do", err)
	}
	if _, err := CheckFile(corrupt); err == nil {
		t.Error("CheckFile passed a corrupt pin file")
	}

	for name, content := range map[string][]byte{"empty": nil, "zeroed": make([]byte, 512)} {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		s := NewStore(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}))
		if err := s.Use(path); err != nil {
			t.Errorf("%s pin file refused: %v", name, err)
			continue
		}
		if !strings.Contains(logs.String(), "pin file empty") {
			t.Errorf("%s pin file: no warning", name)
		}
		if note, err := CheckFile(path); err != nil || !strings.Contains(note, "empty") {
			t.Errorf("%s pin file: CheckFile note %q, error %v", name, note, err)
		}
		check(s, "srv", pinTools(1)[0], "block")
		s.Flush()
		if pf, _, err := Read(path); err != nil || pf.Pins["srv"]["t0"] == "" {
			t.Errorf("%s pin file not written again: %v", name, err)
		}
	}
}

// check is s.Check with t's definition hashed, as the view builder does.
func check(s *Store, server string, t *mcp.Tool, mode string) bool {
	return s.Check(server, t, sanitize.DefinitionHash(t), mode)
}

// FuzzParse: any bytes as a pin file either parse into a file with both
// maps made, which writes back and reads again the same, or are refused
// with the path in the error; blank ones (what a crash leaves) are the
// empty set with errEmpty.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"pins":{"srv":{"echo":"sha256:ab"}},"pending":{"srv":{"echo":"sha256:cd"}}}`))
	f.Add([]byte(`{"version":1,"pins":null}`))
	f.Add([]byte("\x00\x00 \n"))
	f.Add([]byte(`{"version":1,"pins":{"srv":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/pins.json"
		pf, err := parse(path, data)
		switch {
		case errors.Is(err, errEmpty):
			if len(bytes.Trim(data, " \t\r\n\x00")) != 0 || pf == nil || len(pf.Pins) != 0 || pf.Pins == nil || pf.Pending == nil {
				t.Fatalf("errEmpty for %q with %+v", data, pf)
			}
			return
		case err != nil:
			if pf != nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("refused %q with %+v, %v", data, pf, err)
			}
			return
		}
		if pf.Pins == nil || pf.Pending == nil {
			t.Fatalf("parsed %q without both maps: %+v", data, pf)
		}
		out, err := json.Marshal(pf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parse(path, out)
		if err != nil {
			t.Fatalf("%s, written back from %q, does not parse: %v", out, data, err)
		}
		if !reflect.DeepEqual(again, pf) {
			t.Fatalf("written back and read again: %+v, want %+v", again, pf)
		}
	})
}
