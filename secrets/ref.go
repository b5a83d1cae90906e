package secrets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Scheme is the prefix of every secret reference.
const Scheme = "secret://"

// Provider names, the first path element of a reference.
const (
	ProviderEnv   = "env"
	ProviderFile  = "file"
	ProviderVault = "vault"
	ProviderGCP   = "gcp"
	ProviderAWS   = "aws"
)

// ErrNotReference is returned by ParseRef for a string that does not start
// with "secret://".
var ErrNotReference = errors.New("not a secret:// reference")

// Ref is a parsed secret reference. Its fields hold names and paths, never a
// secret value, so a Ref is safe to log and to put in errors.
//
// The forms are:
//
//	secret://env/NAME                       Path "NAME"
//	secret://file/PATH                      Path "/PATH" (always absolute)
//	secret://vault/MOUNT/PATH#FIELD         Path "MOUNT/PATH", Field required
//	secret://gcp/NAME[#VERSION]             Path "NAME", Field the version ("" means latest)
//	secret://gcp/projects/P/secrets/N[#V]   Path "projects/P/secrets/N"
//	secret://aws/NAME[#JSONKEY]             Path "NAME" (or an ARN), Field a key of a JSON secret
type Ref struct {
	Provider string
	Path     string
	Field    string
}

// String returns the reference in its secret:// form. For every Ref returned
// by ParseRef, ParseRef(r.String()) returns r again.
func (r Ref) String() string {
	var b strings.Builder
	b.WriteString(Scheme)
	b.WriteString(r.Provider)
	if r.Provider == ProviderFile {
		// Path is absolute: "secret://file" + "/var/run/x".
		b.WriteString(r.Path)
	} else {
		b.WriteByte('/')
		b.WriteString(r.Path)
	}
	if r.Field != "" {
		b.WriteByte('#')
		b.WriteString(r.Field)
	}
	return b.String()
}

// ParseRef parses a secret reference. Errors start with the reference
// (quoted when it holds unprintable characters) and say what is wrong with it,
// e.g. "secret://vault/kv: missing #FIELD".
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, ErrNotReference
	}
	fail := func(format string, args ...any) (Ref, error) {
		return Ref{}, fmt.Errorf("%s: %s", showRef(s), fmt.Sprintf(format, args...))
	}
	if i := strings.IndexFunc(s, isControl); i >= 0 {
		return fail("control character at offset %d", i)
	}
	provider, body, hasSlash := strings.Cut(rest, "/")
	if provider == "" {
		return fail("missing provider (want %s)", providerList)
	}
	path, field, hasField := strings.Cut(body, "#")
	r := Ref{Provider: provider, Path: path, Field: field}

	switch provider {
	case ProviderEnv:
		if !hasSlash || path == "" {
			return fail("missing variable NAME")
		}
		if hasField {
			return fail("an env reference takes no #FIELD")
		}
		if !validEnvName(path) {
			return fail("invalid environment variable name %q (want [A-Za-z_][A-Za-z0-9_]*)", path)
		}
	case ProviderFile:
		if !hasSlash || path == "" {
			return fail("missing PATH")
		}
		if hasField {
			return fail("a file reference takes no #FIELD (a '#' cannot appear in the path)")
		}
		r.Path = "/" + path
	case ProviderVault:
		if !hasField {
			return fail("missing #FIELD")
		}
		if field == "" {
			return fail("empty #FIELD")
		}
		if !hasSlash || path == "" {
			return fail("missing MOUNT/PATH")
		}
		if err := checkSegments(path); err != "" {
			return fail("%s", err)
		}
		if !strings.Contains(path, "/") {
			return fail("missing PATH after mount %q (want MOUNT/PATH#FIELD)", path)
		}
	case ProviderGCP:
		if !hasSlash || path == "" {
			return fail("missing secret NAME")
		}
		if hasField && !validGCPID(field, 128) {
			return fail("invalid version %q (want a number, an alias or \"latest\")", field)
		}
		if err := checkGCPPath(path); err != "" {
			return fail("%s", err)
		}
	case ProviderAWS:
		if !hasSlash || path == "" {
			return fail("missing secret NAME")
		}
		if hasField && field == "" {
			return fail("empty #JSONKEY")
		}
		if !validAWSName(path) {
			return fail("invalid secret name %q (want letters, digits and /_+=.@:-, at most 2048 characters)", path)
		}
	default:
		return fail("unknown provider %q (want %s)", provider, providerList)
	}
	return r, nil
}

const providerList = "env, file, vault, gcp or aws"

// showRef returns s as it may appear in an error: unchanged when it is plain
// printable text, quoted otherwise.
func showRef(s string) string {
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == 0xfffd || c == ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

func isControl(c rune) bool { return c < 0x20 || c == 0x7f }

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkSegments rejects empty path elements, so that "kv//x" and "kv/x/" do
// not silently name another secret than they seem to.
func checkSegments(path string) string {
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			return "empty path element in " + strconv.Quote(path)
		}
		if seg == "." || seg == ".." {
			return "relative path element in " + strconv.Quote(path)
		}
	}
	return ""
}

// checkGCPPath accepts a short secret ID or projects/P/secrets/N.
func checkGCPPath(path string) string {
	parts := strings.Split(path, "/")
	switch len(parts) {
	case 1:
		if !validGCPID(parts[0], 255) {
			return fmt.Sprintf("invalid secret name %q (want [A-Za-z0-9_-], at most 255 characters)", parts[0])
		}
		return ""
	case 4:
		if parts[0] != "projects" || parts[2] != "secrets" {
			break
		}
		if !validProject(parts[1]) {
			return fmt.Sprintf("invalid project %q", parts[1])
		}
		if !validGCPID(parts[3], 255) {
			return fmt.Sprintf("invalid secret name %q (want [A-Za-z0-9_-], at most 255 characters)", parts[3])
		}
		return ""
	}
	return fmt.Sprintf("invalid secret path %q (want NAME or projects/PROJECT/secrets/NAME)", path)
}

func validGCPID(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// validProject accepts project IDs, project numbers and domain-scoped IDs
// ("example.com:proj").
func validProject(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '.' || c == ':' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// validAWSName accepts secret names (letters, digits and /_+=.@-) and ARNs,
// which add ':'.
func validAWSName(s string) bool {
	if s == "" || len(s) > 2048 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(strings.IndexByte("/_+=.@:-", c) >= 0 || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
