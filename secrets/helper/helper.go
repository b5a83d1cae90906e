package helper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// MaxLine bounds one message: a request, or a response with its value
// (Secrets Manager holds at most 64 KiB per secret, Go's JSON escaping at
// most six bytes per byte).
const MaxLine = 1 << 20

// DefaultTimeout bounds a request whose Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Request asks for one secret.
type Request struct {
	ID uint64 `json:"id"`
	// Backend names the backend: "aws".
	Backend string `json:"backend"`
	// Path and Key are the reference's path and its #key (empty for none).
	Path string `json:"path"`
	Key  string `json:"key,omitempty"`
	// Timeout bounds the fetch, in milliseconds; 0 is DefaultTimeout.
	Timeout int64 `json:"timeoutMs,omitempty"`
}

// Response answers the Request of the same ID with the value or an error.
type Response struct {
	ID    uint64 `json:"id"`
	Value string `json:"value,omitempty"`
	// Error is the backend's reason; it never holds a value.
	Error string `json:"error,omitempty"`
	// NotFound says the secret or its key does not exist (the error is
	// permanent: asking again will not help).
	NotFound bool `json:"notFound,omitempty"`
}

// Fetch reads one secret for a backend.
type Fetch func(ctx context.Context, path, key string) (string, error)

// Serve answers the requests read from r on w until r ends or ctx is done,
// each with the Fetch of its backend, concurrently. An error for which
// notFound reports true is answered as NotFound. It returns when every
// request read has been answered, with nil at the end of r.
func Serve(ctx context.Context, r io.Reader, w io.Writer, backends map[string]Fetch, notFound func(error) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		wmu  sync.Mutex
		werr error
	)
	bw := bufio.NewWriter(w)
	answer := func(resp Response) {
		b, err := json.Marshal(resp)
		if err != nil {
			b, _ = json.Marshal(Response{ID: resp.ID, Error: "helper: " + err.Error()})
		}
		wmu.Lock()
		defer wmu.Unlock()
		if werr != nil {
			return
		}
		bw.Write(b)
		bw.WriteByte('\n')
		if werr = bw.Flush(); werr != nil {
			cancel()
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	var rerr error
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rerr = fmt.Errorf("helper: malformed request: %w", err)
			break
		}
		fetch, ok := backends[req.Backend]
		if !ok {
			answer(Response{ID: req.ID, Error: fmt.Sprintf("helper: no backend %q", req.Backend)})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			timeout := DefaultTimeout
			if req.Timeout > 0 {
				timeout = time.Duration(req.Timeout) * time.Millisecond
			}
			fctx, fcancel := context.WithTimeout(ctx, timeout)
			defer fcancel()
			v, err := fetch(fctx, req.Path, req.Key)
			if err != nil {
				answer(Response{ID: req.ID, Error: err.Error(), NotFound: notFound != nil && notFound(err)})
				return
			}
			answer(Response{ID: req.ID, Value: v})
		}()
	}
	if rerr == nil {
		rerr = sc.Err()
	}
	wg.Wait()
	wmu.Lock()
	defer wmu.Unlock()
	return errors.Join(rerr, werr)
}
