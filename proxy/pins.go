package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// PinFile is the on-disk form of approved tool definitions. Pins maps
// server -> tool -> the hash approved; Pending holds changed definitions the
// proxy saw and holds back in block mode until `switchboard pins approve`
// moves them into Pins.
type PinFile struct {
	Version int                          `json:"version"`
	Pins    map[string]map[string]string `json:"pins"`
	Pending map[string]map[string]string `json:"pending,omitempty"`
}

func readPinFile(path string) (*PinFile, error) {
	pf := &PinFile{Version: 1, Pins: map[string]map[string]string{}, Pending: map[string]map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pin file: %w", err)
	}
	if err := json.Unmarshal(b, pf); err != nil {
		return nil, fmt.Errorf("pin file %s: %w", path, err)
	}
	if pf.Pins == nil {
		pf.Pins = map[string]map[string]string{}
	}
	if pf.Pending == nil {
		pf.Pending = map[string]map[string]string{}
	}
	return pf, nil
}

func (pf *PinFile) write(path string) error {
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, string(b)+"\n")
}

func setPin(m map[string]map[string]string, server, tool, hash string) {
	if m[server] == nil {
		m[server] = map[string]string{}
	}
	m[server][tool] = hash
}

// pinStore remembers the definition hash of every tool the first time it is
// seen. A later different definition (a rug pull) is reported once; in block
// mode the tool is withheld until approved. Safe for concurrent use.
type pinStore struct {
	log hclog.Logger

	mu       sync.Mutex
	path     string // "" keeps pins in memory only
	file     *PinFile
	reported map[string]bool // server\x00tool\x00hash already logged
	// onViolation is called once per changed definition seen.
	onViolation func()
}

func newPinStore(log hclog.Logger) *pinStore {
	return &pinStore{log: log, file: &PinFile{Version: 1, Pins: map[string]map[string]string{}, Pending: map[string]map[string]string{}}, reported: map[string]bool{}}
}

// use switches to path (or memory for ""), loading its pins.
func (s *pinStore) use(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if path == s.path {
		return nil
	}
	if path == "" {
		s.path = ""
		return nil
	}
	pf, err := readPinFile(path)
	if err != nil {
		return err
	}
	s.path, s.file = path, pf
	return nil
}

// reloadFile picks up approvals written by `switchboard pins approve`.
func (s *pinStore) reloadFile() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" {
		return nil
	}
	pf, err := readPinFile(s.path)
	if err != nil {
		return err
	}
	s.file = pf
	return nil
}

// approve accepts the pending definitions of the servers a reload changed:
// editing a server's entry is its operator's approval of what it now
// serves. Other servers' pending changes wait for `switchboard pins
// approve`: a reload for another reason approves nothing.
func (s *pinStore) approve(servers map[string]bool) {
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
		s.saveLocked()
	}
}

// saveLocked requires s.mu.
func (s *pinStore) saveLocked() {
	if s.path == "" {
		return
	}
	if err := s.file.write(s.path); err != nil {
		s.log.Warn("pin file not written", "error", err)
	}
}

// check reports whether tool t of server may be exposed under mode
// ("warn", "block" or "off").
func (s *pinStore) Check(server string, t *mcp.Tool, mode string) bool {
	if mode == "off" {
		return true
	}
	h := sanitize.DefinitionHash(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	pinned, ok := s.file.Pins[server][t.Name]
	if !ok || !strings.HasPrefix(pinned, sanitize.DefinitionHashPrefix) && pinned == sanitize.PinHash(t) {
		// First sight, or a pin of the older form the definition still
		// matches: pinned in full now.
		setPin(s.file.Pins, server, t.Name, h)
		s.saveLocked()
		return true
	}
	if pinned == h {
		if _, pending := s.file.Pending[server][t.Name]; pending {
			delete(s.file.Pending[server], t.Name) // changed back
			s.saveLocked()
		}
		return true
	}
	key := server + "\x00" + t.Name + "\x00" + h
	if !s.reported[key] {
		s.reported[key] = true
		if s.onViolation != nil {
			s.onViolation()
		}
		s.log.Warn("tool definition changed since pinned", "upstream", server, "tool", t.Name, "reason", "rug-pull", "state", mode)
		if s.file.Pending[server][t.Name] != h {
			setPin(s.file.Pending, server, t.Name, h)
			s.saveLocked()
		}
	}
	return mode != "block"
}

// approved reports, recording nothing, whether t's definition is one the
// pins let through in mode: in "block" mode a definition that differs from
// its pin is not (a tool never seen is: its first sight pins it).
func (s *pinStore) approved(server string, t *mcp.Tool, mode string) bool {
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

// runPins is `switchboard pins list|approve`.
func runPins(path string, args []string, server, tool string, out func(string)) error {
	pf, err := readPinFile(path)
	if err != nil {
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

// PendingPin is a changed tool definition held for approval, in /status:
// the hash pinned and the hash of the definition the server lists now
// (the definitions themselves are not kept).
type PendingPin struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Pinned  string `json:"pinned"`
	Pending string `json:"pending"`
}

// pending lists the held definitions, by server and tool.
func (s *pinStore) pending() []PendingPin {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PendingPin
	for srv, tools := range s.file.Pending {
		for t, h := range tools {
			out = append(out, PendingPin{Server: srv, Tool: t, Pinned: s.file.Pins[srv][t], Pending: h})
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
