package secrets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    secrets.Ref
		wantErr string
	}{
		{name: "env", in: "secret://env/GITHUB_TOKEN", want: secrets.Ref{Provider: "env", Path: "GITHUB_TOKEN"}},
		{name: "env lower", in: "secret://env/_x1", want: secrets.Ref{Provider: "env", Path: "_x1"}},
		{name: "file absolute", in: "secret://file/var/run/secrets/switchboard/token", want: secrets.Ref{Provider: "file", Path: "/var/run/secrets/switchboard/token"}},
		{name: "file with spaces", in: "secret://file/tmp/my token", want: secrets.Ref{Provider: "file", Path: "/tmp/my token"}},
		{name: "vault", in: "secret://vault/kv/github#token", want: secrets.Ref{Provider: "vault", Path: "kv/github", Field: "token"}},
		{name: "vault nested", in: "secret://vault/team/kv/app/db#password", want: secrets.Ref{Provider: "vault", Path: "team/kv/app/db", Field: "password"}},
		{name: "vault field with hash", in: "secret://vault/kv/x#a#b", want: secrets.Ref{Provider: "vault", Path: "kv/x", Field: "a#b"}},
		{name: "gcp short", in: "secret://gcp/api-key", want: secrets.Ref{Provider: "gcp", Path: "api-key"}},
		{name: "gcp version", in: "secret://gcp/api-key#3", want: secrets.Ref{Provider: "gcp", Path: "api-key", Field: "3"}},
		{name: "gcp latest", in: "secret://gcp/api-key#latest", want: secrets.Ref{Provider: "gcp", Path: "api-key", Field: "latest"}},
		{name: "gcp full", in: "secret://gcp/projects/my-proj/secrets/db_pass#2", want: secrets.Ref{Provider: "gcp", Path: "projects/my-proj/secrets/db_pass", Field: "2"}},
		{name: "gcp domain project", in: "secret://gcp/projects/example.com:proj/secrets/x", want: secrets.Ref{Provider: "gcp", Path: "projects/example.com:proj/secrets/x"}},
		{name: "aws", in: "secret://aws/prod/db", want: secrets.Ref{Provider: "aws", Path: "prod/db"}},
		{name: "aws json key", in: "secret://aws/prod/db#password", want: secrets.Ref{Provider: "aws", Path: "prod/db", Field: "password"}},
		{name: "aws arn", in: "secret://aws/arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf#user", want: secrets.Ref{Provider: "aws", Path: "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf", Field: "user"}},

		{name: "not a reference", in: "env/X", wantErr: "not a secret:// reference"},
		{name: "no provider", in: "secret://", wantErr: "secret://: missing provider"},
		{name: "empty provider", in: "secret:///x", wantErr: "missing provider"},
		{name: "unknown provider", in: "secret://azure/x", wantErr: `secret://azure/x: unknown provider "azure" (want env, file, vault, gcp or aws)`},
		{name: "provider case", in: "secret://ENV/X", wantErr: `unknown provider "ENV"`},
		{name: "env without slash", in: "secret://env", wantErr: "secret://env: missing variable NAME"},
		{name: "env empty name", in: "secret://env/", wantErr: "secret://env/: missing variable NAME"},
		{name: "env field", in: "secret://env/A#b", wantErr: "an env reference takes no #FIELD"},
		{name: "env bad name", in: "secret://env/A-B", wantErr: `invalid environment variable name "A-B"`},
		{name: "env digit first", in: "secret://env/1A", wantErr: "invalid environment variable name"},
		{name: "file empty", in: "secret://file/", wantErr: "secret://file/: missing PATH"},
		{name: "file field", in: "secret://file/a#b", wantErr: "a file reference takes no #FIELD"},
		{name: "vault missing field", in: "secret://vault/kv", wantErr: "secret://vault/kv: missing #FIELD"},
		{name: "vault missing field with path", in: "secret://vault/kv/github", wantErr: "secret://vault/kv/github: missing #FIELD"},
		{name: "vault empty field", in: "secret://vault/kv/github#", wantErr: "empty #FIELD"},
		{name: "vault only mount", in: "secret://vault/kv#token", wantErr: `missing PATH after mount "kv"`},
		{name: "vault no path", in: "secret://vault/#token", wantErr: "missing MOUNT/PATH"},
		{name: "vault empty segment", in: "secret://vault/kv//x#f", wantErr: `empty path element in "kv//x"`},
		{name: "vault trailing slash", in: "secret://vault/kv/x/#f", wantErr: "empty path element"},
		{name: "vault dotdot", in: "secret://vault/kv/../x#f", wantErr: "relative path element"},
		{name: "gcp empty", in: "secret://gcp/", wantErr: "missing secret NAME"},
		{name: "gcp bad name", in: "secret://gcp/a.b", wantErr: `invalid secret name "a.b"`},
		{name: "gcp bad path", in: "secret://gcp/projects/p/keys/n", wantErr: "invalid secret path"},
		{name: "gcp bad version", in: "secret://gcp/x#1.0", wantErr: `invalid version "1.0"`},
		{name: "gcp empty version", in: "secret://gcp/x#", wantErr: `invalid version ""`},
		{name: "aws empty", in: "secret://aws/", wantErr: "missing secret NAME"},
		{name: "aws empty key", in: "secret://aws/x#", wantErr: "empty #JSONKEY"},
		{name: "aws bad name", in: "secret://aws/a b", wantErr: `invalid secret name "a b"`},
		{name: "control character", in: "secret://env/A\n", wantErr: `"secret://env/A\n": control character at offset 14`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := secrets.ParseRef(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseRef(%q) = %+v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRef(%q) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRef(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseRef(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Fatalf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestParseRefNotReference(t *testing.T) {
	_, err := secrets.ParseRef("plain")
	if !errors.Is(err, secrets.ErrNotReference) {
		t.Fatalf("err = %v, want ErrNotReference", err)
	}
}

// FuzzParseRef checks ParseRef(r.String()) == r for everything that parses.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"secret://env/A", "secret://file/var/run/x", "secret://file//x", "secret://vault/kv/a#b",
		"secret://vault/kv/a#b#c", "secret://gcp/n#3", "secret://gcp/projects/p/secrets/n#latest",
		"secret://aws/x#k", "secret://aws/arn:aws:secretsmanager:r:1:secret:x", "secret://", "secret://x/y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := secrets.ParseRef(s)
		if err != nil {
			return
		}
		again, err := secrets.ParseRef(r.String())
		if err != nil {
			t.Fatalf("ParseRef(%q) = %+v, but ParseRef(%q): %v", s, r, r.String(), err)
		}
		if again != r {
			t.Fatalf("round trip of %q: %+v != %+v", s, again, r)
		}
	})
}
