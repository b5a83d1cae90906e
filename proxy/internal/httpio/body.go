package httpio

import (
	"io"
	"mime"
	"net/http"
	"time"
)

// Read reads r's body, at most limit bytes (beyond: *http.MaxBytesError),
// within timeout (0: none; beyond: the connection's timeout error). The
// deadline is lifted once the body is read, so a response that streams for
// long is not cut by it.
func Read(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) ([]byte, error) {
	var rc *http.ResponseController
	if timeout > 0 {
		rc = http.NewResponseController(w)
		// Not every ResponseWriter supports deadlines (a test recorder):
		// then the body is read without one.
		if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
			rc = nil
		}
	}
	b, err := read(w, r, limit)
	if err != nil {
		// The connection is not reused: what is left of the body is not
		// read, and the deadline stays, so nothing waits on the client.
		w.Header().Set("Connection", "close")
		return nil, err
	}
	if rc != nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return b, nil
}

// read reads the body, in one allocation when its length is known.
func read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

// IsJSON reports whether contentType, a request's Content-Type, names
// application/json. The value clients send, exactly that, is matched
// without parsing (mime.ParseMediaType makes a map of the parameters).
func IsJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}
