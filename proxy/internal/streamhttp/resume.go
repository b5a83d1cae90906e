package streamhttp

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Resumable streams (SEP-1699, protocol 2025-11-25). A POST's event stream
// of a legacy session at 2025-11-25 or later has an ID: its events carry
// event IDs (<stream>_<n>), its first event is preceded by a priming event
// (an ID, the retry delay and no data). The priming event goes with the
// first event, not before it: a lone answer stays one write; a client that
// loses a stream before its first event has no ID to resume from, and
// calls again. A stream whose client went away,
// or that switchboard closed because its upstream did (Pause), keeps what
// is written to it while nobody reads, up to maxReplay bytes, and a GET
// with Last-Event-ID takes it up again: the events after that ID, then
// the rest as it comes, until the POST's calls are answered. A session
// keeps at most maxDetached such streams, each until its calls are
// answered and replayed, or for detachedTTL.
//
// 2026-07-28 has no resumability: its requests' streams have no IDs.

const (
	// retryDelay is the reconnection delay a priming event names.
	retryDelay = time.Second
	// maxReplay bounds the bytes a detached stream keeps; past it,
	// notifications are dropped, never an answer.
	maxReplay = 256 << 10
	// maxDetached bounds the detached streams of one session; the oldest
	// goes first.
	maxDetached = 8
	// detachedTTL is how long a detached stream waits for its GET.
	detachedTTL = 5 * time.Minute
)

// resumableFrom is the first protocol version whose POST streams are
// primed and resumable.
const resumableFrom = "2025-11-25"

// kept is an event written while the stream had no reader.
type kept struct {
	seq    int
	event  []byte
	answer bool
}

// eventID names the stream's n-th event.
func (s *stream) eventID(n int) string { return s.id + "_" + strconv.Itoa(n) }

// priming is the stream's priming event: its first ID, the retry delay and
// no data.
func (s *stream) priming() []byte {
	return fmt.Appendf(nil, "id: %s\nretry: %d\ndata: \n\n", s.eventID(0), retryDelay.Milliseconds())
}

// keep stores an event written while nobody reads; s.mu held.
func (s *stream) keep(event []byte, answer bool) {
	size := 0
	for _, k := range s.kept {
		size += len(k.event)
	}
	if !answer && size+len(event) > maxReplay {
		s.dropped++
		return
	}
	s.kept = append(s.kept, kept{seq: s.seq, event: event, answer: answer})
}

// Pause closes the stream of a call whose upstream closed its own
// (SEP-1699 polling): the client is told to come back after retry and
// takes the rest up with Last-Event-ID. Nothing more is written on the
// POST, which ends when its handler is free (a lone call runs on it: once
// the call returns). It does nothing to a stream that is not resumable or
// has ended.
func (s *stream) Pause(retry time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == "" || s.w == nil || s.paused == nil {
		return
	}
	if !s.wrote {
		_, _ = s.w.Write(s.priming())
		s.wrote = true
	}
	if retry > 0 {
		_, _ = fmt.Fprintf(s.w, "retry: %d\n\n", retry.Milliseconds())
	}
	_ = s.hold.Flush()
	// From here what is written is kept: the POST's handler ends the
	// response when it wakes.
	s.w = nil
	s.hold.Detach()
	close(s.paused)
	s.paused = nil
}

// lost notes that the client of a resumable stream left: from now on its
// writes are kept, for a GET to take up.
func (c *conn) lost(s *stream) {
	s.mu.Lock()
	s.w = nil
	s.hold.Detach()
	s.mu.Unlock()
	c.detach(s)
}

// detach keeps a stream whose calls are not all answered for a GET to take
// up; its writes are kept from now on.
func (c *conn) detach(s *stream) {
	s.mu.Lock()
	if s.id == "" || (s.finished && len(s.kept) == 0) {
		s.mu.Unlock()
		return
	}
	s.detached = true
	s.since = time.Now()
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.detached == nil {
		c.detached = map[string]*stream{}
	}
	for id, d := range c.detached {
		if time.Since(d.since) > detachedTTL {
			delete(c.detached, id)
		}
	}
	if len(c.detached) >= maxDetached {
		var oldest *stream
		for _, d := range c.detached {
			if oldest == nil || d.since.Before(oldest.since) {
				oldest = d
			}
		}
		delete(c.detached, oldest.id)
	}
	c.detached[s.id] = s
}

// resume serves a GET with Last-Event-ID: the detached stream it names,
// from the event after that ID.
func (c *conn) resume(w http.ResponseWriter, r *http.Request, last string) {
	i := strings.LastIndexByte(last, '_')
	n, err := strconv.Atoi(last[i+1:])
	if i < 0 || err != nil {
		http.Error(w, "Last-Event-ID names no event of this server", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	s := c.detached[last[:i]]
	delete(c.detached, last[:i])
	c.mu.Unlock()
	if s == nil {
		// Answered and replayed, expired, or kept by the process that held
		// the session before (a session resumed from its ID): its events
		// are gone. The stream ends at once, with no event, so the client
		// knows the request it was for will not be answered on it; a 404
		// would tell it the whole session is gone.
		sseHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return
	}
	c.enter()
	defer c.leave()
	s.mu.Lock()
	sseHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	s.w, s.wrote, s.detached = w, true, false
	s.hold.Use(w)
	for _, k := range s.kept {
		if k.seq > n {
			_, _ = w.Write(k.event)
		}
	}
	s.kept = nil
	_ = s.hold.Flush()
	if s.finished {
		s.w = nil
	}
	s.paused = make(chan struct{})
	paused := s.paused
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-paused:
	case <-r.Context().Done():
	case <-c.sess.Done():
	}
	s.release()
	c.detach(s)
}
