package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildSwitchboard builds cmd/switchboard with extra go build flags into a
// test's temp dir (without -race: only its version is asked for).
func buildSwitchboard(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchboard")
	args := append(append([]string{"build"}, flags...), "-o", bin, "../cmd/switchboard")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// TestVersionFromBuildInfo: `switchboard version` prints the module version
// and the commit from the build info, not a fixed "dev" (issue 18).
func TestVersionFromBuildInfo(t *testing.T) {
	head, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
	if err != nil {
		skipUnlessFull(t, "not a git checkout: nothing to stamp")
	}
	bin := buildSwitchboard(t, "-buildvcs=true")
	if info, _ := exec.Command("go", "version", "-m", bin).Output(); !strings.Contains(string(info), "vcs.revision=") {
		// The go command finds git only where .git is a directory, not
		// in a linked worktree.
		skipUnlessFull(t, "the go command recorded no VCS information for this checkout")
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(out))
	if want := "(rev " + string(head[:7]); !strings.Contains(got, want) {
		t.Errorf("version prints %q, want the revision %q", got, want)
	}
	if f := strings.Fields(got); len(f) < 2 || f[1] == "dev" || !strings.HasPrefix(f[1], "v") {
		t.Errorf("version prints %q, want a module version", got)
	}
}

// TestVersionFromLdflags: a version set with -ldflags (as the container
// images do) wins over the build info.
func TestVersionFromLdflags(t *testing.T) {
	bin := buildSwitchboard(t, "-ldflags", "-X github.com/mcp-switchboard/switchboard/proxy.Version=v9.8.7")
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "switchboard v9.8.7") {
		t.Errorf("version prints %q, want switchboard v9.8.7", got)
	}
}

// skipUnlessFull skips a test whose precondition this machine lacks, and
// fails it where every test must run (SWITCHBOARD_FULL=1, as .ci/run sets).
func skipUnlessFull(t *testing.T, why string) {
	t.Helper()
	if full {
		t.Fatal(why)
	}
	t.Skip(why)
}
