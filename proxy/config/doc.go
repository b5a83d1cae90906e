// Package config owns switchboard's config file: its schema (Config and the
// types it holds), Parse, the strict decoder whose errors name the field
// path, Validate, Digest, the SWITCHBOARD_* environment overrides, and the
// defaults of every field that may be left out.
//
// It turns bytes into a checked value and nothing more: it resolves no
// secret references (it only checks their syntax) and starts nothing. Parse
// reads only its bytes; Load also reads what other clients' files refer to
// (an envFile, the environment for ${VAR}, the home directory), through
// Source, and Validate asks os.Executable whether a server would start
// switchboard itself. Other clients' files and the rules for them are in
// clients.go, dialect.go, dialects.go and docs/client-configs.md. Besides
// the standard library, sigs.k8s.io/yaml and github.com/pelletier/go-toml/v2
// (Codex CLI's config.toml) it imports only the leaves whose syntax a config
// embeds (policy, router, secrets); it must not import proxy, upstream,
// sanitize or any proxy/internal package.
//
// A *Config is built by one goroutine (Parse, ApplyEnv, Validate) and is
// immutable once validated: snapshots share it, and nothing may change it
// after. Its methods only read, so a validated Config is safe for
// concurrent use.
package config
