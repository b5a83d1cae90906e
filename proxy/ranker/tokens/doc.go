// Package tokens holds TestTokens, the token count of issue 22: what
// tools/list costs a client in "search" mode against "all" mode, counted
// with a real BPE tokenizer over the recorded catalog of
// proxy/ranker/testdata/servers.
//
// It is a module of its own so that the tokenizer (tiktoken-go and the
// tables tiktoken-go-loader embeds) stays out of switchboard's go.mod; a
// replace directive points it at the switchboard module in this
// repository. It has no code outside its test.
package tokens
