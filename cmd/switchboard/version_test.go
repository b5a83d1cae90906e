package main

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	tagged := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	for _, c := range []struct {
		name, ldflags string
		info          *debug.BuildInfo
		want          string
	}{
		{"ldflags win", "0.1.0", tagged, "0.1.0"},
		{"module version", "dev", tagged, "v1.2.3"},
		{"devel build", "dev", devel, "dev"},
		{"no build info", "dev", nil, "dev"},
		{"empty ldflags", "", tagged, "v1.2.3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := moduleVersion(c.ldflags, c.info); got != c.want {
				t.Errorf("moduleVersion(%q) = %q, want %q", c.ldflags, got, c.want)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"revision and modified", vcs("vcs.revision", "abc1234def5678", "vcs.modified", "true"), "switchboard v1.2.3 (rev abc1234, modified)"},
		{"clean tree", vcs("vcs.revision", "abc1234def5678", "vcs.modified", "false"), "switchboard v1.2.3 (rev abc1234)"},
		{"no vcs", vcs(), "switchboard v1.2.3"},
		{"no build info", nil, "switchboard v1.2.3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := versionLine("v1.2.3", c.info); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestReadmeGoVersion: README names the Go version go.mod's go directive
// requires, the lowest that builds the module (STYLE §1; issue 18). .ci/run
// builds the module with exactly that toolchain.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	r := regexp.MustCompile(`Go (\d+\.\d+(?:\.\d+)?) or newer`).FindAllSubmatch(readme, -1)
	if len(r) == 0 {
		t.Fatal(`README.md names no "Go X.Y.Z or newer"`)
	}
	for _, v := range r {
		if string(v[1]) != string(m[1]) {
			t.Errorf("README.md says Go %s or newer, go.mod's go directive is %s", v[1], m[1])
		}
	}
}
