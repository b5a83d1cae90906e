package main

import (
	"os"
	"testing"
)

func TestParseInitTrace(t *testing.T) {
	out := `init internal/bytealg @0.003 ms, 0 ms clock, 0 bytes, 0 allocs
init github.com/aws/aws-sdk-go-v2/service/sts/internal/endpoints @8.9 ms, 0.068 ms clock, 82480 bytes, 610 allocs
init github.com/aws/aws-sdk-go-v2/service/sso/internal/endpoints @8.7 ms, 0.048 ms clock, 77168 bytes, 500 allocs
init github.com/hashicorp/vault/api @7.6 ms, 0.36 ms clock, 315672 bytes, 2000 allocs
init gopkg.in/yaml%2ev3 @7.7 ms, 0.01 ms clock, 2000 bytes, 20 allocs
init unicode @1.8 ms, 0.042 ms clock, 11400 bytes, 3 allocs
init google.golang.org/grpc/internal/binarylog @9.0 ms, 0.01 ms clock, 26520 bytes, 9 allocs
a line the runtime did not write
init main @10 ms, 0 ms clock, 8 bytes, 1 allocs
`
	h := parseInitTrace(out)
	if h.total != 82480+77168+315672+2000+11400+26520+8 {
		t.Fatalf("total %d", h.total)
	}
	want := []moduleBytes{
		{"github.com/hashicorp/vault", 315672},
		{"github.com/aws/aws-sdk-go-v2", 82480 + 77168},
		{"google.golang.org/grpc", 26520},
		{"the standard library", 11400},
		{"gopkg.in/yaml.v3", 2000},
	}
	if len(h.top) != len(want) {
		t.Fatalf("top %v, want %v", h.top, want)
	}
	for i := range want {
		if h.top[i] != want[i] {
			t.Errorf("top[%d] = %v, want %v", i, h.top[i], want[i])
		}
	}
}

// TestReadResident reads the test binary's own pages: the code running
// now is resident, and no part is more resident than the pages it spans
// (a part of three sections can share up to six partly filled pages
// beyond its size).
func TestReadResident(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := readResident(os.Getpid(), exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.parts) != len(binaryParts) {
		t.Fatalf("%d parts, want %d", len(r.parts), len(binaryParts))
	}
	for _, p := range r.parts {
		if p.resident > p.span || p.span < p.size {
			t.Errorf("%s: %d resident of %d spanned, %d in sections", p.name, p.resident, p.span, p.size)
		}
	}
	if code := r.parts[0]; code.size == 0 || code.resident == 0 {
		t.Errorf("code: %d resident of %d, want some of it", code.resident, code.size)
	}
	if r.file == 0 {
		t.Error("RssFile not read")
	}
}
