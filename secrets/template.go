package secrets

import (
	"errors"
	"fmt"
	"strings"
)

// A config value is a template made of literal text and references:
//
//   - a value that starts with "secret://" is one whole-value reference;
//   - otherwise "${secret://…}" is a reference inside the value (it ends at
//     the first "}"),
//   - "${NAME}" is the environment variable NAME (unset is an error),
//   - "$${" is a literal "${",
//   - and every other "$" is literal text.
//
// Errors from parsing name the offset and the reference, never the literal
// text around it: a malformed value may well be a pasted credential.

type segKind uint8

const (
	segLiteral segKind = iota
	segRef
	segEnv
)

type segment struct {
	kind segKind
	text string // segLiteral: the text; segEnv: the variable name
	ref  Ref    // segRef
}

// parseTemplate splits value into segments. It reports every malformed piece
// it can find, joined with errors.Join.
func parseTemplate(value string) ([]segment, error) {
	if strings.HasPrefix(value, Scheme) {
		r, err := ParseRef(value)
		if err != nil {
			return nil, err
		}
		return []segment{{kind: segRef, ref: r}}, nil
	}
	var (
		segs []segment
		errs []error
		lit  strings.Builder
	)
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, segment{kind: segLiteral, text: lit.String()})
			lit.Reset()
		}
	}
	scanTemplate(value, func(text, _ string) { lit.WriteString(text) }, func(i int, inner string) {
		switch {
		case strings.HasPrefix(inner, Scheme):
			r, err := ParseRef(inner)
			if err != nil {
				errs = append(errs, fmt.Errorf("offset %d: %w", i, err))
			} else {
				flush()
				segs = append(segs, segment{kind: segRef, ref: r})
			}
		case validEnvName(inner):
			flush()
			segs = append(segs, segment{kind: segEnv, text: inner})
		case inner == "":
			errs = append(errs, fmt.Errorf("offset %d: empty \"${}\"", i))
		default:
			errs = append(errs, fmt.Errorf("offset %d: %s is neither ${secret://…} nor ${NAME} with NAME an environment variable name", i, showRef("${"+truncate(inner, 64)+"}")))
		}
	}, func(i int) {
		errs = append(errs, fmt.Errorf("offset %d: unterminated \"${\" (write \"$${\" for a literal \"${\")", i))
	})
	flush()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return segs, nil
}

// scanTemplate walks a value that is not a whole-value reference. It calls
// literal with each piece of literal text (text is its meaning, raw is how
// it is written: "$${" means "${"), interp with the offset and inner text
// of each "${…}" (it ends at the first "}"), and unterminated for a "${"
// without a "}", after which the scan stops. It is the one scanner of the
// template syntax: parseTemplate and Rewrite both use it.
func scanTemplate(value string, literal func(text, raw string), interp func(off int, inner string), unterminated func(off int)) {
	for i := 0; i < len(value); {
		if strings.HasPrefix(value[i:], "$${") {
			literal("${", "$${")
			i += 3
			continue
		}
		if !strings.HasPrefix(value[i:], "${") {
			j := strings.IndexByte(value[i+1:], '$')
			if j < 0 {
				literal(value[i:], value[i:])
				return
			}
			literal(value[i:i+1+j], value[i:i+1+j])
			i += 1 + j
			continue
		}
		end := strings.IndexByte(value[i+2:], '}')
		if end < 0 {
			unterminated(i)
			return
		}
		interp(i, value[i+2:i+2+end])
		i += 2 + end + 1
	}
}

// Rewrite returns value with every "${…}" that is not a ${secret://…}
// reference replaced by what fn returns for its inner text (for "${NAME}",
// "NAME"). Literal text, "$${" escapes and secret references are kept as
// written, and a whole-value secret:// reference is returned unchanged, so
// the result is template text again; fn must return template text too
// (Escape a literal). It lets a config loader turn other clients'
// interpolations (${env:NAME}, ${NAME:-default}) into this syntax with the
// same scanner that parses it. fn's errors are joined; an unterminated "${"
// is left for Check to report.
func Rewrite(value string, fn func(inner string) (string, error)) (string, error) {
	if strings.HasPrefix(value, Scheme) {
		return value, nil
	}
	var (
		b    strings.Builder
		errs []error
	)
	scanTemplate(value, func(_, raw string) { b.WriteString(raw) }, func(_ int, inner string) {
		if strings.HasPrefix(inner, Scheme) {
			b.WriteString("${" + inner + "}")
			return
		}
		r, err := fn(inner)
		if err != nil {
			errs = append(errs, err)
			return
		}
		b.WriteString(r)
	}, func(off int) { b.WriteString(value[off:]) })
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}

// Escape returns literal text as template text: every "${" becomes "$${",
// so that nothing in it is read as a reference.
func Escape(literal string) string { return strings.ReplaceAll(literal, "${", "$${") }

// Check validates every reference in a config value (a whole-value
// reference, ${secret://…} and ${NAME} interpolations, $${ escapes) without
// resolving anything. The error describes each malformed piece; it never
// repeats the value's literal text.
func Check(value string) error {
	_, err := parseTemplate(value)
	return err
}

// HasRefs reports whether value contains a secret:// reference or a ${NAME}
// interpolation, that is whether it needs expanding at server start. A
// malformed value counts as having references: Check reports it.
func HasRefs(value string) bool {
	segs, err := parseTemplate(value)
	if err != nil {
		return true
	}
	for _, s := range segs {
		if s.kind != segLiteral {
			return true
		}
	}
	return false
}

// Refs returns the distinct secret references in value, in order of first
// appearance. It returns the parse error for a malformed value.
func Refs(value string) ([]Ref, error) {
	segs, err := parseTemplate(value)
	if err != nil {
		return nil, err
	}
	var out []Ref
	seen := map[Ref]bool{}
	for _, s := range segs {
		if s.kind == segRef && !seen[s.ref] {
			seen[s.ref] = true
			out = append(out, s.ref)
		}
	}
	return out, nil
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
