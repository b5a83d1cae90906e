package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// cmdStatus prints a running proxy's /status as a table an operator can read
// at a glance, or as JSON.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var addr string
	var asJSON bool
	fs := newFlags("status", "status [--admin ADDR] [--json]", stderr)
	fs.StringVar(&addr, "admin", config.DefaultAdminListen, "admin address of the running switchboard")
	fs.BoolVar(&asJSON, "json", false, "print the raw JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(addr, "/")+"/status", nil)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard status:", err)
		return exitConfig
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard status: is switchboard running? ", err)
		return exitError
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "switchboard status: %s %v\n", resp.Status, err)
		return exitError
	}
	if asJSON {
		_, _ = stdout.Write(body)
		return exitOK
	}
	var rep proxy.StatusReport
	if err := json.Unmarshal(body, &rep); err != nil {
		fmt.Fprintln(stderr, "switchboard status: unreadable answer:", err)
		return exitError
	}
	printStatus(stdout, rep)
	// Metrics highlights: calls, errors and latency per server.
	if stats, err := fetchCallStats(ctx, strings.TrimRight(addr, "/")); err != nil {
		fmt.Fprintln(stderr, "switchboard status: no metrics:", err)
	} else {
		printCallStats(stdout, stats)
	}
	return exitOK
}

func printStatus(w io.Writer, rep proxy.StatusReport) {
	fmt.Fprintf(w, "switchboard %s  config gen %d (digest %s)  goroutines %d\n", rep.Version, rep.Gen, rep.Digest, rep.Goroutines)
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
	for _, id := range slices.Sorted(maps.Keys(rep.Views)) {
		v := rep.Views[id]
		fmt.Fprintf(w, "\nview %s: %d tools, %d sessions", id, v.Tools, v.Sessions)
	}
	fmt.Fprintln(w)
}
