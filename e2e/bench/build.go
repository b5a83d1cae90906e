package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The two ways --build builds switchboard and the peer.
const (
	buildShipped  = "shipped"  // each as its project ships it (the default)
	buildDefaults = "defaults" // both with go build's defaults, as before issue 40
)

// recipe is one way of building a binary: what go build gets besides
// -o and the package.
type recipe struct {
	what  string   // how the report says it was built
	env   []string // added to go build's environment
	flags []string // go build's flags, before -o
}

// benchVersion stands for the version a release stamps into the binary:
// the Dockerfiles' default ARG VERSION. It changes nothing the benchmark
// measures.
const benchVersion = "dev"

// shippedSwitchboard is the build of switchboard's images,
// charts/images/Dockerfile and charts/images/Dockerfile.node, for the
// machine's own GOOS and GOARCH (the images set the target's).
// TestShippedSwitchboardIsTheImages fails when either Dockerfile builds
// otherwise.
var shippedSwitchboard = recipe{
	what: "as its images build it (charts/images/Dockerfile: `CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags grpcnotrace -ldflags \"-s -w -X …\"`)",
	env:  []string{"CGO_ENABLED=0"},
	flags: []string{"-trimpath", "-buildvcs=false", "-tags", "grpcnotrace",
		"-ldflags", "-s -w -X github.com/mcp-switchboard/switchboard/proxy.Version=" + benchVersion},
}

// shippedPeer is the build of the peer's Makefile (its GO_BUILD). Its -X
// sets the version the peer prints, nothing else.
var shippedPeer = recipe{
	what:  "as its Makefile builds it (`CGO_ENABLED=0 go build -ldflags \"-X main.BuildVersion=…\"`)",
	env:   []string{"CGO_ENABLED=0"},
	flags: []string{"-ldflags", "-X main.BuildVersion=" + benchVersion},
}

// peerMakefileBuild is the peer's Makefile's build line that shippedPeer
// repeats; the run says so in a note when the Makefile has another.
const peerMakefileBuild = `GO_BUILD=CGO_ENABLED=0 go build $(LD_FLAGS)`

// plainBuild is go build with its defaults.
var plainBuild = recipe{what: "with `go build`'s defaults"}

// recipes returns the builds of switchboard and the peer for a --build mode.
func recipes(mode string) (sb, peer recipe) {
	if mode == buildDefaults {
		return plainBuild, plainBuild
	}
	return shippedSwitchboard, shippedPeer
}

// otherMode is the --build mode the run does not measure; its binaries
// are built for their sizes only.
func otherMode(mode string) string {
	if mode == buildDefaults {
		return buildShipped
	}
	return buildDefaults
}

// binaries are the programs the benchmark runs. peer is empty when it did
// not build (peerErr says why). sizes holds both builds of switchboard and
// the peer, the measured one first.
type binaries struct {
	switchboard, fixture, peer string
	peerErr                    error
	sizes                      []binSize
}

// binSize is the size of one built binary.
type binSize struct {
	name  string // "switchboard" or "peer"
	mode  string // buildShipped or buildDefaults
	bytes int64
}

// size returns the size of name built in mode, 0 when it was not built.
func size(sizes []binSize, name, mode string) int64 {
	for _, s := range sizes {
		if s.name == name && s.mode == mode {
			return s.bytes
		}
	}
	return 0
}

// build compiles switchboard, the echo server and the peer (without -race;
// switchboard and the peer as --build says, the fixture with go build's
// defaults), or reuses them from --bin. The switchboard module is two
// directories above the benchmark's own. The peer is TBXark/mcp-proxy,
// whose module is not on the module proxy: its source (--peer-src, by
// default shared/peers/tbxark-mcp-proxy beside the repository) is copied
// into the work directory and built there with GOWORK=off, so mcp-go never
// enters switchboard's go.mod. If it does not build, the run goes on
// without it. Switchboard and the peer are also built the other way, for
// the report's binary sizes.
func build(ctx context.Context, o *options, work string) (binaries, []string, error) {
	dir := o.bin
	if dir == "" {
		dir = filepath.Join(work, "bin")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return binaries{}, nil, err
	}
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return binaries{}, nil, fmt.Errorf("run from inside the benchmark's module (e2e/bench): go env GOMOD: %v", err)
	}
	root := filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "cmd", "switchboard")); err != nil {
		return binaries{}, nil, fmt.Errorf("run from e2e/bench of the switchboard repository: %w", err)
	}
	reuse := func(out string) bool {
		if _, err := os.Stat(out); err == nil && o.bin != "" {
			progress("reusing %s", out)
			return true
		}
		return false
	}
	b := binaries{fixture: filepath.Join(dir, "fixture")}
	if !reuse(b.fixture) {
		progress("building ./e2e/fixture")
		if err := goBuild(ctx, root, b.fixture, "./e2e/fixture", plainBuild); err != nil {
			return binaries{}, nil, err
		}
	}
	src := o.peerSrc
	if src == "" {
		src = filepath.Join(root, "..", "shared", "peers", "tbxark-mcp-proxy")
	}
	var notes []string
	for _, mode := range []string{o.build, otherMode(o.build)} {
		sbRecipe, peerRecipe := recipes(mode)
		sb := filepath.Join(dir, "switchboard-"+mode)
		if !reuse(sb) {
			progress("building ./cmd/switchboard %s", sbRecipe.what)
			if err := goBuild(ctx, root, sb, "./cmd/switchboard", sbRecipe); err != nil {
				return binaries{}, nil, err
			}
		}
		peer := filepath.Join(dir, "mcp-proxy-"+mode)
		var peerErr error
		if !reuse(peer) {
			progress("building the peer from %s %s", src, peerRecipe.what)
			if peerErr = buildPeer(ctx, src, filepath.Join(work, "peer-src"), peer, peerRecipe); peerErr != nil {
				progress("%v", peerErr)
				peer = ""
			}
		}
		for _, f := range [][2]string{{"switchboard", sb}, {"peer", peer}} {
			if st, err := os.Stat(f[1]); f[1] != "" && err == nil {
				b.sizes = append(b.sizes, binSize{f[0], mode, st.Size()})
			}
		}
		if mode == o.build {
			b.switchboard, b.peer, b.peerErr = sb, peer, peerErr
		}
	}
	if o.build == buildShipped && o.perf != "" {
		notes = append(notes, "switchboard is stripped as shipped (-s), so its profiles name none of its functions: profile with --build defaults")
	}
	if o.build == buildShipped && b.peerErr == nil {
		if n := checkPeerMakefile(src); n != "" {
			notes = append(notes, n)
		}
	}
	return b, notes, nil
}

// checkPeerMakefile returns a note when the peer's Makefile no longer
// builds as shippedPeer repeats, "" when it does.
func checkPeerMakefile(src string) string {
	f, err := os.ReadFile(filepath.Join(src, "Makefile"))
	if err != nil {
		return fmt.Sprintf("the peer's Makefile could not be read (%v): it was built with %s, which may not be how it ships", err, strings.Join(append(shippedPeer.env, "go build"), " "))
	}
	if line := makefileBuild(f); line != peerMakefileBuild {
		return fmt.Sprintf("the peer's Makefile builds with %q, the benchmark as %q did: see shippedPeer in e2e/bench/build.go", line, peerMakefileBuild)
	}
	return ""
}

// makefileBuild returns the Makefile's GO_BUILD line, its spaces
// collapsed, or "" when it has none.
func makefileBuild(makefile []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(makefile))
	for sc.Scan() {
		line := strings.Join(strings.Fields(sc.Text()), " ")
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "GO_BUILD" {
			return "GO_BUILD=" + strings.TrimSpace(v)
		}
	}
	return ""
}

// goBuild runs go build with r's flags and environment, then -o out pkg,
// in dir, with extra environment added.
func goBuild(ctx context.Context, dir, out, pkg string, r recipe, env ...string) error {
	args := append(append([]string{"build"}, r.flags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), r.env...), env...)
	buf := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, buf.String())
	}
	return nil
}

// buildPeer copies the peer's source tree src into scratch (never building
// in the shared tree) and builds it to out with r. Its go.sum may lack
// entries for today's module proxy, so -mod=mod lets go build complete it
// in the copy.
func buildPeer(ctx context.Context, src, scratch, out string, r recipe) error {
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return fmt.Errorf("the peer's source is not at %s (--peer-src): %w", src, err)
	}
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	if err := os.CopyFS(scratch, os.DirFS(src)); err != nil {
		return fmt.Errorf("copying the peer's source: %w", err)
	}
	return goBuild(ctx, scratch, out, ".", r, "GOWORK=off", "GOFLAGS=-mod=mod")
}

// sizeTarget is issue 20's binary size row, for the measured build, with
// the other build's size beside it.
func (r *results) sizeTarget() target {
	mode := r.opts.build
	what := "binary size (linux/amd64, as shipped: switchboard as charts/images/Dockerfile builds it, the peer as its Makefile)"
	if mode == buildDefaults {
		what = "binary size (linux/amd64, default `go build`)"
	}
	t := target{what: what, goal: "≤ 25 MB", sb: "–", sbRatio: "–", peer: "–", vsPeer: "–"}
	sb, peer := size(r.sizes, "switchboard", mode), size(r.sizes, "peer", mode)
	t.sb, t.peer, t.vsPeer = mb(sb), mb(peer), ratio(float64(sb), float64(peer))
	if sb > 0 {
		t.sbRatio = fmt.Sprintf("%.1f MiB", float64(sb)/(1<<20))
		if other := size(r.sizes, "switchboard", otherMode(mode)); other > 0 {
			t.sbRatio += fmt.Sprintf("; built %s: %s", buildName(otherMode(mode)), mb(other))
		}
	}
	t.holds = verdict(sb <= 25e6, sb > 0)
	return t
}

// sizeLines lists every binary built, the measured build first.
func (r *results) sizeLines(p func(string, ...any)) {
	for _, s := range r.sizes {
		measured := ""
		if s.mode == r.opts.build {
			measured = ", the build measured"
		}
		p("- Binary `%s` built %s: %s (%d bytes%s).\n", s.name, buildName(s.mode), mb(s.bytes), s.bytes, measured)
	}
}

// buildName says how a --build mode builds, in a few words.
func buildName(mode string) string {
	if mode == buildDefaults {
		return "with `go build`'s defaults"
	}
	return "as shipped"
}
