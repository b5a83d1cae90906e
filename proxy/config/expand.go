package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// Source is where a config came from: what the variables of other
// clients' files (${workspaceFolder}, ${userHome}, ${VAR:-default}) and
// Cursor's envFile refer to.
type Source struct {
	// Path is the config file. ${workspaceFolder} and relative envFile
	// paths are taken from it. If empty (the embedded config), the
	// working directory stands in for its directory.
	Path string
	// Getenv looks up an environment variable; "" means not set. If nil,
	// os.Getenv is used.
	Getenv func(string) string
	// HomeDir is ${userHome}. If empty, os.UserHomeDir is used.
	HomeDir string
	// ReadFile reads an envFile. If nil, os.ReadFile is used.
	ReadFile func(string) ([]byte, error)
}

// Load parses data as Parse does, then expands what refers to the file's
// surroundings (see Source): envFile is read into env; ${workspaceFolder},
// ${userHome}, ${VAR}, ${VAR:-default} and ${env:VAR} are expanded in
// command, args, env, cwd, url and headers of every server. It is the
// loader serve and validate use. Problems come back all at once, with the
// semantic checks of Validate when the schema has problems; an unset
// variable is a warning in Notes, not an error.
func Load(data []byte, src Source) (*Config, error) {
	c, derr, err := parse(data)
	if err != nil {
		return nil, err
	}
	xerr := c.Expand(src)
	if derr != nil {
		return nil, withValidation(c, errors.Join(derr, xerr))
	}
	if xerr != nil {
		return nil, xerr
	}
	return c, nil
}

// Expand applies src to every server of c (see Load). Secret references
// are left as written, and so is a set ${VAR} in args, env, url and
// headers: the value is read when the server starts, so it never sits in
// the config. Where nothing expands at start (command, cwd, envFile) the
// value is put in. It changes c, so it runs before Validate.
func (c *Config) Expand(src Source) error {
	x := newExpander(src)
	var errs []error
	c.eachServer(func(path string, s *Server) {
		errs = append(errs, x.server(path, s, &c.Notes)...)
	})
	c.Notes.sort()
	return errors.Join(errs...)
}

// eachServer calls fn with every server of c and its path as the file
// writes it: those of mcpServers (or the key they came from), of
// agents.defaults and of each agent, keys sorted; nil ones are skipped.
func (c *Config) eachServer(fn func(path string, s *Server)) {
	each := func(top string, servers map[string]*Server) {
		for _, k := range sortedKeys(servers) {
			if s := servers[k]; s != nil {
				fn(joinKey(top, k), s)
			}
		}
	}
	each(c.serversPath(), c.MCPServers)
	if a := c.Agents; a != nil {
		if d := a.Defaults; d != nil && d.MCP != nil {
			each("agents.defaults.mcp.servers", d.MCP.Servers)
		}
		for i, ag := range a.List {
			if ag != nil && ag.MCP != nil {
				each(joinIndex("agents.list", i)+".mcp.servers", ag.MCP.Servers)
			}
		}
	}
}

type expander struct {
	getenv    func(string) string
	readFile  func(string) ([]byte, error)
	dir       string // the config file's directory
	workspace string
	home      string
}

func newExpander(src Source) *expander {
	x := &expander{getenv: src.Getenv, readFile: src.ReadFile, home: src.HomeDir}
	if x.getenv == nil {
		x.getenv = os.Getenv
	}
	if x.readFile == nil {
		x.readFile = os.ReadFile
	}
	if x.home == "" {
		x.home, _ = os.UserHomeDir()
	}
	x.dir = "."
	if src.Path != "" {
		x.dir = filepath.Dir(src.Path)
	}
	if abs, err := filepath.Abs(x.dir); err == nil {
		x.dir = abs
	}
	x.workspace = workspaceOf(x.dir)
	return x
}

// workspaceOf is ${workspaceFolder} for a config file in dir: the project
// that holds dir when dir is a client's project folder (.vscode/mcp.json,
// .cursor/mcp.json), else dir itself.
func workspaceOf(dir string) string {
	switch filepath.Base(dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(dir)
	}
	return dir
}

// server expands one server at path, returning its problems.
func (x *expander) server(path string, s *Server, notes *Notes) []error {
	var errs []error
	// inline: the value itself goes in (nothing expands it later);
	// otherwise a set variable stays a ${VAR} reference.
	field := func(p string, v *string, inline bool) {
		out, err := x.value(p, *v, inline, notes)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*v = out
	}
	field(path+".command", &s.Command, true)
	field(path+".cwd", &s.Cwd, true)
	for i := range s.Args {
		field(joinIndex(path+".args", i), &s.Args[i], false)
	}
	field(s.urlPath(path), &s.URL, false)
	for _, k := range sortedKeys(s.Env) {
		v := s.Env[k]
		field(joinKey(path+".env", k), &v, false)
		s.Env[k] = v
	}
	for _, k := range sortedKeys(s.Headers) {
		v := s.Headers[k]
		field(joinKey(path+".headers", k), &v, false)
		s.Headers[k] = v
	}
	if s.EnvFile != "" && s.EffectiveTransport() == "stdio" {
		// Validate refuses it on any other transport.
		p := path + ".envFile"
		f := s.EnvFile
		field(p, &f, true)
		if err := x.envFile(p, f, s); err != nil {
			errs = append(errs, err)
		}
		s.EnvFile = ""
	}
	return errs
}

// envFile reads the KEY=VALUE file name (relative to the config file's
// directory) into s.Env; a key s.Env already has keeps its value.
func (x *expander) envFile(path, name string, s *Server) error {
	if name == "" {
		return &FieldError{Path: path, Reason: "must not be empty"}
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(x.dir, name)
	}
	b, err := x.readFile(name)
	if err != nil {
		// The path is the user's own; the error names it, never content.
		return &FieldError{Path: path, Reason: fmt.Sprintf("read %s: %v", name, unwrapPath(err))}
	}
	vars, err := parseEnvFile(b)
	if err != nil {
		return &FieldError{Path: path, Reason: fmt.Sprintf("%s: %v", name, err)}
	}
	if s.Env == nil && len(vars) > 0 {
		s.Env = map[string]string{}
	}
	for _, kv := range vars {
		if _, ok := s.Env[kv[0]]; !ok {
			s.Env[kv[0]] = kv[1]
		}
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseEnvFile reads a dotenv file: KEY=VALUE lines, blank lines and
// # comments, an optional "export " in front, and a value in matching
// single or double quotes taken without them. Values are config values:
// they may hold secret:// references and ${VAR}. Errors give the line
// number, never the line, which may hold a credential.
func parseEnvFile(b []byte) ([][2]string, error) {
	var out [][2]string
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envNameRE.MatchString(k) {
			errs = append(errs, fmt.Errorf("line %d: want KEY=VALUE with KEY an environment variable name", n))
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// value expands the variables in one config value at path.
func (x *expander) value(path, v string, inline bool, notes *Notes) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	out, err := secrets.Rewrite(v, func(inner string) (string, error) {
		return x.variable(path, inner, inline, notes)
	})
	if err != nil {
		return "", errors.Join(prefixErrors(path, err)...)
	}
	return out, nil
}

// variable is the template text that stands for ${inner}.
func (x *expander) variable(path, inner string, inline bool, notes *Notes) (string, error) {
	switch inner {
	case "workspaceFolder":
		return secrets.Escape(x.workspace), nil
	case "workspaceFolderBasename":
		return secrets.Escape(filepath.Base(x.workspace)), nil
	case "userHome":
		if x.home == "" {
			return "", errors.New("${userHome}: the home directory is not known")
		}
		return secrets.Escape(x.home), nil
	case "/", "pathSeparator":
		return string(filepath.Separator), nil
	}
	name, def, hasDef := strings.Cut(inner, ":-")
	name = strings.TrimPrefix(name, "env:")
	if !envNameRE.MatchString(name) {
		return "", errors.New(unsupportedVariable(inner))
	}
	val := x.getenv(name)
	switch {
	case val != "" && inline:
		return secrets.Escape(val), nil
	case val != "":
		return "${" + name + "}", nil
	}
	if notes.expanded == nil {
		notes.expanded = map[string]bool{}
	}
	notes.expanded[path] = true
	if hasDef {
		return secrets.Escape(def), nil
	}
	notes.warn(path, "${%s} is not set; it expands to an empty string", name)
	return "", nil
}

// unsupportedVariable says what is wrong with ${inner} and what to write
// instead.
func unsupportedVariable(inner string) string {
	ref := "${" + truncateText(inner, 64) + "}"
	scope, _, scoped := strings.Cut(inner, ":")
	switch {
	case scoped && scope == "input":
		return ref + " is VS Code's prompt-for-input syntax, which switchboard cannot answer (it has no one to prompt); " +
			"set the value in switchboard's environment and write ${env:NAME} (or ${NAME}), or use a secret reference such as secret://env/NAME"
	case scoped && (scope == "command" || scope == "config"):
		return ref + " is VS Code's " + scope + " variable, which only VS Code can resolve; write the value, ${env:NAME} or a secret:// reference instead"
	}
	return ref + " is not a variable switchboard knows; it expands ${NAME}, ${NAME:-default}, ${env:NAME}, ${workspaceFolder}, ${userHome} and ${secret://…} (write $${ for a literal ${)"
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
