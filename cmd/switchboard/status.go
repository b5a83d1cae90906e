package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/instance"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// cmdStatus prints a running proxy's /status as a table an operator can read
// at a glance, or as JSON. It says which proxy answers and how it was
// picked (target), and refuses to show another proxy than the one --config
// names.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var addr, cfgPath string
	var asJSON bool
	fs := newFlags("status", "status [--admin ADDR | --config FILE] [--json]", stderr)
	fs.StringVar(&addr, "admin", "", "admin address of the running switchboard (default: the one registered for --config, else $SWITCHBOARD_ADMIN_LISTEN, else the only one running, else "+config.DefaultAdminListen+")")
	fs.StringVar(&cfgPath, "config", "", "report on the switchboard that serves this config file")
	fs.BoolVar(&asJSON, "json", false, "print the raw JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfgPath = absPath(cfgPath)
	tg, base, err := findAdmin(addr, cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard status:", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status", nil)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard status:", err)
		return exitConfig
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "switchboard status: no switchboard answers at %s (%s): %v\n", tg.addr, tg.source, err)
		return exitError
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "switchboard status: %s %v\n", resp.Status, err)
		return exitError
	}
	var rep proxy.StatusReport
	if err := json.Unmarshal(body, &rep); err != nil {
		fmt.Fprintln(stderr, "switchboard status: unreadable answer:", err)
		return exitError
	}
	if cfgPath != "" && rep.Config != "" && rep.Config != cfgPath {
		fmt.Fprintf(stderr, "switchboard status: the switchboard at %s (%s, pid %d) serves %s, not %s\n", tg.addr, tg.source, rep.PID, rep.Config, cfgPath)
		return exitError
	}
	if asJSON {
		_, _ = stdout.Write(body)
		return exitOK
	}
	printTarget(stdout, tg, rep)
	printStatus(stdout, rep)
	// Metrics highlights: calls, errors and latency per server.
	if stats, err := fetchCallStats(ctx, base); err != nil {
		fmt.Fprintln(stderr, "switchboard status: no metrics:", err)
	} else {
		printCallStats(stdout, stats)
	}
	return exitOK
}

// absPath makes a --config path absolute, as instances register theirs.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// findAdmin picks the running switchboard to ask (see pickTarget) and
// returns it with the base URL of its admin endpoints.
func findAdmin(addr, cfgPath string) (target, string, error) {
	var running []instance.Record
	if dir, err := instance.Dir(os.Getenv); err == nil {
		running, _ = instance.List(dir)
	}
	tg, err := pickTarget(addr, cfgPath, os.Getenv("SWITCHBOARD_ADMIN_LISTEN"), running)
	if err != nil {
		return tg, "", err
	}
	base := "http://" + dialAddr(tg.addr)
	if strings.Contains(tg.addr, "://") {
		base = strings.TrimRight(tg.addr, "/")
	}
	return tg, base, nil
}

// target is the admin address status asks, how it was chosen, and notes
// on the alternatives it did not take.
type target struct {
	addr, source string
	notes        []string
}

// pickTarget chooses the admin address to ask: --admin; else the running
// switchboard registered for cfg (absolute; "" for none);
// else $SWITCHBOARD_ADMIN_LISTEN (what serve reads too); else the only
// switchboard registered; else the default address. Several candidates
// are an error that lists them: status never picks one silently, and
// notes name the switchboards and settings it did not use (issue 18).
func pickTarget(flagAddr, cfg, envAddr string, running []instance.Record) (target, error) {
	others := func(addr string) []string {
		var notes []string
		for _, r := range running {
			if dialAddr(r.Admin) != dialAddr(addr) {
				notes = append(notes, "also running: "+describe(r))
			}
		}
		return notes
	}
	envUnused := func(addr, why string) []string {
		if envAddr == "" || envAddr == addr {
			return nil
		}
		return []string{"SWITCHBOARD_ADMIN_LISTEN=" + envAddr + " not used: " + why}
	}
	if flagAddr != "" {
		return target{addr: flagAddr, source: "from --admin", notes: envUnused(flagAddr, "--admin wins")}, nil
	}
	var match []instance.Record
	for _, r := range running {
		if cfg == "" || r.Config == cfg {
			match = append(match, r)
		}
	}
	several := func(what string) error {
		var b strings.Builder
		fmt.Fprintf(&b, "%d %s; pick one with --admin ADDR or --config FILE:", len(match), what)
		for _, r := range match {
			b.WriteString("\n  " + describe(r))
		}
		return errors.New(b.String())
	}
	if cfg != "" {
		switch {
		case len(match) == 1:
			a := match[0].Admin
			notes := append(envUnused(a, "a switchboard is registered for --config"), others(a)...)
			return target{addr: a, source: "registered for --config", notes: notes}, nil
		case len(match) > 1:
			return target{}, several("switchboards serve " + cfg)
		}
	}
	if envAddr != "" {
		t := target{addr: envAddr, source: "from SWITCHBOARD_ADMIN_LISTEN", notes: others(envAddr)}
		if cfg != "" {
			t.notes = append(t.notes, "no running switchboard registered for "+cfg)
		}
		return t, nil
	}
	if cfg == "" {
		switch {
		case len(match) == 1:
			return target{addr: match[0].Admin, source: "the only switchboard running"}, nil
		case len(match) > 1:
			return target{}, several("switchboards are running")
		}
	}
	t := target{addr: config.DefaultAdminListen, source: "the default address", notes: others(config.DefaultAdminListen)}
	if cfg != "" {
		t.notes = append(t.notes, "no running switchboard registered for "+cfg)
	}
	return t, nil
}

// describe names a registered switchboard for a person choosing one.
func describe(r instance.Record) string {
	cfg := r.Config
	if cfg == "" {
		cfg = "embedded demo"
	}
	return fmt.Sprintf("pid %d  admin %s  mcp %s  config %s", r.PID, r.Admin, r.Listen, cfg)
}

// dialAddr is addr with an unspecified host (0.0.0.0, ::, none) replaced
// by loopback, which reaches a listener bound to all interfaces.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ip != nil && ip.To4() == nil {
			return net.JoinHostPort("::1", port)
		}
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// printTarget is the header: which switchboard answered, found how, and
// which config it serves.
func printTarget(w io.Writer, tg target, rep proxy.StatusReport) {
	fmt.Fprintf(w, "switchboard %s  pid %d  admin %s (%s)\n", rep.Version, rep.PID, tg.addr, tg.source)
	cfg := rep.Config
	if cfg == "" {
		cfg = "(not reported)"
	}
	fmt.Fprintf(w, "config %s  mcp %s\n", cfg, orDash(rep.Listen))
	for _, n := range tg.notes {
		fmt.Fprintln(w, "note: "+n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printStatus(w io.Writer, rep proxy.StatusReport) {
	fmt.Fprintf(w, "config gen %d (digest %s)  goroutines %d\n", rep.Gen, rep.Digest, rep.Goroutines)
	if rep.Replica != "" {
		fmt.Fprintf(w, "replica %s  sessions resumed %d\n", rep.Replica, rep.SessionsResumed)
	}
	if lr := rep.LastReload; lr != nil {
		result := "ok"
		switch {
		case !lr.OK:
			result = "rejected: " + oneLine(lr.Error, 80)
		case lr.Noop:
			result = "unchanged"
		}
		fmt.Fprintf(w, "last reload %s (%s): %s\n", lr.At.Format(time.RFC3339), lr.Reason, result)
	}
	if a := rep.Audit; a != nil && a.Failing {
		fmt.Fprintf(w, "audit log %s: writes failing since %s (%d records lost, onError %s): %s\n",
			a.File, a.FailingSince.Format(time.RFC3339), a.WriteFailures, a.OnError, oneLine(a.LastError, 80))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tBREAKER\tTOOLS\tPID\tRESTARTS\tUPTIME\tLAST ERROR")
	now := rep.Time
	for _, s := range rep.Servers {
		state := string(s.State)
		if s.State == "idle" && s.Lazy {
			state = "idle (lazy)"
		}
		if !s.NextAttempt.IsZero() && s.NextAttempt.After(now) {
			state += fmt.Sprintf(" (retry in %s)", s.NextAttempt.Sub(now).Round(time.Second))
		}
		breaker := s.Breaker
		if !s.BreakerProbe.IsZero() && s.BreakerProbe.After(now) {
			breaker += fmt.Sprintf(" (probe in %s)", s.BreakerProbe.Sub(now).Round(time.Second))
		}
		uptime := "-"
		if s.State == "ready" {
			uptime = (time.Duration(s.Uptime * float64(time.Second))).Round(time.Second).String()
		}
		pid := "-"
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		if s.Instances != nil {
			pid += fmt.Sprintf(" (+%d per-client)", *s.Instances)
		}
		lastErr := oneLine(s.LastError, 60)
		if lastErr == "" {
			lastErr = "-"
		}
		if s.Catalog == upstream.CatalogPartial {
			state += " (catalog partial)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", s.Name, s.Transport, state, breaker, s.Tools, pid, s.Restarts, uptime, lastErr)
	}
	tw.Flush()
	// A partial catalog: the lists that failed, the upstream's message and
	// when they are asked for again. See #23.
	for _, s := range rep.Servers {
		for _, m := range slices.Sorted(maps.Keys(s.CatalogErrors)) {
			retry := ""
			if !s.CatalogRetry.IsZero() && s.CatalogRetry.After(now) {
				retry = fmt.Sprintf(" (retry in %s)", s.CatalogRetry.Sub(now).Round(time.Second))
			}
			fmt.Fprintf(w, "%s: %s failed: %s%s\n", s.Name, m, oneLine(s.CatalogErrors[m], 100), retry)
		}
	}
	for _, s := range rep.Servers {
		if s.StrayAnswers > 0 {
			fmt.Fprintf(w, "%s: %d answers to no call in flight dropped (IDs never sent, or second answers)\n", s.Name, s.StrayAnswers)
		}
	}
	if c := rep.Connections; c != nil && c.Open >= c.Max {
		fmt.Fprintf(w, "downstream connections at the cap: %d of %d open, new ones wait (raise the descriptor limit)\n", c.Open, c.Max)
	}
	// What a failed or restarting server said last: the cause the last error
	// only summarises ("process exited before initialize finished").
	for _, s := range rep.Servers {
		if (s.State != upstream.StateFailed && s.State != upstream.StateRestarting) || len(s.StderrTail) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s stderr (last %d lines):\n", s.Name, len(s.StderrTail))
		for _, l := range s.StderrTail {
			fmt.Fprintln(w, "  "+l)
		}
	}
	printNotes(w, rep)
	for _, id := range slices.Sorted(maps.Keys(rep.Views)) {
		v := rep.Views[id]
		fmt.Fprintf(w, "\nview %s: %d tools, %d sessions", id, v.Tools, v.Sessions)
	}
	fmt.Fprintln(w)
}

// maxNoteLines bounds the collisions and findings printed; /status has
// them all.
const maxNoteLines = 10

// printNotes prints the names several servers want and the definitions
// the trust boundary flagged or skipped.
func printNotes(w io.Writer, rep proxy.StatusReport) {
	if len(rep.Collisions)+len(rep.Findings) == 0 {
		return
	}
	fmt.Fprintln(w)
	for i, c := range rep.Collisions {
		if i == maxNoteLines {
			fmt.Fprintf(w, "… %d more collisions (see /status)\n", len(rep.Collisions)-i)
			break
		}
		others := make([]string, 0, min(len(c.Losers), 3)+1)
		for j, l := range c.Losers {
			if j == 3 {
				others = append(others, fmt.Sprintf("%d more", len(c.Losers)-j))
				break
			}
			others = append(others, l.Server)
		}
		fmt.Fprintf(w, "collision: %s %s is %s's; also listed by %s\n", c.Kind, c.Name, c.Winner, strings.Join(others, ", "))
	}
	for i, f := range rep.Findings {
		if i == maxNoteLines {
			fmt.Fprintf(w, "… %d more findings (see /status)\n", len(rep.Findings)-i)
			break
		}
		what := "suspicious (" + strings.Join(f.Patterns, ", ") + ")"
		switch {
		case f.Skipped != "":
			what = "skipped: " + oneLine(f.Skipped, 80)
		case f.Blocked:
			what += ", withheld"
		}
		fmt.Fprintf(w, "%s: %s %s %s\n", f.Server, f.Kind, f.Name, what)
	}
}
