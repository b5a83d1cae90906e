package router

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

const (
	// MaxNameLen is the length limit of a public name in bytes. Clients and
	// model APIs reject tool names longer than ^[A-Za-z0-9_-]{1,64}$ allows.
	MaxNameLen = 64

	// MaxPrefixLen is the length limit of a server prefix in bytes.
	MaxPrefixLen = 32

	// hashLen is the number of hex digits of a SHA-256 that end a shortened
	// or renamed public name.
	hashLen = 8

	// cutLen is what is left of a name before "_" and the hash are appended,
	// so that the result is at most MaxNameLen.
	cutLen = MaxNameLen - 1 - hashLen
)

// PublicName is the name an item gets when nothing collides: "mcp_" + prefix
// + "_" + name, with every rune outside [A-Za-z0-9_-] replaced by one '_' (an
// invalid UTF-8 byte counts as one rune). A result longer than MaxNameLen is
// cut to 55 bytes and ends with "_" and the first 8 hex digits of the SHA-256
// of the unshortened, uncleaned "mcp_" + prefix + "_" + name, so it is exactly
// 64 bytes and the same on every machine and after every restart.
//
// An empty name yields "mcp_" + prefix + "_": an upstream may list a tool
// with an empty name, and it stays callable under that public name.
//
// The result always matches ^[A-Za-z0-9_-]{1,64}$. It is unambiguous only
// when prefix is valid (see ValidPrefix), because then the first '_' after
// "mcp_" ends the prefix; Build resolves whatever collisions remain.
func PublicName(prefix, name string) string {
	raw := "mcp_" + prefix + "_" + name
	pub := replaceInvalid(raw, isNameByte, '_')
	if len(pub) <= MaxNameLen {
		return pub
	}
	return pub[:cutLen] + "_" + hash8(raw)
}

// BareName is the public name of an item published without a namespace:
// name with every rune outside [A-Za-z0-9_-] replaced by one '_', "_" when
// empty, shortened with a hash suffix like PublicName when longer than
// MaxNameLen.
func BareName(name string) string {
	if name == "" {
		return "_"
	}
	pub := replaceInvalid(name, isNameByte, '_')
	if len(pub) <= MaxNameLen {
		return pub
	}
	return pub[:cutLen] + "_" + hash8(name)
}

// Prefix derives a server's prefix. A non-empty override (the server's
// toolPrefix, which the caller has checked with ValidPrefix) is returned as
// is. Otherwise it is key with every rune outside [A-Za-z0-9-] replaced by one
// '-', cut to MaxPrefixLen bytes. An empty key gives "", which the caller must
// reject.
func Prefix(key, override string) string {
	if override != "" {
		return override
	}
	p := replaceInvalid(key, isPrefixByte, '-')
	if len(p) > MaxPrefixLen {
		p = p[:MaxPrefixLen]
	}
	return p
}

// ValidPrefix reports whether s matches ^[A-Za-z0-9-]{1,32}$. Such a prefix
// holds no '_', so "mcp_<prefix>_" never splits two ways.
func ValidPrefix(s string) bool {
	if len(s) == 0 || len(s) > MaxPrefixLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isPrefixByte(s[i]) {
			return false
		}
	}
	return true
}

// replaceInvalid returns s with every rune for which keep is false replaced
// by repl. Each invalid UTF-8 byte is one rune, as range yields it. The result
// is ASCII, so callers may cut it at any byte.
func replaceInvalid(s string, keep func(byte) bool, repl byte) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf && keep(byte(r)) {
			b = append(b, byte(r))
		} else {
			b = append(b, repl)
		}
	}
	return string(b)
}

func isPrefixByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func isNameByte(c byte) bool {
	return isPrefixByte(c) || c == '_'
}

// hash8 returns the first 8 hex digits of the SHA-256 of s.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:hashLen/2])
}
