package gctune

import (
	"strconv"
	"strings"
)

// A mapping is one block of /proc/self/smaps: an address range, how it is
// mapped, and how much of it is resident.
type mapping struct {
	start, end uint64
	perms      string // "r-xp": read, write, execute, private or shared
	dev        string // the file's device, "fd:01"
	inode      uint64 // 0 for anonymous memory
	rss        uint64 // bytes resident
	anon       uint64 // bytes resident that are the process's own copies
	hasAnon    bool   // an Anonymous line was read (absent: unknown, not zero)
}

// contains reports whether addr is in m.
func (m mapping) contains(addr uint64) bool { return m.start <= addr && addr < m.end }

// sameFile reports whether m and o map the same file.
func (m mapping) sameFile(o mapping) bool {
	return m.inode != 0 && m.inode == o.inode && m.dev == o.dev
}

// releasable reports whether dropping m's resident pages loses nothing: a
// private mapping that cannot be written and holds no page of the
// process's own (a copy made by a write before it was made read-only, or
// by a debugger's breakpoint), so every page it has is the file's and
// comes back from the page cache when touched.
func (m mapping) releasable() bool {
	return len(m.perms) == 4 && m.perms[1] == '-' && m.perms[3] == 'p' &&
		m.hasAnon && m.anon == 0 && m.rss > 0 && m.end > m.start
}

// parseSmaps reads the blocks of /proc/PID/smaps. A line it does not know
// is skipped; a block whose header does not parse is left out, with the
// lines that follow it up to the next header.
func parseSmaps(data []byte) []mapping {
	var out []mapping
	var cur *mapping // the last of out, while its fields are read
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if m, ok := parseSmapsHeader(line); ok {
			out = append(out, m)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if isRangeField(line) {
			cur = nil // a header that did not parse: skip its block
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "Rss":
			if v, ok := parseKB(value); ok {
				cur.rss = v
			}
		case "Anonymous":
			if v, ok := parseKB(value); ok {
				cur.anon, cur.hasAnon = v, true
			}
		}
	}
	return out
}

// parseSmapsHeader parses a block's first line:
// "start-end perms offset dev inode [path]".
func parseSmapsHeader(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	_, err3 := strconv.ParseUint(f[2], 16, 64)
	inode, err4 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(f[1]) != 4 || !strings.Contains(f[3], ":") {
		return mapping{}, false
	}
	return mapping{start: start, end: end, perms: f[1], dev: f[3], inode: inode}, true
}

// isRangeField reports whether line starts like a block's header (an
// address range), so that a header which did not parse is not read as a
// field of the block before it.
func isRangeField(line string) bool {
	first, _, _ := strings.Cut(line, " ")
	lo, hi, ok := strings.Cut(first, "-")
	return ok && lo != "" && hi != "" && isHex(lo) && isHex(hi)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseKB reads a field's value, "  1234 kB", in bytes.
func parseKB(value string) (uint64, bool) {
	num, unit, _ := strings.Cut(strings.TrimSpace(value), " ")
	if unit != "kB" {
		return 0, false
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || v > 1<<53 {
		return 0, false
	}
	return v << 10, true
}

// binaryPages returns the mappings of the executable whose pages can be
// released: those of the file mapped at pc (an address of this program's
// code) that releasable allows.
func binaryPages(maps []mapping, pc uint64) []mapping {
	var exe *mapping
	for i := range maps {
		if maps[i].contains(pc) {
			exe = &maps[i]
			break
		}
	}
	if exe == nil || exe.inode == 0 {
		return nil
	}
	var out []mapping
	for _, m := range maps {
		if m.sameFile(*exe) && m.releasable() {
			out = append(out, m)
		}
	}
	return out
}
