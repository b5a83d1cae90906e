package secrets

import (
	"strings"
	"unicode"
)

// LooksLikeCredential reports whether key (an environment variable or a
// header name) names a credential: it contains password, secret, token, key,
// credential or auth as a word. The key is split into words at
// non-alphanumeric characters and camelCase humps ("GITHUB_TOKEN",
// "apiKey", "X-Api-Key", "Proxy-Authorization"), and a word matches when:
//
//   - it contains "passw", "passphrase", "secret" or "credential";
//   - it is or ends with "token(s)" ("accesstoken"), but not "tokenizer";
//   - it is or ends with "key(s)" ("apikey"), but not "keyboard"; words such
//     as "monkey" are accepted false positives;
//   - it starts with "auth" ("authorization", "authn"), but not "author".
//
// It only decides whether to warn about a literal value, so a false positive
// costs one log line and a false negative one missing hint.
func LooksLikeCredential(key string) bool {
	for _, w := range words(key) {
		switch {
		case strings.Contains(w, "passw"), strings.Contains(w, "passphrase"),
			strings.Contains(w, "secret"), strings.Contains(w, "credential"):
			return true
		case strings.HasSuffix(w, "token"), strings.HasSuffix(w, "tokens"):
			return true
		case strings.HasSuffix(w, "key"), strings.HasSuffix(w, "keys"):
			return true
		case strings.HasPrefix(w, "auth"):
			if !strings.HasPrefix(w, "author") || strings.HasPrefix(w, "authoriz") {
				return true
			}
		}
	}
	return false
}

// words splits key into lower-case words at non-alphanumerics and camelCase
// boundaries ("XMLHttpToken" → xml, http, token).
func words(key string) []string {
	var out []string
	rs := []rune(key)
	start := -1
	for i, r := range rs {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			if start >= 0 {
				out = append(out, strings.ToLower(string(rs[start:i])))
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		boundary := unicode.IsLower(prev) && unicode.IsUpper(r) ||
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if boundary {
			out = append(out, strings.ToLower(string(rs[start:i])))
			start = i
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(string(rs[start:])))
	}
	return out
}
