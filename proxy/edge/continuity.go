package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// continuity keys and names the session IDs of one process.
type continuity struct {
	replica string
	own     *sessionid.Sealer                // under the process's key
	sealer  atomic.Pointer[sessionid.Sealer] // the one in use: own, or sessionKey's
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
	pr := principalOf(r)
	return e.ids.sealer.Load().Seal(sessionid.State{
		Version: session.Negotiate(params.ProtocolVersion),
		Caps:    caps.Bytes(),
		Client:  params.ClientInfo.Name,
		ClientV: params.ClientInfo.Version,
		View:    pr.View,
		Token:   pr.TokenID,
	})
}

// resumeSession opens the session id names for a request that reached a
// process that does not hold it.
func (e *Edge) resumeSession(r *http.Request, id string) (*session.Session, error) {
	st, err := e.ids.sealer.Load().Open(id)
	if err != nil || !slices.Contains(session.Versions, st.Version) {
		return nil, fmt.Errorf("%w: %v", streamhttp.ErrNoSession, err)
	}
	pr := principalOf(r)
	if pr.View != st.View || pr.TokenID != st.Token {
		return nil, streamhttp.ErrNotYours
	}
	var info *mcp.Implementation
	if st.Client != "" || st.ClientV != "" {
		info = &mcp.Implementation{Name: st.Client, Version: st.ClientV}
	}
	return e.d.Open(pr, id, nil, &session.Resumed{Version: st.Version, Caps: st.Caps, ClientInfo: info})
}
