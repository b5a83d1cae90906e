package admin

import (
	"bufio"
	"bytes"
	"net/http"
	"regexp"
	"strconv"
)

// agentLabel matches a sample's view label naming an agent: any view but
// the default one.
var agentLabel = regexp.MustCompile(`[{,]view="(?:[^"\\]|\\.)*"`)

// servePublicMetrics serves h's metrics without the series that name an
// agent (a view label other than "default"), for a scrape without the
// admin token. The exposition is read uncompressed, filtered line by line
// and written whole.
func servePublicMetrics(w http.ResponseWriter, r *http.Request, h http.Handler) {
	r = r.Clone(r.Context())
	r.Header.Del("Accept-Encoding")
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, r)
	var out bytes.Buffer
	sc := bufio.NewScanner(&rec.body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if m := agentLabel.Find(line); m != nil && !bytes.Equal(m[1:], []byte(`view="default"`)) {
			continue
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	for k, v := range rec.header {
		if k != "Content-Length" && k != "Content-Encoding" {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(rec.code)
	_, _ = w.Write(out.Bytes())
}

// recorder keeps what a handler writes, to be filtered before it is sent.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
