package router

import "strings"

// appScheme is the scheme of an MCP Apps UI resource URI.
const appScheme = "ui://"

// IsAppURI reports whether uri is a ui:// URI (the scheme in any case).
func IsAppURI(uri string) bool {
	return len(uri) >= len(appScheme) && strings.EqualFold(uri[:len(appScheme)], appScheme)
}

// AppURI is the public form of a server's ui:// URI: the server's prefix
// becomes the URI's authority, and what followed "ui://" its path, so
// ui://get-time/app.html of the server with prefix "react" is
// ui://react/get-time/app.html — still a ui:// URI, and two servers'
// URIs never collide. A URI that is not ui:// is returned as it is.
func AppURI(prefix, uri string) string {
	if !IsAppURI(uri) {
		return uri
	}
	return uri[:len(appScheme)] + prefix + "/" + uri[len(appScheme):]
}

// SplitAppURI undoes AppURI: the prefix the public ui:// URI names and the
// server's own URI. ok is false when public is not a ui:// URI with an
// authority followed by "/".
func SplitAppURI(public string) (prefix, uri string, ok bool) {
	if !IsAppURI(public) {
		return "", "", false
	}
	rest := public[len(appScheme):]
	prefix, path, found := strings.Cut(rest, "/")
	if !found || prefix == "" {
		return "", "", false
	}
	return prefix, public[:len(appScheme)] + path, true
}
