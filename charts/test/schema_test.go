package test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSchemaRejects: values.schema.json turns typos and bad values into
// errors that name the path and the problem.
func TestSchemaRejects(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, c := range []struct {
		vals string
		want []string // substrings of the error
	}{
		{`replicaCont: 2`, []string{"at ''", "additional properties 'replicaCont' not allowed"}},
		{`image: {tags: "1"}`, []string{"at '/image'", "'tags' not allowed"}},
		{`config: {mcpServers: {github: {comand: npx}}}`, []string{"at '/config/mcpServers/github'", "'comand' not allowed"}},
		{`config: {mcpServer: {}}`, []string{"at '/config'", "'mcpServer' not allowed"}},
		{`config: {sanitize: {onSuspicios: warn}}`, []string{"at '/config/sanitize'", "'onSuspicios' not allowed"}},
		{`config: {agents: {list: [{id: a, tool: {}}]}}`, []string{"at '/config/agents/list/0'", "'tool' not allowed"}},
		{`config: {mcpServers: {a: {url: "https://x", breaker: {failure: 1}}}}`, []string{"at '/config/mcpServers/a/breaker'", "'failure' not allowed"}},
		{`probes: {liveness: {perodSeconds: 5}}`, []string{"at '/probes/liveness'", "'perodSeconds' not allowed"}},
		{`vault: {adress: x}`, []string{"at '/vault'", "'adress' not allowed"}},
		{`service: {sessionAfinity: ClientIP}`, []string{"at '/service'", "'sessionAfinity' not allowed"}},
		{`app: {imag: {repository: x}}`, []string{"at '/app'", "'imag' not allowed"}},
		{`secretMounts: [{name: a, secretName: b, mountpath: /x}]`, []string{"at '/secretMounts/0'", "'mountpath' not allowed"}},
		{`cloud: {azure: {}}`, []string{"at '/cloud'", "'azure' not allowed"}},
		{`mode: gatway`, []string{"at '/mode'", "sidecar", "gateway", "embedded"}},
		{`service: {sessionAffinity: Cookie}`, []string{"at '/service/sessionAffinity'", "ClientIP"}},
		{`config: {mcpServers: {a: {isolation: perclient}}}`, []string{"at '/config/mcpServers/a/isolation'", "per-client"}},
		{`config: {mcpServers: {a: {transport: websocket}}}`, []string{"at '/config/mcpServers/a/transport'"}},
		{`config: {sanitize: {pinTools: always}}`, []string{"at '/config/sanitize/pinTools'"}},
		{`config: {shutdownTimeout: "10s"}`, []string{"at '/config/shutdownTimeout'", "integer"}},
		{`config: {mcpServers: {a: {command: x, annotations: {drop: {readOnly: true}}}}}`, []string{"at '/config/mcpServers/a/annotations/drop'", "'readOnly' not allowed"}},
		{`config: {agents: {list: [{id: a, readOnly: "yes"}]}}`, []string{"at '/config/agents/list/0/readOnly'", "boolean"}},
		{`ports: {mcp: http}`, []string{"at '/ports/mcp'", "integer"}},
		{`goMaxProcsFromCPULimit: "yes"`, []string{"at '/goMaxProcsFromCPULimit'", "boolean"}},
		{`replicaCount: -1`, []string{"at '/replicaCount'"}},
		{`secretMounts: [{name: a, secretName: b}]`, []string{"at '/secretMounts/0'", "mountPath"}},
		{`config: {mcpServers: {a: {toolPrefix: "a_b"}}}`, []string{"at '/config/mcpServers/a/toolPrefix'"}},
		{`sessionKey: {existingSecrets: k}`, []string{"at '/sessionKey'", "'existingSecrets' not allowed"}},
		{`sessionKey: {required: "no"}`, []string{"at '/sessionKey/required'", "boolean"}},
		{`sessionKey: {secretKey: ""}`, []string{"at '/sessionKey/secretKey'"}},
		{`config: {sessionKey: ""}`, []string{"at '/config/sessionKey'"}},
		{`ingress: {sessionRouting: "on"}`, []string{"at '/ingress/sessionRouting'", "boolean"}},
	} {
		_, err := renderChart(ch, parseValues(t, c.vals))
		if err == nil {
			t.Errorf("%s: accepted", c.vals)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.vals, w, err)
			}
		}
	}
}

// TestSchemaAccepts: every example and the edge values the render tests use
// pass the schema (they render), and so do these.
func TestSchemaAccepts(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, vals := range []string{
		`{}`,
		`{config: {mcpServers: {"brave.search": {command: npx, disabled: true}, b: {type: streamable-http, url: "https://x"}}}}`,
		`{config: {agents: {defaults: {mcp: {servers: {a: {command: x}}}, tools: {deny: ["*"]}}, list: [{id: a, limits: {callsPerMinute: 5}}]}}}`,
		`{podDisruptionBudget: {enabled: true, maxUnavailable: "25%"}}`,
		`{autoscaling: {enabled: true, targetMemoryUtilizationPercentage: 80}}`,
		`{mode: gateway, service: {exposeAdmin: true, type: LoadBalancer}}`,
		`{mode: gateway, replicaCount: 3, sessionKey: {existingSecret: k, secretKey: key, required: true}, ingress: {sessionRouting: false}}`,
		`{mode: gateway, replicaCount: 2, config: {sessionKey: "secret://env/K", requestStateKey: "secret://env/K"}}`,
	} {
		if _, err := renderChart(ch, parseValues(t, vals)); err != nil {
			t.Errorf("%s: %v", vals, err)
		}
	}
}

// schema is values.schema.json, decoded.
func schema(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return s
}

// at follows a slash-separated path through the schema, resolving $refs.
func at(t testing.TB, root map[string]any, path string) map[string]any {
	t.Helper()
	cur := root
	for _, p := range strings.Split(path, "/") {
		next, ok := cur[p].(map[string]any)
		if !ok {
			t.Fatalf("schema has no %s (at %q)", path, p)
		}
		cur = next
		if ref, ok := cur["$ref"].(string); ok {
			cur = at(t, root, strings.TrimPrefix(ref, "#/"))
		}
	}
	return cur
}

// goStructs parses Go files and returns every struct's JSON field names.
func goStructs(t testing.TB, files ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			var names []string
			for _, fld := range st.Fields.List {
				if fld.Tag == nil {
					continue
				}
				tag, _ := strconv.Unquote(fld.Tag.Value)
				name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				if name != "" && name != "-" {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			out[ts.Name.Name] = names
			return false
		})
	}
	return out
}

// goStringLists returns the []string package variables of a Go file, and the
// keys of its map[string]string variables.
func goStringLists(t testing.TB, file string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				cl, ok := v.(*ast.CompositeLit)
				if !ok {
					continue
				}
				var list []string
				for _, e := range cl.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						e = kv.Key
					}
					if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
						s, _ := strconv.Unquote(bl.Value)
						list = append(list, s)
					}
				}
				slices.Sort(list)
				out[vs.Names[i].Name] = list
			}
		}
	}
	return out
}

func propertyNames(s map[string]any) []string {
	props, _ := s["properties"].(map[string]any)
	names := mapKeys(props)
	return names
}

// TestSchemaMatchesGoConfig keeps the config part of values.schema.json in
// step with the Go config structs: every field of config.Config and its parts
// is allowed, and nothing else; enums equal the Go lists.
func TestSchemaMatchesGoConfig(t *testing.T) {
	s := schema(t)
	structs := goStructs(t,
		filepath.Join(repoRoot, "proxy", "config", "config.go"),
		filepath.Join(repoRoot, "proxy", "config", "annotations.go"),
		filepath.Join(repoRoot, "proxy", "config", "protected.go"),
		filepath.Join(repoRoot, "policy", "rules.go"),
		filepath.Join(repoRoot, "policy", "limit.go"))
	for goType, path := range map[string]string{
		"Config":            "properties/config",
		"Server":            "definitions/server",
		"Breaker":           "definitions/server/properties/breaker",
		"Egress":            "properties/config/properties/egress",
		"Agents":            "properties/config/properties/agents",
		"AgentDefaults":     "properties/config/properties/agents/properties/defaults",
		"AgentMCP":          "definitions/agentMCP",
		"Agent":             "properties/config/properties/agents/properties/list/items",
		"Auth":              "properties/config/properties/auth",
		"Admin":             "properties/config/properties/admin",
		"Sanitize":          "properties/config/properties/sanitize",
		"Telemetry":         "properties/config/properties/telemetry",
		"Audit":             "properties/config/properties/audit",
		"Rules":             "definitions/rules",
		"Limit":             "definitions/limit",
		"ToolAnnotations":   "definitions/toolAnnotations",
		"ProtectedResource": "properties/config/properties/auth/properties/oauth",
		"Introspection":     "properties/config/properties/auth/properties/oauth/properties/introspection",
	} {
		fields, ok := structs[goType]
		if !ok {
			t.Errorf("no Go struct %s", goType)
			continue
		}
		node := at(t, s, path)
		closed := node
		want := fields
		switch goType {
		case "Config":
			// Closed unless the file is another client's (TestSchemaClientFiles).
			closed, _ = node["else"].(map[string]any)
			if got := propertyNames(closed); !slices.Equal(got, sorted(append(slices.Clone(fields), "servers"))) {
				t.Errorf("%s/else: properties %v, want the Go fields %v and servers", path, got, fields)
			}
		case "Server":
			// The other clients' server keys config.Load skips or reads.
			// oauth is both switchboard's and Gemini CLI's key.
			want = slices.Compact(sorted(append(slices.Clone(fields), clientServerKeys(t)...)))
		}
		if closed == nil || closed["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", path)
		}
		if got := propertyNames(node); !slices.Equal(got, want) {
			t.Errorf("%s (%s): schema properties %v, Go fields %v", path, goType, got, want)
		}
	}

	lists := goStringLists(t, filepath.Join(repoRoot, "proxy", "config", "validate.go"))
	for goVar, path := range map[string]string{
		"protocols":        "definitions/server/properties/protocol",
		"isolations":       "definitions/server/properties/isolation",
		"lazyLists":        "definitions/server/properties/lazyList",
		"redirects":        "definitions/server/properties/followRedirects",
		"transportAliases": "definitions/server/properties/transport",
		"suspicious":       "properties/config/properties/sanitize/properties/onSuspicious",
		"pinModes":         "properties/config/properties/sanitize/properties/pinTools",
		"schemaProfs":      "properties/config/properties/sanitize/properties/schemaProfile",
		"auditErrors":      "properties/config/properties/audit/properties/onError",
	} {
		var enum []string
		for _, e := range at(t, s, path)["enum"].([]any) {
			enum = append(enum, e.(string))
		}
		slices.Sort(enum)
		if want := lists[goVar]; !slices.Equal(enum, want) {
			t.Errorf("%s: enum %v, Go %s %v", path, enum, goVar, want)
		}
	}
	typeEnum := at(t, s, "definitions/server/properties/type")["enum"]
	if !reflect.DeepEqual(typeEnum, at(t, s, "definitions/server/properties/transport")["enum"]) {
		t.Errorf("type and transport enums differ")
	}
}

// TestSchemaClosed: every object the user types has additionalProperties
// false, except the maps and Kubernetes objects passed through as they are.
func TestSchemaClosed(t *testing.T) {
	open := map[string]bool{ // free-form by design
		"strategy": true, "affinity": true, "resources": true, "securityContext": true,
		"app/resources": true, "app/securityContext": true, "app/livenessProbe": true,
		"app/readinessProbe": true, "app/startupProbe": true, "app/lifecycle": true,
		"autoscaling/behavior": true, "podSecurityContext": true, "global": true,
	}
	var walk func(path string, n map[string]any)
	walk = func(path string, n map[string]any) {
		props, ok := n["properties"].(map[string]any)
		closed := n["additionalProperties"] == false
		if e, isCond := n["else"].(map[string]any); isCond {
			// Closed unless the file is another client's.
			closed = e["additionalProperties"] == false
		}
		if ok && !closed {
			t.Errorf("%s: has properties but additionalProperties is not false", path)
		}
		for k, v := range props {
			p := strings.TrimPrefix(path+"/"+k, "/")
			m := v.(map[string]any)
			if types := fmt.Sprint(m["type"]); strings.Contains(types, "object") && m["properties"] == nil &&
				m["additionalProperties"] == nil && m["$ref"] == nil && !open[p] {
				t.Errorf("%s: object without properties or additionalProperties", p)
			}
			walk(p, m)
			if items, ok := m["items"].(map[string]any); ok {
				walk(p+"/items", items)
			}
		}
	}
	walk("", schema(t))
}

// TestValuesMatchGoDefaults: values.yaml repeats the binary's defaults.
func TestValuesMatchGoDefaults(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "proxy", "config", "config.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if bl, ok := v.(*ast.BasicLit); ok {
					consts[vs.Names[i].Name] = strings.Trim(bl.Value, `"`)
				}
			}
		}
	}
	vals := readValues(t, filepath.Join(chartDir, "values.yaml"))
	_, port, _ := net.SplitHostPort(consts["DefaultListen"])
	_, adminPort, _ := net.SplitHostPort(consts["DefaultAdminListen"])
	ports := vals["ports"].(map[string]any)
	config := vals["config"].(map[string]any)
	for name, c := range map[string][2]string{
		"ports.mcp":              {fmt.Sprint(ports["mcp"]), port},
		"ports.admin":            {fmt.Sprint(ports["admin"]), adminPort},
		"config.shutdownTimeout": {fmt.Sprint(config["shutdownTimeout"]), consts["DefaultShutdownMS"]},
	} {
		if c[0] != c[1] || c[1] == "" {
			t.Errorf("values.yaml %s = %s, Go default %q", name, c[0], c[1])
		}
	}
	// The sidecar's MCP listener binds the Go default host.
	d := deployment(t, render(t, nil))
	l, _ := envValue(switchboardContainer(t, &d.Spec.Template.Spec, false), "SWITCHBOARD_LISTEN")
	if l != consts["DefaultListen"] {
		t.Errorf("sidecar SWITCHBOARD_LISTEN = %q, Go default %q", l, consts["DefaultListen"])
	}
	// Values the binary reads from the config are not repeated outside it.
	for _, k := range []string{"logLevel", "logFormat", "shutdownTimeout", "listen", "adminListen"} {
		if _, ok := vals[k]; ok {
			t.Errorf("values.yaml has a top-level %s; it belongs under config", k)
		}
	}
}

// TestImageTagIsAppVersion: the default tag is the chart's appVersion
// (named templates embedded in another chart cannot read it).
func TestImageTagIsAppVersion(t *testing.T) {
	ch := loadChart(t, chartDir)
	tag := ch.Values["image"].(map[string]any)["tag"]
	if tag != ch.Metadata.AppVersion {
		t.Errorf("image.tag %v != appVersion %s", tag, ch.Metadata.AppVersion)
	}
}

// TestReadmeDocumentsEveryValue: every key of values.yaml appears in the
// chart's README.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	vals := readValues(t, filepath.Join(chartDir, "values.yaml"))
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := prefix + k
			whole := p == "config.mcpServers" || p == "resources" || p == "securityContext"
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !whole {
				walk(p+".", sub)
				continue
			}
			if !strings.Contains(string(readme), "`"+p+"`") {
				t.Errorf("README.md does not document `%s`", p)
			}
		}
	}
	walk("", vals)
	// And every schema property at the top level.
	for _, k := range propertyNames(schema(t)) {
		if !strings.Contains(string(readme), "`"+k) {
			t.Errorf("README.md does not mention `%s`", k)
		}
	}
}

func sorted(l []string) []string {
	slices.Sort(l)
	return l
}

// clientServerKeys are the server keys of other clients that config.Load
// accepts: those it skips (clientServerKeys in clients.go) and those it
// reads as one of its own (serverPass).
func clientServerKeys(t testing.TB) []string {
	skipped := goStringLists(t, filepath.Join(repoRoot, "proxy", "config", "clients.go"))["clientServerKeys"]
	if len(skipped) == 0 {
		t.Fatal("no clientServerKeys in proxy/config/clients.go")
	}
	return append(skipped, "serverUrl", "transportType", "httpUrl", "includeTools", "excludeTools")
}

// TestSchemaClientFiles: the values (and config) of another client's file
// are allowed when the file holds a key only that client writes, the keys
// config.Load recognises a client's file by; without one, only the chart's
// values and switchboard's config keys are.
func TestSchemaClientFiles(t *testing.T) {
	s := schema(t)
	var markers []string
	for _, alt := range at(t, s, "definitions/clientFile")["anyOf"].([]any) {
		markers = append(markers, alt.(map[string]any)["required"].([]any)[0].(string))
	}
	slices.Sort(markers)
	clients := goStringLists(t, filepath.Join(repoRoot, "proxy", "config", "clients.go"))
	dialects := goStringLists(t, filepath.Join(repoRoot, "proxy", "config", "dialects.go"))
	// The keys the dialects keep their servers under (not mcpServers), and
	// Continue's block files' schema.
	want := []string{"context_servers", "mcp_servers", "extensions", "schema"}
	want = append(want, clients["clientTopKeys"]...)
	want = append(want, dialects["geminiMarkers"]...)
	want = append(want, dialects["amazonQMarkers"]...)
	if slices.Sort(want); !slices.Equal(markers, want) {
		t.Errorf("clientFile markers %v\nwant %v", markers, want)
	}
	for _, path := range []string{"", "properties/config"} {
		node := s
		if path != "" {
			node = at(t, s, path)
		}
		if ref, _ := node["if"].(map[string]any)["$ref"].(string); ref != "#/definitions/clientFile" {
			t.Errorf("%s: if is %v, want the clientFile $ref", path, node["if"])
		}
	}
	root, _ := s["else"].(map[string]any)
	want = append(propertyNames(s), propertyNames(at(t, s, "properties/config"))...)
	want = append(want, "servers")
	slices.Sort(want)
	want = slices.Compact(want)
	if got := propertyNames(root); !slices.Equal(got, want) {
		t.Errorf("else: properties %v\nwant the chart's values, the config keys and servers %v", got, want)
	}
}
