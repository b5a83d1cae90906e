package rebind

import "testing"

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8931": true, "127.0.0.1": true, "127.9.9.9:1": true, "[::1]:80": true, "::1": true,
		"[::ffff:127.0.0.1]:80": true, "127.1": false,
		"example.com": false, "10.0.0.1:80": false, "localhost.evil.com": false, "": false, "[::2]:1": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
