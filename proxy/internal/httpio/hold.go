package httpio

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Hold is a stream's hold on its response writer. The stream's own mutex
// guards its writer and every write through the Hold; Release takes it.
type Hold struct {
	rc      http.ResponseController // a value: one allocation less per stream
	ending  atomic.Bool             // Release began, or the stream is detached: a write gives up at once
	writing atomic.Bool             // a WriteFlush is under way: its deadline is set
}

// Use holds w from now on (a stream taken up again: not ending); the
// stream's mutex held, or before the stream is shared.
func (h *Hold) Use(w http.ResponseWriter) {
	h.rc = *http.NewResponseController(w)
	h.ending.Store(false)
}

// Flush flushes what was written; the stream's mutex held.
func (h *Hold) Flush() error { return h.rc.Flush() }

// WriteFlush writes b to w and flushes it, within timeout, or at once
// once the stream is ending; the stream's mutex held.
func (h *Hold) WriteFlush(w http.ResponseWriter, b []byte, timeout time.Duration) error {
	h.writing.Store(true)
	defer h.writing.Store(false)
	_ = h.rc.SetWriteDeadline(time.Now().Add(timeout))
	if h.ending.Load() {
		_ = h.rc.SetWriteDeadline(time.Now())
	}
	_, err := w.Write(b)
	if err == nil {
		err = h.rc.Flush()
	}
	_ = h.rc.SetWriteDeadline(time.Time{})
	return err
}

// Ending reports whether Release began or the stream was detached.
func (h *Hold) Ending() bool { return h.ending.Load() }

// Detach marks the stream as having no reader: a write in progress gives
// up; the stream's mutex held.
func (h *Hold) Detach() { h.ending.Store(true) }

// Release ends the hold: a write blocked on a client that does not read
// gives up at once instead of at its deadline. Then, under mu (the
// stream's mutex, not held by the caller), the deadline that cut it is
// lifted (what net/http writes once the handler returns, a chunked ending,
// has its own time) and drop lets the stream forget its writer.
//
// With no write under way there is no deadline to cut or lift: a
// WriteFlush lifts its own before it returns. A write that begins while
// Release runs sees ending, stored before writing is read here, and cuts
// its own deadline: one of the two always sees the other.
func (h *Hold) Release(mu sync.Locker, drop func()) {
	h.ending.Store(true)
	cut := h.writing.Load()
	if cut {
		_ = h.rc.SetWriteDeadline(time.Now())
	}
	mu.Lock()
	defer mu.Unlock()
	if cut {
		_ = h.rc.SetWriteDeadline(time.Time{})
	}
	drop()
}
