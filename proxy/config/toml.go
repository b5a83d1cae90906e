package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Codex CLI keeps its MCP servers in config.toml (docs/client-configs.md).
// A TOML document is told apart by its first line that is not blank or a
// comment: a table header ([mcp_servers.x]) or a key = value pair. Neither
// starts a YAML or JSON object, so nothing that parsed before reads as TOML
// now.
var (
	tomlTableRE = regexp.MustCompile(`^\[\[?\s*[A-Za-z0-9_."'-][^\]]*\]\]?\s*(#.*)?$`)
	tomlKeyRE   = regexp.MustCompile(`^("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(\s*\.\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*\s*=`)
)

// looksLikeTOML reports whether data's first significant line is a TOML
// table header or key = value pair.
func looksLikeTOML(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return tomlTableRE.MatchString(line) || tomlKeyRE.MatchString(line)
	}
	return false
}

// tomlToJSON turns a TOML document into the JSON the decoder reads. Dates
// and times become strings; a float JSON cannot hold (inf, nan) is an error.
func tomlToJSON(data []byte) ([]byte, error) {
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, fmt.Errorf("config: TOML: line %d, column %d: %w", line, col, err)
		}
		return nil, fmt.Errorf("config: TOML: %w", err)
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("config: TOML value JSON cannot hold: %w", err)
	}
	return js, nil
}
