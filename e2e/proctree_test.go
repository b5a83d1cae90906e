package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// descendants lists the live processes below root, by walking the parent
// links of /proc.
func descendants(root int) []procInfo {
	kids := map[int][]procInfo{}
	for _, p := range allProcs() {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	var out []procInfo
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if k.state != 'Z' {
				out = append(out, k)
			}
			queue = append(queue, k.pid)
		}
	}
	return out
}

// memKB reads a field (Pss, Private_Dirty, …) of /proc/<pid>/smaps_rollup.
func memKB(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return -1
}

// TestProcTreeDiesWithKilledSwitchboard: `kill -9` of switchboard takes every
// process it started with it, however deep, within 2 s: a plain server, one
// behind `sh -c 'sleep 1000 & exec server'`, two that ignore SIGTERM and
// stdin EOF (one with stderr on /dev/null, so that no SIGPIPE ends it
// either), one whose grandchild left with setsid, an npx server, and one
// behind a shell script that does not exec. See #17, item 7.
func TestProcTreeDiesWithKilledSwitchboard(t *testing.T) {
	mark := newMark(t)
	npm := npmDir(t) // skips like the other npm tests when not installed
	dir := t.TempDir()
	gcFile := filepath.Join(dir, "grandchild")
	wrapper := filepath.Join(dir, "wrapper.sh")
	script := fmt.Sprintf("#!/bin/sh\n# A wrapper that stays the parent, with a worker of its own.\nsleep 1000 &\n%q --name wrapped\n", fixture)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GORACE": "atexit_sleep_ms=0", markEnv: mark}
	servers := map[string]any{
		"plain":  markedServer("plain", mark),
		"shexec": map[string]any{"command": "sh", "args": []string{"-c", "sleep 1000 & exec " + fixture + " --name shexec"}, "env": env},
		"noterm": markedServer("noterm", mark, "--ignore-sigterm"),
		// Its log line at stdin EOF cannot kill it with SIGPIPE.
		"quiet":    map[string]any{"command": "sh", "args": []string{"-c", "exec " + fixture + " --name quiet --ignore-sigterm 2>/dev/null"}, "env": env},
		"detached": markedServer("detached", mark, "--spawn-grandchild", gcFile, "--grandchild-setsid"),
		"npx":      map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-everything"}, "env": map[string]string{markEnv: mark}, "timeout": 60000},
		"wrapped":  map[string]any{"command": wrapper, "env": env},
	}
	s := startSwitchboardIn(t, dir, npm, map[string]any{"mcpServers": servers}, npmEnv(t))
	for name := range servers {
		s.waitServer(t, name, 60*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	}
	gc := readPIDFile(t, gcFile)
	if p, ok := readProc(gc); !ok || p.pgid != gc {
		t.Fatalf("grandchild %d did not leave its parent's group: %+v", gc, p)
	}

	tree := descendants(s.pid())
	var shims, shimPss, shimPrivate int
	for _, p := range tree {
		if isShim(p.pid) {
			shims++
			shimPss += memKB(p.pid, "Pss")
			shimPrivate += memKB(p.pid, "Private_Dirty") + memKB(p.pid, "Private_Clean")
		}
	}
	if shims > 0 {
		t.Logf("%d shims: %d KiB PSS, %d KiB private each on average", shims, shimPss/shims, shimPrivate/shims)
	}
	if len(tree) < len(servers)+4 { // at least the servers and four grandchildren
		t.Fatalf("only %d processes below switchboard for %d servers: %v", len(tree), len(servers), tree)
	}
	if !containsPID(tree, gc) {
		t.Fatalf("grandchild %d is not below switchboard", gc)
	}

	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t, 5*time.Second)
	var left []procInfo
	for {
		left = left[:0]
		for _, p := range tree {
			if pidAlive(p.pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Since(start) > 2*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("kill -9 of switchboard with %d servers: %d of %d processes left after %s", len(servers), len(left), len(tree), time.Since(start).Round(time.Millisecond))
	if len(left) > 0 {
		sort.Slice(left, func(i, j int) bool { return left[i].pid < left[j].pid })
		t.Errorf("processes alive 2 s after kill -9 of switchboard: %+v", left)
		for _, p := range left {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

func containsPID(ps []procInfo, pid int) bool {
	for _, p := range ps {
		if p.pid == pid {
			return true
		}
	}
	return false
}
