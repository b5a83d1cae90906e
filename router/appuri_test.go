package router_test

import (
	"testing"

	"github.com/mcp-switchboard/switchboard/router"
)

func TestAppURI(t *testing.T) {
	for _, c := range []struct{ prefix, in, want string }{
		{"react", "ui://get-time/mcp-app.html", "ui://react/get-time/mcp-app.html"},
		{"map", "ui://cesium-map/mcp-app.html", "ui://map/cesium-map/mcp-app.html"},
		{"a", "UI://X/y", "UI://a/X/y"},
		{"a", "ui://", "ui://a/"},
		{"a", "ui:///p", "ui://a//p"},
		{"a", "file:///x", "file:///x"},
	} {
		got := router.AppURI(c.prefix, c.in)
		if got != c.want {
			t.Errorf("AppURI(%q, %q) = %q, want %q", c.prefix, c.in, got, c.want)
		}
		if !router.IsAppURI(c.in) {
			continue
		}
		prefix, uri, ok := router.SplitAppURI(got)
		if !ok || prefix != c.prefix || uri != c.in {
			t.Errorf("SplitAppURI(%q) = %q %q %v, want %q %q", got, prefix, uri, ok, c.prefix, c.in)
		}
	}
	for _, bad := range []string{"ui://", "ui://noslash", "ui:///x", "res://a/b", "ui:"} {
		if p, u, ok := router.SplitAppURI(bad); ok {
			t.Errorf("SplitAppURI(%q) = %q %q, want not ok", bad, p, u)
		}
	}
}

func FuzzAppURI(f *testing.F) {
	f.Add("react", "ui://get-time/mcp-app.html")
	f.Fuzz(func(t *testing.T, prefix, uri string) {
		if !router.ValidPrefix(prefix) || !router.IsAppURI(uri) {
			return
		}
		p, u, ok := router.SplitAppURI(router.AppURI(prefix, uri))
		if !ok || p != prefix || u != uri {
			t.Fatalf("round trip of %q %q: %q %q %v", prefix, uri, p, u, ok)
		}
	})
}
