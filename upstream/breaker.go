package upstream

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/sony/gobreaker/v2"
)

// breaker is a Handle's circuit breaker. It counts transport failures and
// timeouts; answers (even isError results and JSON-RPC errors) are
// successes, and calls whose caller went away are not counted at all.
// Half-open lets one probe call through at a time. Changed settings (Update)
// and a remote server that connected again (closeOnReconnect) replace it
// with a closed one.
type breaker struct {
	log     hclog.Logger
	cb      atomic.Pointer[gobreaker.CircuitBreaker[any]]
	probeAt atomic.Int64 // unix nanos when an open breaker half-opens
}

func breakerFailures(spec *Spec) int {
	if spec.BreakerFailures <= 0 {
		return 5
	}
	return spec.BreakerFailures
}

// reset starts a closed breaker with spec's settings.
func (b *breaker) reset(spec *Spec) {
	failures := breakerFailures(spec)
	open := spec.BreakerOpen
	if open <= 0 {
		open = 30 * time.Second
	}
	b.cb.Store(gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        spec.Name,
		MaxRequests: 1,
		Timeout:     open,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(failures) },
		// An upstream that answered is healthy, even if the answer is an error.
		IsSuccessful: func(err error) bool {
			_, ok := answer(err)
			return err == nil || ok
		},
		// A caller whose own token could not be had (token_exchange) says
		// nothing of the server's health: one caller must not open the
		// breaker for all.
		IsExcluded: func(err error) bool { return errors.Is(err, errCallerGone) || callerRefused(err) || consentAsked(err) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.probeAt.Store(time.Now().Add(open).UnixNano())
			}
			b.log.Info("breaker state changed", "state", to.String(), "from", from.String())
		},
	}))
}

// execute runs fn unless the breaker refuses it, and counts its outcome.
func (b *breaker) execute(fn func() (any, error)) (any, error) {
	return b.cb.Load().Execute(fn)
}

// countFailure counts a call that could not even be sent as a failure.
func (b *breaker) countFailure(err error) {
	_, _ = b.execute(func() (any, error) { return nil, err })
}

// refusal turns the breaker's refusal of a call into what the caller gets,
// or returns nil when err is not one.
func (b *breaker) refusal(spec *Spec, err error) error {
	switch {
	case errors.Is(err, gobreaker.ErrOpenState):
		return &UnavailableError{Server: spec.Name, Breaker: true,
			Reason:  fmt.Sprintf("circuit breaker open after %d consecutive failures", breakerFailures(spec)),
			RetryIn: time.Until(time.Unix(0, b.probeAt.Load()))}
	case errors.Is(err, gobreaker.ErrTooManyRequests):
		return &UnavailableError{Server: spec.Name, Breaker: true,
			Reason: "circuit breaker half-open, a probe call is in progress"}
	}
	return nil
}

// closeOnReconnect gives a remote server that connected again a closed
// breaker: the new session is the probe an open breaker waits for, and
// keeping it open would refuse calls to a server that is back.
func (b *breaker) closeOnReconnect(spec *Spec) {
	if !spec.remote() {
		return
	}
	prev := b.cb.Load().State()
	if prev == gobreaker.StateClosed {
		return
	}
	b.reset(spec)
	b.log.Info("breaker state changed", "state", gobreaker.StateClosed.String(), "from", prev.String(), "reason", "reconnected")
}

// status is the breaker's state as Status shows it, and when an open one
// lets the next call through as a probe (zero unless open).
func (b *breaker) status() (state string, probe time.Time) {
	bs := b.cb.Load().State()
	if bs == gobreaker.StateOpen {
		probe = time.Unix(0, b.probeAt.Load())
	}
	return bs.String(), probe
}

// consecutiveFailures is the breaker's current failure run.
func (b *breaker) consecutiveFailures() uint32 {
	return b.cb.Load().Counts().ConsecutiveFailures
}
