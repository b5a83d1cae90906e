// Package fakecloud serves fakes of AWS Secrets Manager and GCP Secret
// Manager that speak the services' real wire protocols, for tests of the
// secrets package and end-to-end tests of the built binary.
//
// The AWS fake speaks awsJson1.1 and verifies every request's SigV4
// signature by signing it again with the SDK's signer and the known test
// credentials. The GCP fake serves the REST versions:access call, checks the
// bearer token, and can act as an OAuth token endpoint for a test service
// account so the real application-default credential chain runs against it.
//
// It imports no package of this module. Fakes are safe for concurrent use;
// Put and the other setters may be called while requests are served.
package fakecloud
