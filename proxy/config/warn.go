package config

import (
	"sort"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// plaintextReason is the warning for a credential written into the config.
const plaintextReason = "a credential written in plain text; keep it out of the file with a secret reference (secret://env/NAME) or a variable (${NAME})"

// Warnings lists what in c still loads but is likely wrong, each with its
// field path and sorted by it: what loading noted (Notes.Warnings: a
// variable that is not set, a timeout too short to start anything) and
// every credential-looking env value or header written in plain text. It
// is the one list `switchboard validate` prints and `switchboard serve`
// logs, so the two never disagree. Warnings never hold a value.
func (c *Config) Warnings() []*FieldError {
	out := append([]*FieldError(nil), c.Notes.Warnings...)
	var helper awsHelper
	c.eachServer(func(path string, s *Server) {
		out = append(out, plaintext(path, s, c.Notes.expanded)...)
		out = append(out, helper.check(path, s)...)
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// plaintext lists the env values and headers of s at path that look like
// credentials written in plain text. A value a variable was put in
// (expanded: an unset ${NAME}, or its default) is what is left of a
// reference, not plain text.
func plaintext(path string, s *Server, expanded map[string]bool) []*FieldError {
	var out []*FieldError
	check := func(field string, m map[string]string) {
		for _, k := range sortedKeys(m) {
			p := joinKey(path+"."+field, k)
			if !expanded[p] && Plaintext(k, m[k]) {
				out = append(out, &FieldError{Path: p, Reason: plaintextReason})
			}
		}
	}
	check("env", s.Env)
	check("headers", s.Headers)
	return out
}

// awsHelper warns of the secret://aws references that the secrets helper
// would read when it cannot be found: their server would fail to start.
// It looks for the helper once, at the first such reference.
type awsHelper struct {
	looked bool
	err    error
}

func (h *awsHelper) check(path string, s *Server) []*FieldError {
	var out []*FieldError
	check := func(p, val string) {
		refs, _ := secrets.Refs(val)
		for _, r := range refs {
			if r.Provider != secrets.ProviderAWS {
				continue
			}
			if !h.looked {
				h.looked = true
				_, h.err = secrets.FindHelper()
			}
			if h.err != nil {
				out = append(out, &FieldError{Path: p, Reason: h.err.Error() + "; the server will not start"})
			}
			return
		}
	}
	for _, k := range sortedKeys(s.Env) {
		check(joinKey(path+".env", k), s.Env[k])
	}
	for i, a := range s.Args {
		check(joinIndex(path+".args", i), a)
	}
	check(path+".url", s.URL)
	for _, k := range sortedKeys(s.Headers) {
		check(joinKey(path+".headers", k), s.Headers[k])
	}
	return out
}

// Plaintext reports whether value, of the env variable or header named
// key, is a credential written in plain text: the name looks like a
// credential's and the value holds no reference. A secret reference
// (secret://…, ${secret://…}) or a variable (${NAME}) is a reference: its
// value is read when the server starts and never sits in the file.
func Plaintext(key, value string) bool {
	return value != "" && secrets.LooksLikeCredential(key) && !secrets.HasRefs(value)
}
