package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-switchboard/switchboard/policy"
)

// --- Zed -------------------------------------------------------------

// zedDialect reads Zed's settings.json: context_servers, each either a
// custom server (command, args, env; or url, headers) or one an extension
// provides, which only Zed can start.
var zedDialect = &dialect{
	client: "Zed",
	key:    "context_servers",
	theirs: []string{"telemetry"},
	entry: func(r *rewriter) bool {
		if r.e["source"] == "extension" {
			r.dropped = "a server a Zed extension provides, which only Zed can start; left out"
			return false
		}
		r.skip("source", "settings")
		if cmd, ok := r.e["command"].(map[string]any); ok {
			// Older Zed: "command": {"path", "args", "env"}.
			delete(r.e, "command")
			for _, ft := range [][2]string{{"path", "command"}, {"args", "args"}, {"env", "env"}} {
				from, to := ft[0], ft[1]
				if v, ok := cmd[from]; ok {
					if has(r.e, to) {
						r.fail(joinKey(joinKey(r.path, "command"), from), "%s is also set outside command; set it once", to)
						continue
					}
					r.e[to] = v
				}
			}
		}
		return true
	},
}

// --- Codex CLI -------------------------------------------------------

// codexDialect reads Codex CLI's config.toml: [mcp_servers.<name>] tables.
var codexDialect = &dialect{
	client: "Codex CLI",
	key:    "mcp_servers",
	theirs: []string{"tools"},
	entry: func(r *rewriter) bool {
		r.envRefs("env_vars")
		if has(r.e, "url") {
			// Codex reaches a url over streamable HTTP only.
			r.setDefault("type", "http")
		}
		r.moveObject("http_headers", "headers")
		if v, ok := r.e["bearer_token_env_var"]; ok {
			delete(r.e, "bearer_token_env_var")
			name, _ := v.(string)
			if !envNameRE.MatchString(name) {
				r.fail(joinKey(r.path, "bearer_token_env_var"), "want an environment variable name")
			} else if h := r.object("headers"); h != nil {
				if has(h, "Authorization") {
					r.fail(joinKey(r.path, "bearer_token_env_var"), "the entry sets an Authorization header too; keep one")
				} else {
					h["Authorization"] = "Bearer ${" + name + "}"
				}
			}
		}
		if v, ok := r.e["env_http_headers"]; ok {
			if m, isObj := v.(map[string]any); isObj {
				for _, k := range sortedKeys(m) {
					if name, _ := m[k].(string); envNameRE.MatchString(name) {
						m[k] = "${" + name + "}"
					} else {
						r.fail(joinKey(joinKey(r.path, "env_http_headers"), k), "want an environment variable name")
					}
				}
			}
			r.moveObject("env_http_headers", "headers")
		}
		if has(r.e, "startup_timeout_sec") && has(r.e, "startup_timeout_ms") {
			r.fail(joinKey(r.path, "startup_timeout_ms"), "startup_timeout_sec is set too; keep one")
		}
		r.seconds("startup_timeout_sec", "timeout")
		r.rename("startup_timeout_ms", "timeout")
		r.seconds("tool_timeout_sec", "toolTimeout")
		r.rename("enabled_tools", "includeTools")
		r.rename("disabled_tools", "excludeTools")
		if req, ok := r.e["required"]; ok {
			delete(r.e, "required")
			if req == true {
				l, _ := r.doc["requireReady"].([]any)
				r.doc["requireReady"] = append(l, r.name)
			}
		}
		r.skip("scopes", "oauth_resource", "oauth", "tools")
		return true
	},
}

// --- Goose -----------------------------------------------------------

func isGoose(m map[string]any) bool {
	ext, ok := m["extensions"].(map[string]any)
	if !ok {
		return false
	}
	for _, v := range ext {
		if e, ok := v.(map[string]any); ok && (has(e, "cmd") || has(e, "uri") || has(e, "bundled") || has(e, "type")) {
			return true
		}
	}
	return false
}

// gooseDialect reads Goose's config.yaml: extensions of type stdio, sse
// or streamable_http. Built-in and platform extensions run inside Goose.
var gooseDialect = &dialect{
	client: "Goose",
	key:    "extensions",
	entry: func(r *rewriter) bool {
		switch r.e["type"] {
		case "builtin", "platform", "frontend", "inline_python":
			r.dropped = fmt.Sprintf("a Goose %v extension, which runs inside Goose; left out", r.e["type"])
			return false
		}
		r.rename("cmd", "command")
		r.moveObject("envs", "env")
		r.envRefs("env_keys")
		r.rename("uri", "url")
		// Goose's timeout bounds every request, the first one too.
		r.seconds("timeout", "timeout", "toolTimeout")
		if l, ok := r.e["available_tools"].([]any); ok && len(l) > 0 {
			r.rename("available_tools", "includeTools")
		}
		r.skip("name", "display_name", "description", "bundled", "available_tools")
		return true
	},
}

// --- Continue --------------------------------------------------------

func isContinue(m map[string]any) bool {
	if _, ok := m["mcpServers"].([]any); ok {
		return true
	}
	return has(m, "schema") && has(m, "version") && has(m, "name")
}

// continueSecretRE is Continue's ${{ secrets.NAME }} (or inputs.NAME).
var continueSecretRE = regexp.MustCompile(`\$\{\{\s*(?:secrets|inputs)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// continueDialect reads Continue's config.yaml and .continue/mcpServers
// blocks: a list of servers, each named by its name.
var continueDialect = &dialect{
	client: "Continue",
	key:    "mcpServers",
	theirs: []string{"prompts"},
	top: func(r *rewriter, _ map[string]any) {
		l, ok := r.doc["mcpServers"].([]any)
		if !ok {
			return
		}
		servers := map[string]any{}
		for i, v := range l {
			p := joinIndex("mcpServers", i)
			e, ok := v.(map[string]any)
			if !ok {
				r.fail(p, "want an object, got %s", kindName(v))
				continue
			}
			if has(e, "uses") {
				r.notes.ignore(r.client, p)
				r.notes.info(p, "uses a Continue hub block, which only Continue can fetch; left out")
				continue
			}
			name, _ := e["name"].(string)
			if name == "" {
				r.fail(p+".name", "required: Continue's server name is switchboard's server key")
				continue
			}
			if has(servers, name) {
				r.fail(p+".name", "duplicate server name %q", name)
				continue
			}
			delete(e, "name")
			servers[name] = e
		}
		r.doc["mcpServers"] = servers
	},
	entry: func(r *rewriter) bool {
		// Continue reads its secrets from its .env files; switchboard
		// reads the same names from its environment.
		eachString(r.e, func(s string) string { return continueSecretRE.ReplaceAllString(s, "$${$1}") })
		r.skip("faviconUrl")
		return true
	},
}

// --- Amazon Q --------------------------------------------------------

// amazonQMarkers are the top-level keys only Amazon Q's agent files
// (~/.aws/amazonq/cli-agents/*.json, agents/default.json) write.
var amazonQMarkers = []string{"useLegacyMcpJson", "allowedTools", "toolsSettings", "toolAliases"}

// amazonQDialect reads an Amazon Q agent file. Its tools list says which
// MCP servers (@server) and tools (@server/tool) the agent may use: a
// server it does not name is not started, and one it names only some
// tools of publishes only those.
var amazonQDialect = &dialect{
	client: "Amazon Q",
	key:    "mcpServers",
	theirs: []string{"tools"},
	top: func(r *rewriter, servers map[string]any) {
		l, ok := r.doc["tools"].([]any)
		if !ok {
			return
		}
		whole := map[string]bool{}
		some := map[string][]any{}
		for _, v := range l {
			s, _ := v.(string)
			if s == "*" {
				return
			}
			if !strings.HasPrefix(s, "@") || s == "@builtin" {
				continue
			}
			srv, tool, one := strings.Cut(s[1:], "/")
			for name := range servers {
				switch {
				case !policy.Match(srv, name):
				case !one || tool == "*":
					whole[name] = true
				default:
					some[name] = append(some[name], tool)
				}
			}
		}
		for _, name := range sortedKeys(servers) {
			e, ok := servers[name].(map[string]any)
			if !ok || whole[name] {
				continue
			}
			p := joinKey("mcpServers", name)
			if len(some[name]) == 0 {
				turnOff(e)
				r.notes.info(p, "the agent's tools do not name @%s; not started", name)
				continue
			}
			inc, _ := e["includeTools"].([]any)
			e["includeTools"] = append(inc, some[name]...)
			r.notes.info(p, "the agent's tools name only some of its tools; only those are published")
		}
	},
	entry: func(r *rewriter) bool {
		// Amazon Q's timeout bounds each request.
		if has(r.e, "timeout") {
			r.rename("timeout", "toolTimeout")
			r.notes.info(joinKey(r.path, "timeout"), "Amazon Q's per-request timeout, read as toolTimeout")
		}
		return true
	},
}

// --- Gemini CLI ------------------------------------------------------

// geminiMarkers are top-level keys only Gemini CLI's settings.json
// writes (its first settings layout and the nested one).
var geminiMarkers = []string{
	"selectedAuthType", "coreTools", "allowMCPServers", "excludeMCPServers", "mcpServerCommand",
	"contextFileName", "checkpointing", "usageStatisticsEnabled", "preferredEditor", "hideTips", "autoAccept",
	"mcp", "general", "ui", "security", "privacy", "ide", "advanced", "experimental", "context", "output",
}

// geminiServerKeys are server keys only Gemini CLI writes. A file with
// one of them in any server is read the way Gemini CLI reads it.
var geminiServerKeys = []string{"httpUrl", "trust", "includeTools", "excludeTools", "authProviderType", "targetAudience", "targetServiceAccount"}

// geminiDialect reads Gemini CLI's settings.json. Its servers are
// switchboard's shape (see geminiEntry); mcp.allowed and mcp.excluded
// (allowMCPServers, excludeMCPServers before) say which of them run.
var geminiDialect = &dialect{
	client: "Gemini CLI",
	key:    "mcpServers",
	theirs: []string{"tools", "telemetry"},
	top: func(r *rewriter, servers map[string]any) {
		allowed, hasAllowed := stringSet(r.doc["allowMCPServers"])
		excluded, _ := stringSet(r.doc["excludeMCPServers"])
		if mcp, ok := r.doc["mcp"].(map[string]any); ok {
			if s, ok := stringSet(mcp["allowed"]); ok {
				allowed, hasAllowed = s, true
			}
			if s, ok := stringSet(mcp["excluded"]); ok {
				for k := range s {
					excluded[k] = true
				}
			}
		}
		for _, name := range sortedKeys(servers) {
			e, ok := servers[name].(map[string]any)
			if !ok || (!excluded[name] && (!hasAllowed || allowed[name])) {
				continue
			}
			turnOff(e)
			r.notes.info(joinKey("mcpServers", name), "left out by Gemini CLI's allowed or excluded servers; not started")
		}
	},
}

// turnOff makes the raw server entry e one that is configured but not
// started.
func turnOff(e map[string]any) {
	delete(e, "disabled")
	e["enabled"] = false
}

// stringSet is the strings of the list v.
func stringSet(v any) (map[string]bool, bool) {
	l, ok := v.([]any)
	out := map[string]bool{}
	for _, x := range l {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out, ok
}

// geminiVarRE is $NAME, which Gemini CLI expands in env values.
var geminiVarRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// geminiEntry reads a server the way Gemini CLI does: url is an SSE
// endpoint (httpUrl, read by serverPass, a streamable-HTTP one), timeout
// bounds every request, the first one too, and env values may name
// variables as $NAME.
func geminiEntry(r *rewriter) {
	if has(r.e, "url") && !has(r.e, "httpUrl") {
		r.setDefault("type", "sse")
	}
	if t, ok := r.e["timeout"]; ok {
		r.setDefault("toolTimeout", t)
	}
	if env, ok := r.e["env"].(map[string]any); ok {
		for _, k := range sortedKeys(env) {
			if s, ok := env[k].(string); ok && !strings.Contains(s, "${") {
				env[k] = geminiVarRE.ReplaceAllString(s, "$${$1}")
			}
		}
	}
}
