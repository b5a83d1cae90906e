package gctune

import (
	"strings"
	"testing"
)

// smapsSample is a Go binary's blocks as Linux writes them, trimmed to the
// fields parseSmaps reads and a few it skips, with a heap block between.
const smapsSample = `00400000-00ebf000 r-xp 00000000 fd:01 1234567                            /usr/local/bin/switchboard
Size:              10996 kB
Rss:                9876 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me 
00ebf000-01a94000 r--p 00abf000 fd:01 1234567                            /usr/local/bin/switchboard
Size:              12116 kB
Rss:                8000 kB
Anonymous:             0 kB
01a94000-01b2a000 rw-p 01694000 fd:01 1234567                            /usr/local/bin/switchboard
Rss:                 300 kB
Anonymous:           120 kB
01b2a000-01b60000 rw-p 00000000 00:00 0 
Rss:                  64 kB
Anonymous:            64 kB
c000000000-c000400000 rw-p 00000000 00:00 0 
Rss:                4096 kB
Anonymous:          4096 kB
7f0000000000-7f0000001000 r--p 00000000 fd:01 999                        /usr/lib/with space/lib.so
Rss:                   4 kB
Anonymous:             0 kB
`

func TestParseSmaps(t *testing.T) {
	maps := parseSmaps([]byte(smapsSample))
	if len(maps) != 6 {
		t.Fatalf("parsed %d blocks, want 6: %+v", len(maps), maps)
	}
	text := maps[0]
	if text.start != 0x400000 || text.end != 0xebf000 || text.perms != "r-xp" || text.dev != "fd:01" || text.inode != 1234567 ||
		text.rss != 9876<<10 || !text.hasAnon || text.anon != 0 {
		t.Errorf("text block = %+v", text)
	}
	if m := maps[2]; m.anon != 120<<10 || m.perms != "rw-p" {
		t.Errorf("data block = %+v", m)
	}
	if m := maps[5]; m.inode != 999 || m.rss != 4<<10 {
		t.Errorf("library block = %+v", m)
	}
}

// TestBinaryPages: only the executable's unwritable, private mappings with
// no page of the process's own are released.
func TestBinaryPages(t *testing.T) {
	maps := parseSmaps([]byte(smapsSample))
	got := binaryPages(maps, 0x500000)
	if len(got) != 2 || got[0].perms != "r-xp" || got[1].perms != "r--p" {
		t.Fatalf("binaryPages = %+v, want the text and read-only data blocks", got)
	}
	for _, pc := range []uint64{0x3fffff, 0xc000000010, 0x1b2a000} {
		if got := binaryPages(maps, pc); got != nil {
			t.Errorf("binaryPages(pc %#x) = %+v, want none: the pc is in no file's mapping", pc, got)
		}
	}

	// A read-only block with a copied page (a breakpoint, or relocations
	// applied before it was made read-only) is left alone, and so is one
	// whose Anonymous field is missing.
	written := strings.Replace(smapsSample, "Rss:                9876 kB\nAnonymous:             0 kB", "Rss:                9876 kB\nAnonymous:             4 kB", 1)
	if got := binaryPages(parseSmaps([]byte(written)), 0x500000); len(got) != 1 || got[0].perms != "r--p" {
		t.Errorf("with a copied page in the text: %+v, want only the read-only data", got)
	}
	unknown := strings.Replace(smapsSample, "Rss:                8000 kB\nAnonymous:             0 kB", "Rss:                8000 kB", 1)
	if got := binaryPages(parseSmaps([]byte(unknown)), 0x500000); len(got) != 1 || got[0].perms != "r-xp" {
		t.Errorf("with no Anonymous field: %+v, want only the text", got)
	}
	// A shared mapping of the file is the file's own: never released.
	shared := strings.Replace(smapsSample, "00ebf000-01a94000 r--p", "00ebf000-01a94000 r--s", 1)
	if got := binaryPages(parseSmaps([]byte(shared)), 0x500000); len(got) != 1 {
		t.Errorf("with a shared mapping: %+v, want only the text", got)
	}
}

// TestParseSmapsBadHeader: a header that does not parse drops its block,
// and its fields are not read into the block before it.
func TestParseSmapsBadHeader(t *testing.T) {
	bad := strings.Replace(smapsSample, "00ebf000-01a94000 r--p 00abf000", "00ebf000-01a94000 r--p zzz", 1)
	maps := parseSmaps([]byte(bad))
	if len(maps) != 5 {
		t.Fatalf("parsed %d blocks, want 5", len(maps))
	}
	if maps[0].rss != 9876<<10 || maps[1].start != 0x1a94000 {
		t.Errorf("blocks = %+v", maps[:2])
	}
}

func FuzzParseSmaps(f *testing.F) {
	f.Add([]byte(smapsSample), uint64(0x500000))
	f.Add([]byte("0-1 r-xp 0 0:0 1\nRss: 4 kB\nAnonymous: 0 kB\n"), uint64(0))
	f.Add([]byte("ffffffffffffffff-0 r--p 0 a:b 18446744073709551615 x\nRss: 9007199254740993 kB\n"), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		maps := parseSmaps(data)
		for _, m := range maps {
			if len(m.perms) != 4 || !strings.Contains(m.dev, ":") {
				t.Fatalf("parsed a block from a bad header: %+v", m)
			}
		}
		var exe *mapping
		for i := range maps {
			if maps[i].start <= pc && pc < maps[i].end {
				exe = &maps[i]
				break
			}
		}
		for _, m := range binaryPages(maps, pc) {
			if exe == nil || m.inode != exe.inode || m.dev != exe.dev || m.inode == 0 {
				t.Fatalf("released %+v, not of the file mapped at %#x", m, pc)
			}
			if m.end <= m.start || m.perms[1] == 'w' || m.perms[3] != 'p' || !m.hasAnon || m.anon != 0 || m.rss == 0 {
				t.Fatalf("released %+v: writable, shared, empty or holding pages of its own", m)
			}
		}
	})
}
