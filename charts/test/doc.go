// Package test holds the tests of the Helm chart in charts/switchboard and of
// the Kubernetes examples in examples/: client-side renders decoded strictly
// into k8s.io/api types, the values schema, the example configs through
// `switchboard validate`, `helm lint` with the real helm CLI, and installs into
// a real kube-apiserver backed by etcd (built by .ci/tools/kube.sh).
//
// It is a module of its own so helm's and Kubernetes' dependency trees stay
// out of switchboard's go.mod.
package test
