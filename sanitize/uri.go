package sanitize

import "strings"

// A URI is not free text: a client resolves it, shows it, or hands it back
// to read a resource, and a secret can hide in it percent-encoded in ways
// no list of encoded forms foresees (any set of bytes escaped, hex digits
// in either case, escaped twice). redactURI redacts what a URI holds under
// every reading a client may give it, and keeps what it returns a URI.

// redactedMark is the Redactor's replacement (secrets.Redacted), and
// uriRedacted is the same in a URI: its brackets, which a URI allows only
// around an IP literal, percent-encoded, so that a redacted URI is still
// a URI and reads "[REDACTED]" once decoded.
const (
	redactedMark = "[REDACTED]"
	uriRedacted  = "%5BREDACTED%5D"
)

// uriNeutral is neutralToken as it stands in a URI.
const uriNeutral = "%5B%5BMARKER-NEUTRALISED%5D%5D"

// maxURIDecodes bounds how many times a URI is percent-decoded in search
// of a secret: escaping a secret more often than that is no reading any
// client gives a URI.
const maxURIDecodes = 8

// redactURI returns s with every secret r knows redacted, in the URI as
// it is and in each percent-decoded reading of it. When only a decoded
// reading holds a secret, the URI becomes that reading, redacted and
// escaped again where a URI needs it (so other escapes in it may read
// decoded); otherwise only the secrets are replaced. The replacement is
// uriRedacted.
func redactURI(r Redactor, s string) string {
	if r == nil || s == "" {
		return s
	}
	t := redact(r, s)
	cur := t
	for range maxURIDecodes {
		d := percentDecode(cur)
		if d == cur {
			break
		}
		if rd := redact(r, d); rd != d {
			t, d = escapeURI(rd), rd
		}
		cur = d
	}
	return strings.ReplaceAll(t, redactedMark, uriRedacted)
}

// neutralizeURI neutralises marker look-alikes in s, a URI, as it is and
// in each percent-decoded reading of it (an escape escaped again, an
// entity percent-encoded): a client may show any of them. A look-alike in
// the URI as it is, or in what one decoding shows (the fold decodes one
// level of escapes), is replaced in place; one that only a deeper reading
// shows makes the URI that reading, neutralised and escaped again. The
// replacement is uriNeutral. It reports whether it found one.
func neutralizeURI(s string) (string, bool) {
	t, cur, found := s, s, false
	for level := 0; ; level++ {
		if hasMarker(cur) {
			found = true
			cur = neutralizeSlow(cur)
			if level == 0 {
				t = cur
			} else {
				t = escapeURI(cur)
			}
		}
		d := percentDecode(cur)
		if level == maxURIDecodes || d == cur {
			break
		}
		cur = d
	}
	if !found {
		return s, false
	}
	return strings.ReplaceAll(t, neutralToken, uriNeutral), true
}

// looksLikeURI reports whether s starts with a URI scheme and holds no
// whitespace: a value in _meta that names a resource.
func looksLikeURI(s string) bool {
	i := strings.IndexByte(s, ':')
	if i < 1 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// percentDecode decodes every %XX in s (any byte, either case of hex);
// a '%' not followed by two hex digits stays as it is.
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex[s[i+1]] && isHex[s[i+2]] {
			b = append(b, hexVal(s[i+1])<<4|hexVal(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// escapeURI percent-encodes every byte of s that a URI does not hold as
// it is (RFC 3986: what is neither unreserved nor reserved), '%' included,
// so that percentDecode(escapeURI(s)) == s. Brackets stay as they are only
// around an IP literal host (§3.2.2); anywhere else they are escaped, as a
// decoded reading that held "%5B" must not come back with a bracket the
// URI never had.
func escapeURI(s string) string {
	const hexDigits = "0123456789ABCDEF"
	host := ipLiteral(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if uriByte(c) && (c != '[' && c != ']' || host.contains(i)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// byteRange is a half-open range of byte offsets.
type byteRange struct{ from, to int }

func (p byteRange) contains(i int) bool { return p.from <= i && i < p.to }

// ipLiteral returns where the IP literal host of s, a URI, stands, its
// brackets included: in the authority (after "scheme://" up to the path,
// query or fragment), after any userinfo, "[" … "]" followed by nothing
// or a port. It is empty when s has none.
func ipLiteral(s string) byteRange {
	i := strings.Index(s, "://")
	if i < 1 || !looksLikeURI(s[:i+1]) {
		return byteRange{}
	}
	from := i + 3
	to := len(s)
	if j := strings.IndexAny(s[from:], "/?#"); j >= 0 {
		to = from + j
	}
	if at := strings.LastIndexByte(s[from:to], '@'); at >= 0 {
		from += at + 1
	}
	end := strings.IndexByte(s[from:to], ']')
	if from == to || s[from] != '[' || end < 0 || strings.IndexByte(s[from+1:to], '[') >= 0 {
		return byteRange{}
	}
	end += from + 1
	if port := s[end:to]; port != "" && (port[0] != ':' || strings.Trim(port[1:], "0123456789") != "") {
		return byteRange{}
	}
	if !ipLiteralBody(s[from+1 : end-1]) {
		return byteRange{}
	}
	return byteRange{from, end}
}

// ipLiteralBody reports whether s, what stands between a host's brackets,
// is what RFC 3986 §3.2.2 (and RFC 6874's zone) allows there: an IPv6
// address (hex digits, ':' and '.'), then perhaps "%25" and a zone, or
// an IPvFuture ("v", hex digits, '.', then unreserved, sub-delims or ':').
// Anything else, such as a redaction mark a decoded reading brought into
// the host, is not an IP literal, and its brackets are escaped.
func ipLiteralBody(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == 'v' || s[0] == 'V' {
		dot := strings.IndexByte(s, '.')
		if dot < 2 || strings.Trim(s[1:dot], "0123456789abcdefABCDEF") != "" || dot == len(s)-1 {
			return false
		}
		for i := dot + 1; i < len(s); i++ {
			if c := s[i]; !unreservedByte(c) && strings.IndexByte(subDelims+":", c) < 0 {
				return false
			}
		}
		return true
	}
	addr, zone, hasZone := strings.Cut(s, "%25")
	if addr == "" || strings.IndexByte(addr, ':') < 0 || strings.Trim(addr, "0123456789abcdefABCDEF:.") != "" {
		return false
	}
	if !hasZone {
		return true
	}
	if zone == "" {
		return false
	}
	for i := 0; i < len(zone); i++ {
		c := zone[i]
		switch {
		case c == '%':
			if i+2 >= len(zone) || !isHex[zone[i+1]] || !isHex[zone[i+2]] {
				return false
			}
			i += 2
		case !unreservedByte(c):
			return false
		}
	}
	return true
}

// unreservedByte reports whether c is unreserved (RFC 3986 §2.3).
func unreservedByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '-' || c == '.' || c == '_' || c == '~'
}

// subDelims are RFC 3986's sub-delims (§2.2); with ":/?#[]@", the
// gen-delims, they are its reserved bytes.
const subDelims = "!$&'()*+,;="

// uriByte reports whether c stands in a URI as it is: unreserved or
// reserved (RFC 3986 §2.2, §2.3).
func uriByte(c byte) bool {
	return unreservedByte(c) || strings.IndexByte(":/?#[]@"+subDelims, c) >= 0
}

// URI returns s, a URI (or a text that quotes one, such as an error about
// it), with secrets redacted as in a URI field and marker look-alikes
// neutralised: for what names an upstream's URI outside a message, such
// as the notes on /status.
func URI(s string, r Redactor) string {
	t, _ := cleanURI(r, s)
	return t
}
