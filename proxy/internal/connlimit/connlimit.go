package connlimit

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Reserve is how many descriptors the cap leaves for everything but
// downstream connections: MinReserve, or a quarter of the limit when that
// is more. The runtime, the two listeners and a few admin connections (the
// probes, a metrics scrape) take about 20; each stdio server holds 4 while
// it runs (its stdin, stdout and stderr pipes and a pidfd), each HTTP server
// one connection per call in flight and one for its stream; the config
// watch, the pin, audit and catalog files a few more. At a limit of 1024
// that leaves 256: about fifty stdio servers.
const MinReserve = 64

// Cap is the most downstream connections a process whose descriptor limit
// is nofile holds open: nofile less the reserve, at least 1.
func Cap(nofile uint64) int {
	reserve := max(MinReserve, nofile/4)
	if nofile <= reserve {
		return 1
	}
	return int(min(nofile-reserve, 1<<30))
}

// warnEvery is how often a listener at its cap says so again.
const warnEvery = time.Minute

// Listener is a net.Listener that holds at most Max connections open: at
// the cap, Accept waits until one closes, and a new connection waits in
// the kernel's accept queue meanwhile, to be served when a slot frees
// (idle keep-alive connections close after the server's idle timeout). The
// first wait is logged at WARN, then at most once a minute. Safe for
// concurrent use; http.Server calls Accept from one goroutine.
type Listener struct {
	net.Listener
	max int
	log hclog.Logger

	mu sync.Mutex
	// open counts the slots taken: the connections accepted and not yet
	// closed, and the one an Accept waiting on the listener holds;
	// accepted only the former (what Status reports).
	open     int
	accepted int
	warned   time.Time
	freed    chan struct{} // a slot freed (buffered 1)
	done     chan struct{} // closed by Close
	once     sync.Once
}

// New wraps l so it holds at most max connections open at once; log
// receives the WARN at the cap.
func New(l net.Listener, max int, log hclog.Logger) *Listener {
	return &Listener{Listener: l, max: max, log: log, freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *Listener) Accept() (net.Conn, error) {
	for !l.take() {
		select {
		case <-l.freed:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release(false)
		return nil, err
	}
	l.mu.Lock()
	l.accepted++
	l.mu.Unlock()
	return &conn{Conn: c, l: l}, nil
}

// take claims a slot; false at the cap, which is logged.
func (l *Listener) take() bool {
	l.mu.Lock()
	if l.open < l.max {
		l.open++
		l.mu.Unlock()
		return true
	}
	now := time.Now()
	warn := l.warned.IsZero() || now.Sub(l.warned) >= warnEvery
	if warn {
		l.warned = now
	}
	l.mu.Unlock()
	if warn {
		l.log.Warn("downstream connections at the cap; new ones wait until one closes", "count", l.max)
	}
	return false
}

func (l *Listener) release(accepted bool) {
	l.mu.Lock()
	l.open--
	if accepted {
		l.accepted--
	}
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Close closes the listener and ends a waiting Accept.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Status is the cap and the connections open now.
type Status struct {
	Open int `json:"open"`
	Max  int `json:"max"`
}

// Status reports the cap and the connections open now.
func (l *Listener) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Status{Open: l.accepted, Max: l.max}
}

// conn gives its slot back when closed, once.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(true) })
	return err
}
