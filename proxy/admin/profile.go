package admin

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// Bounds of a CPU profile's ?seconds=.
const (
	defaultProfileSeconds = 30
	maxProfileSeconds     = 300
)

// profiles serves the Go runtime's profiles under /debug/pprof/, in the
// format `go tool pprof URL` reads, when serve runs with --admin-pprof:
// /debug/pprof/profile?seconds=N is the CPU profile of the next N seconds
// (30 if not given, at most 300); /debug/pprof/NAME is runtime/pprof's
// profile of that name (heap, allocs, goroutine, block, mutex,
// threadcreate), ?debug=1 as text, ?gc=1 collecting first (heap).
// /debug/pprof/ lists them. With an admin token (admin.reloadToken) a
// request must carry it, as the admin actions must. It does not use
// net/http/pprof, whose import registers the same pages on
// http.DefaultServeMux.
func profiles(b Backend) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := b.ReloadToken(); tok != "" && !authorized(w, r, tok) {
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		switch name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/"); name {
		case "":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "profile?seconds=N\tCPU, the next N seconds (default 30)")
			for _, p := range pprof.Profiles() {
				fmt.Fprintf(w, "%s\t%d\n", p.Name(), p.Count())
			}
		case "profile":
			cpuProfile(w, r)
		default:
			namedProfile(w, r, name)
		}
	})
}

// cpuProfile writes the CPU profile of the next ?seconds=, or until the
// client leaves.
func cpuProfile(w http.ResponseWriter, r *http.Request) {
	secs := defaultProfileSeconds
	if s := r.FormValue("seconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds: %q is not a whole number from 1 to %d", s, maxProfileSeconds), http.StatusBadRequest)
			return
		}
		secs = n
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="profile"`)
	if err := pprof.StartCPUProfile(w); err != nil {
		// Another profile is running (one at a time per process).
		w.Header().Del("Content-Disposition")
		http.Error(w, "cannot start a CPU profile: "+err.Error(), http.StatusConflict)
		return
	}
	t := time.NewTimer(time.Duration(secs) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	pprof.StopCPUProfile()
}

// namedProfile writes the runtime/pprof profile name.
func namedProfile(w http.ResponseWriter, r *http.Request, name string) {
	p := pprof.Lookup(name)
	if p == nil {
		http.Error(w, fmt.Sprintf("no profile %q (see /debug/pprof/)", name), http.StatusNotFound)
		return
	}
	debug, _ := strconv.Atoi(r.FormValue("debug"))
	if name == "heap" && r.FormValue("gc") != "" {
		runtime.GC()
	}
	if debug != 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	}
	_ = p.WriteTo(w, debug)
}
