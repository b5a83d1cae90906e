package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogCache keeps each server's last listed catalog on disk, keyed by
// its launch spec, so that the first lists after a start answer at once
// from it while the servers start (DESIGN §13, "first answers are fast and
// complete"). What is stored is what switchboard would serve: every string
// redacted of the secrets switchboard knows, and in pin mode "block" only
// definitions the pin file approves. The trust boundary, pins and policy
// apply to a cached catalog as to a listed one, when views are built.
//
// A cache that cannot be read or written is logged once and otherwise
// ignored: it only ever saves time.
type catalogCache struct {
	dir     string // "" disables it
	log     hclog.Logger
	seedOff bool // keep catalogs, but seed no Handle from them

	mu      sync.Mutex
	written map[string][32]byte // file → digest of the content last written or read
	warned  bool
}

// catalogFileVersion is the format of a cache file; a file of another
// version is ignored.
const catalogFileVersion = 1

type catalogFile struct {
	Version   int                     `json:"version"`
	Server    string                  `json:"server"`
	Protocol  string                  `json:"protocol,omitempty"` // the version the server spoke
	Tools     []*mcp.Tool             `json:"tools"`
	Prompts   []*mcp.Prompt           `json:"prompts,omitempty"`
	Resources []*mcp.Resource         `json:"resources,omitempty"`
	Templates []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	// Extensions are the server's declared extensions, so that the
	// first initialize after a start declares them without waiting.
	Extensions map[string]any `json:"extensions,omitempty"`
}

// maxCatalogFile bounds a cache file read back: a catalog is listed within
// upstream's own bound of 4 MiB, and JSON written again is no larger.
const maxCatalogFile = 8 << 20

func newCatalogCache(dir string, log hclog.Logger) *catalogCache {
	return &catalogCache{dir: dir, log: log, written: map[string][32]byte{}}
}

// DefaultCatalogDir is the catalog cache's directory for the CLI when the
// config names none: switchboard/catalogs under the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache, on Linux), or "" (off) when there is
// none.
func DefaultCatalogDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "switchboard", "catalogs")
}

// catalogDir is the directory the config's setting asks for: "off"
// disables the cache, "" is def.
func catalogDir(setting, def string) string {
	switch setting {
	case "off":
		return ""
	case "":
		return def
	}
	return setting
}

// file is where spec's catalog is kept. The name hashes everything that
// decides what the server lists: how it is started (the fingerprint, which
// names the server) and which lists are asked for.
func (c *catalogCache) file(spec upstream.Spec) string {
	c.mu.Lock()
	dir := c.dir
	c.mu.Unlock()
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%t\x00%t", spec.Fingerprint(), spec.SkipPrompts, spec.SkipResources))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
}

// seed gives h the catalog its spec listed in an earlier run, if one is
// kept; before h starts.
func (c *catalogCache) seed(h *upstream.Handle) {
	path := c.file(h.Spec())
	if path == "" || c.seedOff {
		return
	}
	b, err := readLimited(path, maxCatalogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f catalogFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil || f.Version != catalogFileVersion || f.Server != h.Spec().Name {
		c.log.Debug("cached catalog ignored", "upstream", h.Name(), "error", fmt.Errorf("%s: %w", path, err))
		return
	}
	c.mu.Lock()
	c.written[path] = sha256.Sum256(b)
	c.mu.Unlock()
	h.Seed(&upstream.Catalog{Tools: f.Tools, Prompts: f.Prompts, Resources: f.Resources, Templates: f.Templates, Extensions: f.Extensions}, f.Protocol)
	c.log.Debug("catalog seeded from the cache", "upstream", h.Name(), "tools", len(f.Tools))
}

// save keeps h's catalog, as listed by the server in this run, when it
// differs from what the file holds. keep says whether a tool's definition
// may be stored (the pins' verdict); redact takes out known secrets.
func (c *catalogCache) save(h *upstream.Handle, keep func(*mcp.Tool) bool, redact sanitize.Redactor) {
	path := c.file(h.Spec())
	if path == "" || !h.Listed() {
		return
	}
	cat := h.Catalog()
	if cat == nil {
		return
	}
	f := catalogFile{Version: catalogFileVersion, Server: h.Spec().Name, Protocol: h.Status().Protocol,
		Prompts: cat.Prompts, Resources: cat.Resources, Templates: cat.Templates, Extensions: cat.Extensions}
	for _, t := range cat.Tools {
		if keep(t) {
			f.Tools = append(f.Tools, t)
		}
	}
	b, err := redactedJSON(&f, redact)
	if err != nil {
		c.warn(h.Name(), err)
		return
	}
	sum := sha256.Sum256(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written[path] == sum {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		c.warnLocked(h.Name(), err)
		return
	}
	if err := writeFileAtomic(path, string(b)); err != nil {
		c.warnLocked(h.Name(), err)
		return
	}
	c.written[path] = sum
}

func (c *catalogCache) warn(server string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnLocked(server, err)
}

// warnLocked logs the first failure at WARN and the rest at DEBUG: a
// read-only file system says so once.
func (c *catalogCache) warnLocked(server string, err error) {
	if c.warned {
		c.log.Debug("catalog not cached", "upstream", server, "error", err)
		return
	}
	c.warned = true
	c.log.Warn("catalog not cached", "upstream", server, "error", err,
		"reason", `set "catalogCache" to a writable directory, or "off"`)
}

// redactedJSON encodes v with every string in it, keys included, passed
// through redact.
func redactedJSON(v any, redact sanitize.Redactor) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.MarshalIndent(redactTree(tree, redact), "", " ")
}

func redactTree(v any, redact sanitize.Redactor) any {
	switch x := v.(type) {
	case string:
		return redact.Redact(x)
	case []any:
		for i := range x {
			x[i] = redactTree(x[i], redact)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[redact.Redact(k)] = redactTree(e, redact)
		}
		return out
	}
	return v
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", st.Size(), limit)
	}
	b := make([]byte, st.Size())
	_, err = io.ReadFull(f, b)
	return b, err
}

// use switches the cache to dir (a reload may change it).
func (c *catalogCache) use(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir != c.dir {
		c.dir, c.warned = dir, false
	}
}

// saveCatalog keeps h's catalog when the generation served now runs h as
// a shared server (a per-client instance's catalog is its client's).
func (p *Proxy) saveCatalog(h *upstream.Handle) {
	cur := p.serving.Load()
	if cur.Snap == nil || !h.Listed() {
		return
	}
	var e *view.ServerEntry
	for _, vs := range cur.Snap.Views {
		for _, se := range vs.Servers {
			if se.Handle == h && !se.PerClient {
				e = se
			}
		}
	}
	if e == nil {
		return
	}
	mode := cur.Snap.PinMode
	p.catalogs.save(h, func(t *mcp.Tool) bool { return p.pins.Approved(e.HandleKey, t, mode) }, p.redactor)
}
