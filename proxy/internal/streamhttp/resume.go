package streamhttp

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Resumable streams (SEP-1699, protocol 2025-11-25). A POST's event stream
// of a legacy session at 2025-11-25 or later has an ID, which names the
// process too (<epoch>.<n>: a Handler's random epoch, then the stream's
// number in its session): its events carry event IDs (<stream>_<n>), its
// first event is preceded by a priming event
// (an ID, the retry delay and no data). The priming event goes with the
// first event, not before it: a lone answer stays one write; a client that
// loses a stream before its first event has no ID to resume from, and
// calls again. A stream whose client went away,
// or that switchboard closed because its upstream did (Pause), keeps what
// is written to it while nobody reads, up to maxReplay bytes, and a GET
// with Last-Event-ID takes it up again: the events after that ID, then
// the rest as it comes, until the POST's calls are answered. A session
// keeps at most maxDetached such streams, each until its calls are
// answered and replayed, or for detachedTTL. A GET whose Last-Event-ID
// names a stream this process does not keep (replayed, expired, or one of
// another process: the one that held the session before it was resumed
// here) is answered 404: its events are gone, and a client must not wait
// for them on a stream that stays silent.
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

// newEpoch names a Handler in the IDs of its streams: a stream ID made by
// another process (one that held a resumed session before) is never
// taken for one of this process's.
func newEpoch() string { return rand.Text()[:8] }

// streamID names a session's n-th resumable stream.
func (h *Handler) streamID(n int64) string {
	return h.epoch + "." + strconv.FormatInt(n, 36)
}

// parseEventID splits an event ID into its stream's ID and the event's
// number.
func parseEventID(id string) (stream string, n int, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	return id[:i], n, err == nil && n >= 0
}

// foreign answers a GET whose Last-Event-ID names no stream of this
// process (400 if it names none at all, 404 if it names another
// process's), before its session is looked up, and reports whether it did:
// the session is not resumed here for a stream that cannot be.
func (h *Handler) foreign(w http.ResponseWriter, r *http.Request, last string) bool {
	stream, _, ok := parseEventID(last)
	switch {
	case !ok:
		http.Error(w, "Last-Event-ID names no event of this server", http.StatusBadRequest)
	case !strings.HasPrefix(stream, h.epoch+"."):
		h.log.Info("downstream stream not resumed", "session_id", r.Header.Get(sessionIDHeader), "reason", "its events were kept by another process")
		http.Error(w, "Last-Event-ID names a stream this server does not hold", http.StatusNotFound)
	default:
		return false
	}
	return true
}

// kept is an event written while the stream had no reader.
type kept struct {
	seq    int
	event  []byte
	answer bool
}

// eventID names the stream's n-th event.
func (s *stream) eventID(n int) string { return s.id + "_" + strconv.Itoa(n) }

// appendPriming appends the stream's priming event to b: its first ID
// (eventID(0)), the retry delay and no data.
func (s *stream) appendPriming(b []byte) []byte {
	b = append(b, "id: "...)
	b = append(b, s.id...)
	b = append(b, "_0\nretry: "...)
	b = strconv.AppendInt(b, retryDelay.Milliseconds(), 10)
	return append(b, "\ndata: \n\n"...)
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
		sseHeaders(s.w.Header())
		_, _ = s.w.Write(s.appendPriming(nil))
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
	id, n, ok := parseEventID(last)
	if !ok {
		http.Error(w, "Last-Event-ID names no event of this server", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	s := c.detached[id]
	delete(c.detached, id)
	c.mu.Unlock()
	if s == nil {
		// Answered and replayed, or expired: its events are gone. A
		// stream that stays open with nothing on it would leave the
		// client waiting for ever; an error tells it at once.
		c.h.log.Info("downstream stream not resumed", "session_id", c.id, "reason", "no events kept for it")
		http.Error(w, "Last-Event-ID names a stream this server does not hold", http.StatusNotFound)
		return
	}
	c.enter()
	defer c.leave()
	s.mu.Lock()
	sseHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	s.w, s.wrote, s.detached = w, true, false
	s.req = nil // the POST's watch stays with the POST
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
