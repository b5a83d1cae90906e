package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
)

// perfRow is one row of a profile's breakdown: the samples whose stack
// holds a frame that re matches, and that no row before it took.
type perfRow struct {
	name string
	re   *regexp.Regexp
}

// rowShare is a row's share of a profile's samples.
type rowShare struct {
	name  string
	share float64 // of all samples, 0–1
}

// sbRows and peerRows break a profile down by what the work is for: the
// rows for a call's own work first, so that allocation and the kernel
// are counted in the work that caused them; the runtime's rows last, for
// work that belongs to no call.
var (
	sbRows = []perfRow{
		{"switchboard's checks: the argument decode and re-encode, the JSON Schema check, the trust boundary, telemetry and audit",
			regexp.MustCompile(`switchboard/proxy/dispatch\.(decodeArgs|decodeValid|objectTokens|valueTokens|appendArgs|forValidation|decodeStream)|jsonschema-go/|switchboard/sanitize\.|switchboard/proxy/telemetry\.|switchboard/proxy/dispatch\.\(\*AuditLog\)|go\.opentelemetry\.io/`)},
		{"the upstream call", regexp.MustCompile(`switchboard/upstream\.`)},
		{"writing the answer", regexp.MustCompile(`streamhttp\.\(\*stream\)\.Write|httpio\.\(\*Hold\)\.WriteFlush`)},
		{"reading and decoding the request", regexp.MustCompile(`switchboard/proxy/internal/httpio\.Read|streamhttp\.check\b`)},
		{"the handler: session, dispatch and HTTP bookkeeping", regexp.MustCompile(`github\.com/mcp-switchboard/switchboard/`)},
	}
	peerRows = []perfRow{
		{"the upstream call", regexp.MustCompile(`mark3labs/mcp-go/client`)},
		{"writing the answer", regexp.MustCompile(`net/http\.\(\*response\)\.(finishRequest|Write|write|Flush|FlushError)|net/http\.\(\*chunkWriter\)`)},
		{"the handler: mcp-go's server and the peer's own code", regexp.MustCompile(`mark3labs/mcp-go/|^main\.`)},
	}
	runtimeRows = []perfRow{
		{"net/http: the connection loop and request parsing", regexp.MustCompile(`^net/http\.`)},
		{"Go runtime: the collector", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)`)},
		{"Go runtime: sysmon", regexp.MustCompile(`^runtime\.sysmon`)},
		{"Go runtime: the scheduler", regexp.MustCompile(`^runtime\.(schedule|findRunnable|mcall|park_m|goexit0|mstart|gosched|netpoll)`)},
	}
)

// rowsFor is the breakdown of a scenario's process: the peer's or
// switchboard's.
func rowsFor(scenarioID string) []perfRow {
	own := sbRows
	if strings.HasPrefix(scenarioID, "peer-") {
		own = peerRows
	}
	return append(append([]perfRow(nil), own...), runtimeRows...)
}

// profileRows breaks the profile in file down by rows (perf script's
// call chains).
func profileRows(ctx context.Context, file string, rows []perfRow) ([]rowShare, error) {
	cmd := exec.CommandContext(ctx, "perf", "script", "-i", file, "-F", "ip,sym")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	shares, serr := countRows(out, rows)
	// What countRows left unread (it stops at a line it cannot take):
	// perf script must not block on a full pipe, or Wait never returns.
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	return shares, serr
}

// countRows reads perf script's output (each sample a call chain, one
// frame per line as "ip symbol", samples apart by a blank line) and gives
// each row's share of the samples; what no row takes is "other", last.
func countRows(r io.Reader, rows []perfRow) ([]rowShare, error) {
	counts := make([]int, len(rows)+1)
	total := 0
	var stack []string
	take := func() {
		if len(stack) == 0 {
			return
		}
		total++
		counts[firstRow(stack, rows)]++
		stack = stack[:0]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			take()
			continue
		}
		_, sym, _ := strings.Cut(line, " ")
		stack = append(stack, strings.TrimSpace(sym))
	}
	take()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if total == 0 {
		return nil, fmt.Errorf("perf script gave no samples")
	}
	shares := make([]rowShare, 0, len(rows)+1)
	for i, row := range rows {
		shares = append(shares, rowShare{row.name, float64(counts[i]) / float64(total)})
	}
	return append(shares, rowShare{"other", float64(counts[len(rows)]) / float64(total)}), nil
}

// firstRow is the index of the first row with a frame of stack, or
// len(rows) for none.
func firstRow(stack []string, rows []perfRow) int {
	for i, row := range rows {
		for _, sym := range stack {
			if row.re.MatchString(sym) {
				return i
			}
		}
	}
	return len(rows)
}
