// Package secrets parses secret:// references, resolves them through their
// providers (env, file, Vault, GCP Secret Manager, AWS Secrets Manager) and
// keeps the redactor that removes every resolved value from output.
//
// References resolve when a server starts, never at config load, and nothing
// is cached between starts, so a rotated secret is picked up by the next
// start. Check validates references without resolving them (config
// validation); Resolver.Expand and Resolver.ExpandMap resolve them; Set
// redacts resolved values from logs, errors and results; Value carries a
// secret that never prints itself. Resolver.VaultKV writes, lists and
// deletes KV v2 secrets with the same Vault client and login (the OAuth
// token store's tokenStore "vault:…").
//
// It imports no other package of this module; upstream receives resolution
// through an interface it declares, and proxy wires the concrete value. The
// Resolver, the redaction Set and its Writer are safe for concurrent use;
// the Resolver owns one goroutine pair per renewable Vault login, which
// Close stops.
package secrets
