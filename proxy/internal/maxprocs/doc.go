// Package maxprocs sets how many processors run switchboard's Go code.
//
// switchboard relays calls: each is a short chain of hand-offs between
// goroutines (the client's connection, the dispatch, an upstream's reader)
// with little work at each step. With more than one processor the runtime
// wakes an idle thread at every hand-off, which looks for work, rarely
// finds any and parks again: on two vCPUs that costs a quarter of the CPU
// of a forwarded call and adds to its latency (docs/performance.md). serve
// therefore runs on one processor unless GOMAXPROCS says otherwise, as
// relaying sidecars commonly run on one core. Work that needs more (a
// shared gateway on many cores, large results to check) sets GOMAXPROCS;
// the Helm chart sets it from the container's CPU limit.
package maxprocs
