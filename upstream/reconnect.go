package upstream

import (
	"strings"
	"time"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// A remote server that goes away (#17). A call whose transport fails
// (connection refused or reset, an HTTP error status, a session the server
// no longer knows, a request's stream that broke and a ping that failed
// too) ends the session at once, counts for the breaker, and gets the
// documented tool error "server 'x' is unreachable, retrying in ~Ns"; so do
// the calls after it, while the supervisor reconnects. Reconnecting follows
// the restart backoff, which grows to 30 s, but a call that finds the
// server unreachable asks for an attempt now, at most one every
// earlyAttemptGap: a server that comes back is used again within about a
// second of the next call, and one that stays down with nobody calling is
// not dialed more often than the backoff says. Those extra attempts do not
// count towards maxRestarts. A new session closes the breaker: the
// reconnect was its probe.

// earlyAttemptGap is the shortest time between a remote server's connect
// attempts that calls ask for.
const earlyAttemptGap = time.Second

// earliestAttempt is when a call may next ask for a connect attempt.
func (sv *supervisor) earliestAttempt() time.Time {
	return time.Unix(0, sv.lastAttempt.Load()).Add(earlyAttemptGap)
}

// wantAttempt asks the supervisor of a remote server that is waiting to
// reconnect for an attempt now, unless the last one started less than
// earlyAttemptGap ago. It never blocks.
func (sv *supervisor) wantAttempt() {
	if time.Now().Before(sv.earliestAttempt()) {
		return
	}
	select {
	case sv.early <- struct{}{}:
	default:
	}
}

// unreachable is the error of a call to a remote server whose connection
// is down. It says when a call may find the server back: at the next
// scheduled attempt, or sooner, when the next call can ask for one.
func (sv *supervisor) unreachable() *UnavailableError {
	sv.mu.Lock()
	next, last := sv.nextAttempt, sv.lastErr
	sv.mu.Unlock()
	retry := time.Until(sv.earliestAttempt())
	if !next.IsZero() {
		retry = min(retry, time.Until(next))
	}
	return &UnavailableError{Server: sv.sp().Name, State: StateRestarting, Unreachable: true, RetryIn: retry, Consent: needsConsent(last)}
}

// needsConsent reports whether a connect or call error (as text: errors
// cross the SDK's transport as strings) is the OAuth client's
// oauth.ErrConsent: the server's token needs `switchboard auth login`.
func needsConsent(err string) bool {
	return strings.Contains(err, oauth.ErrConsent.Error()+": run `switchboard auth login")
}

// callerRefusal is what err says from oauth.ErrCaller on, when a call
// failed because its caller's own token could not be had (as text, as
// needsConsent); "" for any other error.
func callerRefusal(err error) string { return fromMark(err, oauth.ErrCaller) }

// fromMark is what err says from mark's text on; "" when it does not say
// it.
func fromMark(err, mark error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.Index(msg, mark.Error()); i >= 0 {
		return msg[i:]
	}
	return ""
}

// consentAsked reports whether a call failed because its server needs a
// person's consent and the call's caller was asked for it in band
// (oauth.ErrConsentAsked, as text, as needsConsent).
func consentAsked(err error) bool {
	return err != nil && strings.Contains(err.Error(), oauth.ErrConsentAsked.Error())
}

// tokenRefusal is what err says from oauth.ErrNoToken on, when a call
// failed because no access token could be had for the server (the
// grant's flow failed; as text, as needsConsent); "" for any other error
// and for one that needs a person's consent, which has its own answer.
func tokenRefusal(err error) string {
	if err == nil || needsConsent(err.Error()) {
		return ""
	}
	return fromMark(err, oauth.ErrNoToken)
}

// callerRefused reports whether a call failed because its caller's own
// token could not be had.
func callerRefused(err error) bool { return callerRefusal(err) != "" }

// earlyFailed records a failed attempt that a call asked for. It is logged
// at debug only: the scheduled attempts already say, at warn, that the
// server is unreachable, and calls may ask once a second.
func (sv *supervisor) earlyFailed(err error) {
	sv.mu.Lock()
	sv.lastErr = err.Error()
	sv.restarts++
	sv.mu.Unlock()
	sv.log.Debug("upstream unreachable", "error", err, "reason", "a call asked for an attempt")
}
