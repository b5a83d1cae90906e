package testutil

import (
	"strings"
	"sync"
)

// Lines records what is written to it, line by line: a log or an audit
// trail a test reads back. Safe for concurrent use.
type Lines struct {
	mu    sync.Mutex
	lines []string
}

func (l *Lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
		l.lines = append(l.lines, line)
	}
	return len(b), nil
}

// String is every line, each ended by a newline.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return strings.Join(l.lines, "\n") + "\n"
}

// Matching returns the lines that contain every one of subs.
func (l *Lines) Matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}
