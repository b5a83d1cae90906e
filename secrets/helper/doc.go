// Package helper is the protocol between switchboard and its secrets helper
// (cmd/switchboard-secrets), the process that runs the secret backends whose
// libraries switchboard does not link (AWS Secrets Manager).
//
// The parent writes one Request per line to the helper's standard input and
// reads one Response per line, matched by ID, from its standard output;
// requests are answered concurrently, so responses come in any order. The
// helper exits when its standard input ends, once every request read has
// been answered. Its standard error is for diagnostics and never carries a
// value.
//
// It imports no other package of this module, and nothing that a backend
// needs: switchboard links it to speak to the helper.
package helper
