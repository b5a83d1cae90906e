package secrets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// envMap returns an Options.Env function backed by m.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "plain", in: "hello"},
		{name: "lone dollar", in: "cost: $5 and $"},
		{name: "dollar brace escape", in: "$${literal}"},
		{name: "whole ref", in: "secret://vault/kv/github#token"},
		{name: "interpolated ref", in: "Bearer ${secret://env/TAVILY_API_KEY}"},
		{name: "env", in: "${HOME}/x"},
		{name: "two", in: "${secret://env/A}:${secret://file/run/b}"},
		{name: "bad whole ref", in: "secret://vault/kv", wantErr: "secret://vault/kv: missing #FIELD"},
		{name: "whole ref with text", in: "secret://env/A and more", wantErr: "invalid environment variable name"},
		{name: "bad interpolated ref", in: "x ${secret://nope/y}", wantErr: `offset 2: secret://nope/y: unknown provider "nope"`},
		{name: "unterminated", in: "abc ${HOME", wantErr: `offset 4: unterminated "${"`},
		{name: "empty braces", in: "a${}", wantErr: `offset 1: empty "${}"`},
		{name: "bad env name", in: "${A-B}", wantErr: "${A-B} is neither ${secret://…} nor ${NAME}"},
		{name: "default syntax unsupported", in: "${A:-x}", wantErr: "is neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := secrets.Check(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check(%q): %v", tt.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check(%q) = %v, want error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestCheckReportsEachPiece(t *testing.T) {
	err := secrets.Check("${secret://x/a} ${B-C} ${secret://env/}")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"offset 0:", "offset 16:", "offset 23:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCheckDoesNotEchoLiteralText(t *testing.T) {
	err := secrets.Check("hunter2-literal-password ${secret://env/}")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error = %v", err)
	}
}

func TestHasRefs(t *testing.T) {
	for in, want := range map[string]bool{
		"plain":                   false,
		"$5":                      false,
		"$${HOME}":                false,
		"${HOME}":                 true,
		"secret://env/A":          true,
		"x ${secret://env/A} y":   true,
		"${broken":                true,
		"secret-ish://env/A text": false,
	} {
		if got := secrets.HasRefs(in); got != want {
			t.Errorf("HasRefs(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRefs(t *testing.T) {
	got, err := secrets.Refs("${secret://env/A}${secret://env/A}${secret://vault/kv/x#y}${HOME}")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "secret://env/A" || got[1].String() != "secret://vault/kv/x#y" {
		t.Fatalf("Refs = %v", got)
	}
}

func TestExpandInterpolation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("file-secret\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envMap(map[string]string{"A": "alpha-secret", "HOME": "/home/u", "EMPTY": ""})
	r := secrets.NewResolver(secrets.Options{Env: env})
	defer r.Close()
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "plain", in: "plain", want: "plain"},
		{name: "whole env ref", in: "secret://env/A", want: "alpha-secret"},
		{name: "whole file ref trims newlines", in: "secret://file" + file, want: "file-secret"},
		{name: "interpolated", in: "${secret://env/A}-x", want: "alpha-secret-x"},
		{name: "two refs", in: "${secret://env/A}:${secret://file" + file + "}", want: "alpha-secret:file-secret"},
		{name: "escape", in: "$${literal}", want: "${literal}"},
		{name: "escape before ref", in: "$${A} ${secret://env/A}", want: "${A} alpha-secret"},
		{name: "env var", in: "${HOME}/bin", want: "/home/u/bin"},
		{name: "set but empty env var", in: "[${EMPTY}]", want: "[]"},
		{name: "lone dollars", in: "$ $$ $A {x}", want: "$ $$ $A {x}"},
		{name: "unset env var", in: "${NOPE}/bin", wantErr: "${NOPE}: environment variable NOPE is not set"},
		{name: "unset env ref", in: "secret://env/NOPE", wantErr: "secret://env/NOPE: environment variable NOPE is not set"},
		{name: "missing file", in: "secret://file" + dir + "/missing", wantErr: "secret://file" + dir + "/missing: file: " + dir + "/missing does not exist"},
		{name: "directory", in: "secret://file" + dir, wantErr: "is a directory"},
		{name: "malformed", in: "${secret://vault/kv}", wantErr: "missing #FIELD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Expand(context.Background(), tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Expand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExpandRealEnv(t *testing.T) {
	t.Setenv("SWITCHBOARD_TEST_SECRET", "from-process-env")
	r := secrets.NewResolver(secrets.Options{})
	defer r.Close()
	got, err := r.Expand(context.Background(), "${secret://env/SWITCHBOARD_TEST_SECRET}|${SWITCHBOARD_TEST_SECRET}")
	if err != nil || got != "from-process-env|from-process-env" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
}

func TestNotFoundIs(t *testing.T) {
	r := secrets.NewResolver(secrets.Options{Env: envMap(nil)})
	defer r.Close()
	for _, in := range []string{"secret://env/X", "${X}", "secret://file/nonexistent/x"} {
		_, err := r.Expand(context.Background(), in)
		if !errors.Is(err, secrets.ErrNotFound) {
			t.Errorf("Expand(%q) = %v, want ErrNotFound", in, err)
		}
	}
	_, err := r.Expand(context.Background(), "secret://env/X")
	var re *secrets.ResolveError
	if !errors.As(err, &re) || re.Ref.String() != "secret://env/X" {
		t.Fatalf("err = %#v, want *ResolveError for secret://env/X", err)
	}
}

func TestRewrite(t *testing.T) {
	up := func(inner string) (string, error) {
		if inner == "bad" {
			return "", errors.New("bad variable")
		}
		return "${" + strings.ToUpper(inner) + "}", nil
	}
	for _, tt := range []struct{ in, want, wantErr string }{
		{in: "plain", want: "plain"},
		{in: "a ${x} b $${y} ${secret://env/Z} $", want: "a ${X} b $${y} ${secret://env/Z} $"},
		{in: "secret://env/${x}", want: "secret://env/${x}"},
		{in: "${x", want: "${x"},
		{in: "${bad} ${x}", wantErr: "bad variable"},
	} {
		got, err := secrets.Rewrite(tt.in, up)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Rewrite(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rewrite(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got := secrets.Escape("a${b}"); got != "a$${b}" {
		t.Errorf("Escape = %q", got)
	}
}
