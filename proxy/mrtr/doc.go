// Package mrtr runs multi-round-trip requests (SEP-2322) across protocol
// eras. A 2026-07-28 client cannot take a request from the server in the
// middle of a call, so a legacy upstream's question (elicitation,
// sampling, roots) parks the call and becomes an input_required result
// whose requestState switchboard seals; the client's retry resumes the
// parked call. A legacy client behind a 2026-07-28 upstream gets the
// upstream's input_required asked as real requests, and the call retried
// with the answers. Calls.Wrap is the middleware for the methods that may
// ask (tools/call, prompts/get, resources/read).
package mrtr
