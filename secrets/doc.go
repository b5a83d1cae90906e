// Package secrets parses secret:// references, resolves them through their
// providers (env, file, Vault, GCP Secret Manager, AWS Secrets Manager) and
// keeps the redactor that removes every resolved value from output.
//
// It imports no other package of this module; upstream receives resolution
// through an interface it declares, and proxy wires the concrete value. The
// Resolver and the redaction Set are safe for concurrent use.
package secrets
