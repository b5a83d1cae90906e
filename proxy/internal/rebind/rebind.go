package rebind

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Refused answers 403 and reports true when r came in on a loopback
// listener but names a Host that is not loopback.
func Refused(w http.ResponseWriter, r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil || !localLoopback(la) || IsLoopback(r.Host) {
		return false
	}
	http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
	return true
}

// IsLoopback reports whether a host, with or without a port, is a loopback
// name or address.
func IsLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// localLoopback reports whether the listener's address is a loopback one,
// without formatting it when it is TCP (every request asks).
func localLoopback(la net.Addr) bool {
	if tcp, ok := la.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	return IsLoopback(la.String())
}
