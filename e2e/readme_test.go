package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README.md's commands are run by TestReadmeCommands (readme_run_test.go);
// this file reads them out of the README.

// readmeBlock is one fenced block of README.md.
type readmeBlock struct {
	lang   string
	line   int      // of the opening fence
	lines  []string // the content, without the fence's indentation
	before string   // the last non-empty line before the fence
}

// readmeBlocks returns README.md's fenced blocks in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	var indent, before string
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		fence := strings.HasPrefix(trimmed, "```")
		switch {
		case cur == nil && fence:
			cur = &readmeBlock{lang: strings.TrimSpace(trimmed[3:]), line: i + 1, before: before}
			indent = line[:len(line)-len(trimmed)]
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				before = line
			}
		case fence:
			blocks = append(blocks, *cur)
			cur = nil
		default:
			cur.lines = append(cur.lines, strings.TrimPrefix(line, indent))
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a fenced block is never closed", cur.line)
	}
	return blocks
}

// readmeCommand is one command of a shell block.
type readmeCommand struct {
	line    int
	text    string // as written, without a prompt or comment
	comment string // the comment after it, if any
	argv    []string
	output  []string // in a block with "$ " prompts: the lines shown after it
}

func (c *readmeCommand) String() string { return fmt.Sprintf("README.md:%d: %s", c.line, c.text) }

// isShell reports whether a block holds shell commands.
func (b readmeBlock) isShell() bool {
	switch b.lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// commands returns a shell block's commands. In a block where commands
// have a "$ " prompt, the other lines are their output; otherwise every
// non-empty line is a command.
func (b readmeBlock) commands(t *testing.T) []*readmeCommand {
	t.Helper()
	prompted := false
	for _, l := range b.lines {
		prompted = prompted || strings.HasPrefix(l, "$ ")
	}
	var out []*readmeCommand
	for i, l := range b.lines {
		if prompted && !strings.HasPrefix(l, "$ ") {
			if len(out) > 0 {
				out[len(out)-1].output = append(out[len(out)-1].output, l)
			}
			continue
		}
		text, comment := splitComment(strings.TrimPrefix(l, "$ "))
		if text == "" {
			continue
		}
		c := &readmeCommand{line: b.line + 1 + i, text: text, comment: comment}
		argv, err := shellWords(text)
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		c.argv = argv
		out = append(out, c)
	}
	return out
}

// splitComment cuts a line at its shell comment: a '#' outside quotes that
// starts a word.
func splitComment(line string) (text, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
	}
	return strings.TrimSpace(line), ""
}

// shellWords splits a command line into words the way sh does for the
// plain commands a README shows: quotes group, and anything that would
// need a shell (pipes, redirection, substitution, variables, escapes) is
// refused, so that the test runs exactly what a reader types.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			if quote == '"' && strings.ContainsRune("$`\\", r) {
				return nil, fmt.Errorf("%q inside double quotes needs a shell; the test runs commands without one", r)
			}
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>()$`\\*?[]{}~", r):
			return nil, fmt.Errorf("%q needs a shell; the test runs commands without one", r)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// readmeFile is a file a README block shows in full, such as servers.json
// ("`servers.json`, exactly as Claude Desktop writes it:").
type readmeFile struct {
	name string
	data []byte
	cfg  map[string]any // parsed, for a JSON config
}

var fileNameRE = regexp.MustCompile("`([A-Za-z0-9_.-]+\\.(?:json|ya?ml))`")

// file returns the file a JSON or YAML block shows, named by the line
// before it; ok is false for a block that is no file.
func (b readmeBlock) file(t *testing.T) (readmeFile, bool) {
	t.Helper()
	if b.lang != "json" && b.lang != "yaml" {
		return readmeFile{}, false
	}
	m := fileNameRE.FindStringSubmatch(b.before)
	if m == nil {
		return readmeFile{}, false
	}
	f := readmeFile{name: m[1], data: []byte(strings.Join(b.lines, "\n") + "\n")}
	if b.lang == "json" {
		d := json.NewDecoder(bytes.NewReader(f.data))
		d.UseNumber()
		if err := d.Decode(&f.cfg); err != nil {
			t.Errorf("README.md:%d: %s is not JSON: %v", b.line, f.name, err)
		}
	}
	return f, true
}

// servers returns the file's mcpServers by name.
func (f readmeFile) servers() map[string]map[string]any {
	out := map[string]map[string]any{}
	s, _ := f.cfg["mcpServers"].(map[string]any)
	for name, v := range s {
		if m, ok := v.(map[string]any); ok {
			out[name] = m
		}
	}
	return out
}

// remote reports whether a configured server is reached over the network
// (a URL) rather than started as a child.
func remote(server map[string]any) bool {
	_, hasURL := server["url"]
	_, hasCommand := server["command"]
	return hasURL && !hasCommand
}

// toolPrefix is the <server> of a server's public tool names when the
// config sets no toolPrefix: the name with every character outside
// [A-Za-z0-9-] turned into "-" (README "Configuration").
func toolPrefix(name string, server map[string]any) string {
	if p, ok := server["toolPrefix"].(string); ok && p != "" {
		return p
	}
	return strings.Map(func(r rune) rune {
		if r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
}

// secretEnvRE finds the environment variables a config's secret://env/
// references read.
var secretEnvRE = regexp.MustCompile(`secret://env/([A-Za-z_][A-Za-z0-9_]*)`)

// writeTo writes the file into dir.
func (f readmeFile) writeTo(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
		t.Fatal(err)
	}
}
