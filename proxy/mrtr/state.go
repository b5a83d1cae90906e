package mrtr

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// The requestStates of multi-round-trip requests (mrtr.go): what a state
// is bound to, sealing and opening a parked call's and an upstream's, and
// the retry fields that carry them back.

// b64 decodes requestState parts strictly: an encoding is refused unless
// it is the one switchboard wrote, so no two states open to one.
var b64 = base64.RawURLEncoding.Strict()

// useKey keys requestStates with secret (requestStateKey, resolved; ""
// the process's own key). A state issued under another key no longer
// opens.
func (cs *Calls) UseKey(secret string) {
	if secret == "" {
		cs.key.Store(&cs.own)
		return
	}
	sum := sha256.Sum256([]byte(secret))
	key := sum[:]
	cs.key.Store(&key)
}

// Key is the key requestStates are sealed with now (requestStateKey's,
// resolved, or the process's own), for what else switchboard binds to its
// callers under the same key (task IDs).
func (cs *Calls) Key() []byte { return *cs.key.Load() }

// badState refuses a requestState switchboard did not issue for the
// request.
var badState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one switchboard issued for this request"}

// upstreamPrefix starts a sealed upstream state; parkedPrefix a parked
// call's.
const (
	upstreamPrefix = "u."
	parkedPrefix   = "p."
)

// sealUpstream seals the state of an upstream's input_required result, so
// that only the caller it went to can continue it, unaltered.
func (cs *Calls) sealUpstream(res any, bind *binding) {
	_, state, ok := inputsOf(res)
	if !ok {
		return
	}
	head := upstreamPrefix + base64.RawURLEncoding.EncodeToString([]byte(state))
	sealed := head + "." + base64.RawURLEncoding.EncodeToString(cs.mac(head, bind.String()))
	switch v := res.(type) {
	case *mcp.CallToolResult:
		v.RequestState = sealed
	case *mcp.GetPromptResult:
		v.RequestState = sealed
	case *mcp.ReadResourceResult:
		v.RequestState = sealed
	}
}

// openUpstream checks a sealed upstream state and returns the upstream's.
func (cs *Calls) openUpstream(sealed, bind string) (string, bool) {
	i := strings.LastIndexByte(sealed, '.')
	if i < len(upstreamPrefix) || strings.ContainsAny(sealed, "\r\n") { // the decoder skips CR and LF
		return "", false
	}
	head, sig := sealed[:i], sealed[i+1:]
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, cs.mac(head, bind)) {
		return "", false
	}
	state, err := b64.DecodeString(head[len(upstreamPrefix):])
	return string(state), err == nil
}

// retry is what a retried request carries: its state and its answers.
type retry struct {
	State     string                     `json:"requestState"`
	Responses map[string]json.RawMessage `json:"inputResponses"`
}

// retryParams reads a request's retry fields; params are decoded only when
// they may hold them (pk, what the transport read of them, if not nil,
// says whether they do).
func retryParams(params json.RawMessage, pk *session.Peek) (retry, error) {
	var rt retry
	if pk != nil && pk.State == nil && pk.Responses == nil ||
		!bytes.Contains(params, []byte(`"requestState"`)) && !bytes.Contains(params, []byte(`"inputResponses"`)) {
		return rt, nil
	}
	if _, err := sjson.Parse(params, &rt, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return rt, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState or inputResponses: " + err.Error()}
	}
	return rt, nil
}

// binding is what a call's state is bound to, worked out when first
// needed: most calls never ask for input. Not for concurrent use.
type binding struct {
	r      *session.Request
	method string
	v      string
}

func (b *binding) String() string {
	if b.v == "" {
		b.v = bindingOf(b.r, b.method)
	}
	return b.v
}

// Caller is a session's principal as a call's state is bound to it: the
// same string for every session of the same caller.
type Caller interface{ Caller() string }

// bindingOf is what a call's state is bound to: the caller (view and
// token) and the call (method and what it names).
func bindingOf(r *session.Request, method string) string {
	var who string
	if c, ok := r.Session.Principal().(Caller); ok {
		who = c.Caller()
	} else {
		// A principal that cannot say who it is binds the state to its
		// own session: never to every caller at once.
		who = fmt.Sprintf("session %p", r.Session)
	}
	var named struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	// One pass; a call's arguments are skipped. Keys match exactly, as
	// the call's own decoding matches them (dispatch): "NAME" is not the
	// name, and cannot bind a state to another call than the one that
	// runs.
	_, _ = sjson.Parse(r.Params, &named, sjson.DontMatchCaseInsensitiveStructFields)
	return strings.Join([]string{who, method, named.Name, named.URI}, "\x00")
}

// seal is a call's requestState for a round: the call's ID, the round and
// an HMAC over them and what the call is bound to.
func (cs *Calls) seal(id string, round int, bind string) string {
	head := parkedPrefix + id + "." + strconv.Itoa(round)
	return head + "." + base64.RawURLEncoding.EncodeToString(cs.mac(head, bind))
}

// open checks a requestState and returns the call ID and round it holds.
func (cs *Calls) open(state, bind string) (string, int, bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 || strings.ContainsAny(state, "\r\n") { // the decoder skips CR and LF
		return "", 0, false
	}
	head, sig := state[:i], state[i+1:]
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, cs.mac(head, bind)) {
		return "", 0, false
	}
	id, r, _ := strings.Cut(strings.TrimPrefix(head, parkedPrefix), ".")
	round, err := strconv.Atoi(r)
	return id, round, err == nil && strings.HasPrefix(head, parkedPrefix)
}

func (cs *Calls) mac(id, bind string) []byte {
	m := hmac.New(sha256.New, *cs.key.Load())
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(bind))
	return m.Sum(nil)
}
