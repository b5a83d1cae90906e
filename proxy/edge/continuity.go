package edge

import (
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/sessionid"
	"github.com/mcp-switchboard/switchboard/proxy/internal/streamhttp"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// Sessions that outlive their process. A streamable-HTTP session's ID is
// a sealed token (sessionid) of what its initialize said and whom it is
// bound to, behind the name of the replica that opened it. With a
// sessionKey shared by the replicas of one deployment, a replica that gets
// a request naming a session it does not hold (its replica is gone, or a
// proxy sent the request elsewhere) resumes the session from the ID: the
// client goes on without initializing again. Without sessionKey the key is
// the process's own, and only it opens its IDs.
//
// An ID is bound to a keyed digest of the token's value (never to its
// place in auth.tokens, which a reload moves) and carries when it was
// issued: past sessionMaxAge it opens nowhere, so an ID that ended (DELETE)
// here cannot come back on another replica, or after a restart, for
// longer than that.

// continuity keys and names the session IDs of one process.
type continuity struct {
	replica string
	own     *sessionid.Sealer                // under the process's key
	sealer  atomic.Pointer[sessionid.Sealer] // the one in use: own, or sessionKey's
	maxAge  atomic.Int64                     // how long an ID opens after it was issued, in ns; 0: for ever
}

// newContinuity names the replica: name, else $SWITCHBOARD_REPLICA, else
// the host's name.
func newContinuity(name string, getenv func(string) string) (*continuity, error) {
	if name == "" {
		name = getenv("SWITCHBOARD_REPLICA")
	}
	if name == "" {
		host, _ := os.Hostname()
		name = sessionid.Replica(host)
	}
	own, err := sessionid.NewRandom(name)
	if err != nil {
		return nil, fmt.Errorf("--replica (or SWITCHBOARD_REPLICA): %w", err)
	}
	c := &continuity{replica: name, own: own}
	c.sealer.Store(own)
	return c, nil
}

// useKey seals IDs under secret from now on (sessionKey, resolved; "": the
// process's own key). Sessions held keep their IDs; an ID minted under
// another key no longer resumes.
func (c *continuity) useKey(secret string) {
	if secret == "" {
		c.sealer.Store(c.own)
		return
	}
	c.sealer.Store(c.own.Rekey([]byte(secret)))
}

// holder is what an ID sealed by s carries of pr: a keyed digest of its
// token's value (nil without a token).
func holder(s *sessionid.Sealer, pr dispatch.Principal) []byte {
	if pr.Holder == (dispatch.Holder{}) {
		return nil
	}
	return s.Holder(pr.Holder[:])
}

// errExpired is an ID issued longer ago than sessionMaxAge (or by a version
// that did not say when).
var errExpired = errors.New("session ID expired (sessionMaxAge)")

// issued is when the session an ID names was issued (zero: the ID does not
// open, or does not say).
func (e *Edge) issued(id string) time.Time {
	st, err := e.ids.sealer.Load().Open(id)
	if err != nil || st.Issued == 0 {
		return time.Time{}
	}
	return time.Unix(st.Issued, 0)
}

// mintSessionID names the session an initialize request opens: what it
// says, and the caller.
func (e *Edge) mintSessionID(r *http.Request, init *jsonrpc.Request) string {
	var params struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(init.Params, &params) // a bad initialize fails later, in the session
	var caps bytes.Buffer
	if json.Compact(&caps, params.Capabilities) != nil {
		caps.Reset()
	}
	s := e.ids.sealer.Load()
	pr := principalOf(r)
	return s.Seal(sessionid.State{
		Version: session.Negotiate(params.ProtocolVersion),
		Caps:    caps.Bytes(),
		Client:  params.ClientInfo.Name,
		ClientV: params.ClientInfo.Version,
		View:    pr.View,
		Holder:  holder(s, pr),
		Issued:  time.Now().Unix(),
	})
}

// resumeSession opens the session id names for a request that reached a
// process that does not hold it: only for the caller it was issued to (the
// same view, the same token value), within sessionMaxAge of its issue.
func (e *Edge) resumeSession(r *http.Request, id string) (*session.Session, error) {
	s := e.ids.sealer.Load()
	st, err := s.Open(id)
	if err != nil || !slices.Contains(session.Versions, st.Version) {
		return nil, fmt.Errorf("%w: %v", streamhttp.ErrNoSession, err)
	}
	if age := time.Duration(e.ids.maxAge.Load()); age > 0 && (st.Issued == 0 || time.Since(time.Unix(st.Issued, 0)) > age) {
		return nil, fmt.Errorf("%w: %w", streamhttp.ErrNoSession, errExpired)
	}
	pr := principalOf(r)
	if pr.View != st.View || !hmac.Equal(holder(s, pr), st.Holder) {
		return nil, streamhttp.ErrNotYours
	}
	var info *mcp.Implementation
	if st.Client != "" || st.ClientV != "" {
		info = &mcp.Implementation{Name: st.Client, Version: st.ClientV}
	}
	return e.d.Open(pr, id, nil, &session.Resumed{Version: st.Version, Caps: st.Caps, ClientInfo: info})
}
