package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// EgressAllow is the egress allow-list server s runs with: its own
// egress.allow, else the top level's; nil: any origin.
func (c *Config) EgressAllow(s *Server) []string {
	switch {
	case s != nil && s.Egress != nil:
		return s.Egress.Allow
	case c.Egress != nil:
		return c.Egress.Allow
	}
	return nil
}

// egress checks an egress setting at path: a non-empty allow-list of
// origin patterns.
func (v *validator) egress(path string, e *Egress) {
	if e == nil {
		return
	}
	if len(e.Allow) == 0 {
		v.add(path+".allow", "must list at least one origin (leave egress out to allow any)")
	}
	for i, a := range e.Allow {
		if _, _, _, err := ParseOrigin(a); err != nil {
			v.add(joinIndex(path+".allow", i), err.Error())
		}
	}
}

// serverEgress checks a server's followRedirects and egress, which only a
// remote server (transport tr) has.
func (v *validator) serverEgress(path, tr string, s *Server) {
	if tr == "stdio" {
		if s.FollowRedirects != "" {
			v.add(path+".followRedirects", `not allowed for transport "stdio"`)
		}
		if s.Egress != nil {
			v.add(path+".egress", `not allowed for transport "stdio"`)
		}
		return
	}
	v.oneOf(path+".followRedirects", s.FollowRedirects, redirects)
	v.egress(path+".egress", s.Egress)
}

// ParseOrigin parses one egress allow-list entry, scheme://host[:port],
// into its lower-case parts (upstream.OriginPattern). The scheme is http or
// https; the host a name, an IP address (IPv6 in brackets), "*" (any host)
// or "*.example.com" (any name below example.com, not example.com itself);
// the port a number, "*" (any), or left out for the scheme's default (port
// is then ""). No path, query or user info.
func ParseOrigin(s string) (scheme, host, port string, err error) {
	scheme, rest, ok := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "http" && scheme != "https") {
		return "", "", "", fmt.Errorf("want scheme://host[:port] with scheme http or https, got %q", s)
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@") {
		return "", "", "", fmt.Errorf("want an origin (scheme://host[:port]) without path, query or user info, got %q", s)
	}
	if host, port, err = splitHostPattern(rest); err != nil {
		return "", "", "", fmt.Errorf("%q: %w", s, err)
	}
	return scheme, strings.ToLower(host), port, nil
}

// splitHostPattern splits host[:port] of a pattern and checks both parts.
func splitHostPattern(hp string) (host, port string, err error) {
	host = hp
	if strings.HasPrefix(hp, "[") { // an IPv6 address
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", "", errors.New("unclosed [ in the host")
		}
		host, port = hp[1:end], hp[end+1:]
		if port != "" && port[0] != ':' {
			return "", "", errors.New("want :port after ]")
		}
		port = strings.TrimPrefix(port, ":")
		if net.ParseIP(host) == nil {
			return "", "", errors.New("not an IPv6 address in [ ]")
		}
		return host, port, checkPort(port)
	} else if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i+1:]
		if port == "" {
			return "", "", errors.New("empty port")
		}
	}
	if err := checkPort(port); err != nil {
		return "", "", err
	}
	suffix := strings.TrimPrefix(host, "*.")
	switch {
	case host == "":
		return "", "", errors.New("empty host")
	case host == "*":
	case strings.ContainsAny(suffix, "*:"), suffix == "":
		return "", "", errors.New(`the host may be "*", "*.name" or a name or address without "*"`)
	}
	return host, port, nil
}

func checkPort(port string) error {
	if port == "" || port == "*" {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want 1-65535 or *", port)
	}
	return nil
}
