package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// perfResult is one process profiled under load.
type perfResult struct {
	name    string // scenario name
	file    string // perf.data
	calls   int
	conc    int        // calls in flight while recording
	cpu     float64    // µs per call while recording
	top     string     // perf report's top self-time entries
	rows    []rowShare // the samples by what their work is for (perfrows.go)
	rowsErr string     // why there are none
	err     string
}

// recordProfiles runs `perf record -g -p PID` on switchboard → server-
// everything, on the peer in front of the same upstream, on the two
// switchboards of the stateless comparison, and on switchboard and the
// peer in front of the HTTP echo, each while o.perfCalls calls are made at
// c = o.perfConc, after every measurement, so the profiler's own cost is
// in no table. Switchboard's profile goes to o.perf, the others' to o.perf +
// ".peer", ".2026", ".2025", ".http" and ".peer-http".
func recordProfiles(ctx context.Context, e *env, scenarios []*scenario, o *options) ([]perfResult, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return []perfResult{{name: "perf", err: "perf is not installed; no profile recorded"}}, nil
	}
	var out []perfResult
	suffix := map[string]string{idSBStdio: "", idPeerStdio: ".peer", idStateless: ".2026", idLegacy: ".2025", idSBHTTP: ".http", idPeerHTTP: ".peer-http"}
	for _, id := range []string{idSBStdio, idPeerStdio, idStateless, idLegacy, idSBHTTP, idPeerHTTP} {
		sc := scenarioByID(scenarios, id)
		if sc == nil {
			continue
		}
		file := o.perf + suffix[id]
		progress("perf record on %s, %d calls at c = %d", sc.name, o.perfCalls, o.perfConc)
		pr := profileOne(ctx, e, sc, file, o.perfCalls, o.perfConc)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, pr)
	}
	if len(out) == 0 {
		out = append(out, perfResult{name: "perf", err: "no server-everything scenario ran; nothing profiled"})
	}
	return out, nil
}

// scenarioByID is the scenario of scenarios with that id; nil if none ran.
func scenarioByID(scenarios []*scenario, id string) *scenario {
	for _, s := range scenarios {
		if s.id == id {
			return s
		}
	}
	return nil
}

func profileOne(ctx context.Context, e *env, sc *scenario, file string, calls, conc int) perfResult {
	pr := perfResult{name: sc.name, file: file, conc: conc}
	rec := exec.Command("perf", "record", "-g", "-q", "-o", file, "-p", fmt.Sprint(sc.pid))
	rec.SysProcAttr = childAttr()
	out := &tailBuffer{max: 8 << 10}
	rec.Stdout, rec.Stderr = out, out
	if err := rec.Start(); err != nil {
		pr.err = fmt.Sprintf("perf record: %v", err)
		return pr
	}
	done := make(chan error, 1)
	go func() { done <- rec.Wait() }()
	stop := func() error {
		_ = syscall.Kill(rec.Process.Pid, syscall.SIGINT)
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(rec.Process.Pid, syscall.SIGKILL)
			return <-done
		}
	}
	// Let perf attach before the calls start.
	time.Sleep(500 * time.Millisecond)
	run, err := runLoad(ctx, e, sc, conc, calls)
	stopErr := stop()
	if err != nil {
		pr.err = fmt.Sprintf("load: %v", err)
		return pr
	}
	if st, serr := os.Stat(file); serr != nil || st.Size() == 0 {
		pr.err = fmt.Sprintf("perf record wrote nothing (%v): %s", stopErr, strings.TrimSpace(out.String()))
		return pr
	}
	pr.calls, pr.cpu = run.calls, run.cpuPerCall()
	rep := exec.CommandContext(ctx, "perf", "report", "-i", file, "--no-children", "--sort", "dso,symbol",
		"-g", "none", "--stdio", "-q", "--percent-limit", "1")
	b, err := rep.Output()
	if err != nil {
		pr.err = fmt.Sprintf("perf report: %v", err)
		return pr
	}
	// Keep the entry lines, not the call graphs under them.
	var top []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasSuffix(f[0], "%") {
			continue
		}
		for len(f) > 1 && f[len(f)-1] == "-" {
			f = f[:len(f)-1]
		}
		top = append(top, strings.Join(f, " "))
	}
	pr.top = strings.Join(top, "\n")
	if pr.rows, err = profileRows(ctx, file, rowsFor(sc.id)); err != nil {
		pr.rowsErr = err.Error()
	}
	return pr
}
