package main

import (
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// A process's resident memory, by where it lives: each part of its binary
// (read from /proc/PID/pagemap, one present bit per page of the mapping)
// and the anonymous rest. A page fault on a file-backed page maps the
// neighbouring pages that are cached too (the kernel's fault-around, 64 KiB
// here), so how much of a part is resident says little about how much of
// it ran: it is what the process pays for the part being in the binary.

// binaryPart groups the sections a Go binary loads.
type binaryPart struct {
	name     string
	sections []string
}

var binaryParts = []binaryPart{
	{"code (.text)", []string{".text"}},
	{"read-only data (.rodata, type and itab links)", []string{".rodata", ".typelink", ".itablink"}},
	{"function table (.gopclntab: stack walks, tracebacks)", []string{".gopclntab"}},
	{"data and bss (written pages are anonymous)", []string{".go.buildinfo", ".go.fipsinfo", ".go.module", ".noptrdata", ".data", ".bss", ".noptrbss"}},
}

// partResident is one part: its size in the binary, the pages it spans and
// how much of them is resident, in bytes.
type partResident struct {
	name                 string
	size, span, resident int64
}

// resident is a process's resident memory by part of its binary, plus the
// status file's anonymous and file-backed totals.
type resident struct {
	parts      []partResident
	anon, file int64 // KiB
}

// readResident reads which pages of binary's loaded sections pid has
// resident, and its RssAnon and RssFile.
func readResident(pid int, binaryPath string) (resident, error) {
	f, err := elf.Open(binaryPath)
	if err != nil {
		return resident{}, err
	}
	defer f.Close()
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return resident{}, err
	}
	defer pm.Close()
	const page = 4096
	seen := map[uint64]bool{} // a page shared by two parts counts for the first
	var r resident
	for _, part := range binaryParts {
		pr := partResident{name: part.name}
		for _, name := range part.sections {
			s := f.Section(name)
			if s == nil || s.Addr == 0 || s.Flags&elf.SHF_ALLOC == 0 {
				continue
			}
			pr.size += int64(s.Size)
			first, end := s.Addr/page, (s.Addr+s.Size+page-1)/page
			pr.span += int64(end-first) * page
			entries := make([]byte, (end-first)*8)
			if _, err := pm.ReadAt(entries, int64(first*8)); err != nil {
				return resident{}, fmt.Errorf("pagemap of %s: %w", name, err)
			}
			for i := range end - first {
				v := binary.LittleEndian.Uint64(entries[i*8:])
				if v&(1<<63|1<<62) == 0 || seen[first+i] { // present or swapped
					continue
				}
				seen[first+i] = true
				pr.resident += page
			}
		}
		r.parts = append(r.parts, pr)
	}
	m, err := readMem(pid)
	if err != nil {
		return resident{}, err
	}
	r.anon, r.file = m.anon, m.file
	return r, nil
}

// initHeap is what a binary's package initialisation allocates, from
// GODEBUG=inittrace=1: in all, and by module (the five largest).
type initHeap struct {
	who   string // the binary and its command, for the report
	total int64  // bytes
	top   []moduleBytes
}

type moduleBytes struct {
	module string
	bytes  int64
}

// measureInitHeap runs argv (a command that initialises its packages and
// exits) with GODEBUG=inittrace=1 and sums what each package's
// initialisation allocated.
func measureInitHeap(ctx context.Context, argv ...string) (initHeap, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return initHeap{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return parseInitTrace(stderr.String()), nil
}

// parseInitTrace reads inittrace lines ("init PKG @T ms, C ms clock, N
// bytes, A allocs").
func parseInitTrace(out string) initHeap {
	var h initHeap
	byModule := map[string]int64{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			continue
		}
		pkg, err := url.PathUnescape(f[1]) // the runtime writes "yaml.v3" as "yaml%2ev3"
		if err != nil {
			pkg = f[1]
		}
		h.total += n
		byModule[moduleOf(pkg)] += n
	}
	for m, n := range byModule {
		h.top = append(h.top, moduleBytes{m, n})
	}
	slices.SortFunc(h.top, func(a, b moduleBytes) int {
		return cmp.Or(cmp.Compare(b.bytes, a.bytes), strings.Compare(a.module, b.module))
	})
	h.top = h.top[:min(5, len(h.top))]
	return h
}

// moduleOf names a package's module, roughly: the standard library, or the
// path's first three elements on the code hosts, its first two elsewhere.
func moduleOf(pkg string) string {
	parts := strings.Split(pkg, "/")
	if !strings.Contains(parts[0], ".") {
		if parts[0] == "main" {
			return "main"
		}
		return "the standard library"
	}
	n := 2
	if parts[0] == "github.com" || parts[0] == "golang.org" {
		n = 3
	}
	return strings.Join(parts[:min(n, len(parts))], "/")
}

// memoryMadeOf renders what switchboard's and the peer's resident memory
// is made of after the load, and what their package initialisation
// allocates.
func (r *results) memoryMadeOf(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	sb, peer := r.resident[idSBStdio], r.resident[idPeerStdio]
	if len(sb.parts) == 0 && r.initHeap[idSBStdio].total == 0 {
		return
	}
	p("### What the resident memory is made of\n\n")
	if len(sb.parts) > 0 {
		p("After the load, switchboard → server-everything and the peer → server-everything, each read at once after a burst of %d calls at c = %d (switchboard releases its binary's pages once idle): the pages of each part of the binary that are resident (from /proc/PID/pagemap), then the status file's totals.\n\n", madeOfCalls, madeOfConc)
		p("| part | switchboard: size | resident | the peer: size | resident |\n|---|---:|---:|---:|---:|\n")
		for i, part := range sb.parts {
			var pp partResident
			if i < len(peer.parts) {
				pp = peer.parts[i]
			}
			p("| %s | %s | %s | %s | %s |\n", part.name, mibBytes(part.size), share(part.resident, part.span), mibBytes(pp.size), share(pp.resident, pp.span))
		}
		p("| file-backed in all (RssFile) | | %s | | %s |\n", mib(sb.file), mib(peer.file))
		p("| anonymous in all (RssAnon: heap, stacks, written data) | | %s | | %s |\n", mib(sb.anon), mib(peer.anon))
		sbPeak, peerPeak := r.peak[idSBStdio].hwm, r.peak[idPeerStdio].hwm
		p("| the peak (VmHWM) less what is file-backed: about the anonymous memory at the peak | | %s | | %s |\n\n", mib(sbPeak-sb.file), mib(peerPeak-peer.file))
		p("A fault on a page of the binary maps the cached pages around it too (the kernel's fault-around, 64 KiB), so a part is resident nearly whole once code from most of it has run: the file-backed RSS follows the binary's size more than the code a call runs.\n\n")
	}
	for _, id := range []string{idSBStdio, idPeerStdio} {
		h := r.initHeap[id]
		if h.total == 0 {
			continue
		}
		var top []string
		for _, m := range h.top {
			top = append(top, fmt.Sprintf("%s %s", m.module, kbOrMB(m.bytes)))
		}
		p("- Package initialisation of %s allocates %s of heap (GODEBUG=inittrace=1); the most: %s.\n", h.who, kbOrMB(h.total), strings.Join(top, ", "))
	}
	p("\n")
}

func mibBytes(n int64) string { return mib(n / 1024) }

// kbOrMB formats bytes in MB, or in kB below 100 kB.
func kbOrMB(n int64) string {
	if n < 100_000 {
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	return mb(n)
}

// share formats part as MiB and as a percentage of whole.
func share(part, whole int64) string {
	if whole <= 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%.0f %%)", mibBytes(part), 100*float64(part)/float64(whole))
}

// The burst of calls made just before the resident pages are read.
const (
	madeOfConc  = 8
	madeOfCalls = 1000
)

// measureMadeOf reads, after the load, where switchboard's and the peer's
// resident memory is (each → server-everything), and what their package
// initialisation allocates. What cannot be read is left out of the report,
// with a note.
func (r *results) measureMadeOf(ctx context.Context, e *env) {
	for _, b := range []struct {
		id, who string
		argv    []string // initialises the binary's packages and exits
	}{
		{idSBStdio, "switchboard (`switchboard version`)", []string{e.switchboard, "version"}},
		{idPeerStdio, "the peer (`mcp-proxy --version`)", []string{e.peer, "--version"}},
	} {
		if b.argv[0] == "" {
			continue
		}
		if sc := r.scenario(b.id); sc != nil {
			// switchboard drops its binary's pages from its resident set
			// once it goes idle after a burst (proxy/internal/gctune): a
			// burst just before the read shows, for both, what a process
			// making calls holds.
			if _, err := runLoad(ctx, e, sc, madeOfConc, madeOfCalls); err != nil {
				r.notes = append(r.notes, fmt.Sprintf("the burst before reading the resident pages of %s: %v", sc.name, err))
			}
			res, err := readResident(sc.pid, b.argv[0])
			if err != nil {
				r.notes = append(r.notes, fmt.Sprintf("resident pages of %s not read: %v", sc.name, err))
			} else {
				r.resident[b.id] = res
			}
		}
		h, err := measureInitHeap(ctx, b.argv...)
		if err != nil {
			r.notes = append(r.notes, fmt.Sprintf("package initialisation not measured: %v", err))
			continue
		}
		h.who = b.who
		r.initHeap[b.id] = h
	}
}
