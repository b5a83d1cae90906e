package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// logKeys is the closed vocabulary of log keys (STYLE §5.2), extended here
// by review: a new key is added to this list in the change that needs it.
var logKeys = map[string]bool{
	// STYLE §5.2.
	"error": true, "upstream": true, "tool": true, "method": true, "request_id": true, "session_id": true,
	"gen": true, "digest": true, "reason": true, "duration": true, "attempt": true, "state": true,
	// Lifecycle and catalog.
	"version": true, "servers": true, "addr": true, "admin": true, "tools": true, "prompts": true, "resources": true,
	"keys": true, "renamed": true, "winner": true, "from": true, "outcome": true, "blocked": true, "count": true,
	"gomaxprocs": true, "sysmon": true, "gogc": true, "memlimit": true, "config": true, "uri": true, "names": true,
	// Child stderr re-logging.
	"line": true, "truncated": true, "pid": true, "code": true, "signal": true,
	// Refused downstream input: its size, never its content.
	"bytes": true,
	// Files switchboard watches or writes besides the config (the pin file).
	"path": true,
}

// logMethods are hclog's leveled methods.
var logMethods = map[string]int{"Trace": 0, "Debug": 0, "Info": 0, "Warn": 0, "Error": 0, "Log": 1}

// TestLogCalls checks every hclog call in the module's non-test code: the
// message is a constant lower-case phrase and every key is a constant from
// logKeys. It stands in for hclogvet, which the module proxy does not serve.
func TestLogCalls(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{".", "../upstream", "../secrets", "../sanitize", "../policy", "../router", "../cmd/switchboard"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		sub, _ := filepath.Glob(filepath.Join(dir, "internal", "*", "*.go"))
		for _, f := range append(files, sub...) {
			// The slog bridge re-logs the SDK's own messages and keys.
			if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "logbridge") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				msgAt, ok := logMethods[sel.Sel.Name]
				if !ok || len(call.Args) <= msgAt || !isLogger(sel.X) {
					return true
				}
				checked++
				pos := fset.Position(call.Pos())
				msg, ok := stringLit(call.Args[msgAt])
				if !ok {
					t.Errorf("%s: log message is not a constant string", pos)
					return true
				}
				if r := []rune(msg); len(r) > 0 && unicode.IsUpper(r[0]) {
					t.Errorf("%s: log message %q starts with a capital letter", pos, msg)
				}
				rest := call.Args[msgAt+1:]
				if len(rest)%2 != 0 {
					t.Errorf("%s: odd number of key/value arguments", pos)
				}
				for i := 0; i+1 < len(rest); i += 2 {
					k, ok := stringLit(rest[i])
					if !ok {
						t.Errorf("%s: log key is not a constant string", pos)
						continue
					}
					if !logKeys[k] {
						t.Errorf("%s: log key %q is not in the vocabulary", pos, k)
					}
				}
				return true
			})
		}
	}
	if checked < 20 {
		t.Fatalf("found only %d log calls; the checker is broken", checked)
	}
}

// isLogger reports whether x looks like an hclog.Logger: a name or field
// whose identifier mentions log.
func isLogger(x ast.Expr) bool {
	var name string
	switch e := x.(type) {
	case *ast.Ident:
		name = e.Name
	case *ast.SelectorExpr:
		name = e.Sel.Name
	case *ast.CallExpr:
		if s, ok := e.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Named" || s.Sel.Name == "With") {
			return true
		}
		return false
	default:
		return false
	}
	return strings.Contains(strings.ToLower(name), "log")
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}
