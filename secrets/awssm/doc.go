// Package awssm reads secrets from AWS Secrets Manager with the AWS SDK and
// its standard configuration chain.
//
// switchboard does not link it: the SDK's packages (about a hundred, with
// the endpoint tables of Secrets Manager, STS, SSO and sign-in that their
// initialisation builds and keeps) run in the switchboard-secrets helper
// (cmd/switchboard-secrets), which the secrets package starts on the first
// secret://aws reference and stops when it has been idle. A process that
// never resolves one pays for none of it.
//
// It imports no other package of this module. A Client is safe for
// concurrent use.
package awssm
