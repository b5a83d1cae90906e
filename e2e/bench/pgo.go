package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// pgoLoads are the loads cmd/switchboard/default.pgo is recorded under:
// the calls this benchmark's targets measure, switchboard → server-
// everything over stdio at c = 8 and 32 and switchboard → the HTTP echo at
// c = 8, each for --pgo-seconds.
var pgoLoads = []struct {
	id   string
	conc int
}{{idSBStdio, 8}, {idSBStdio, 32}, {idSBHTTP, 8}}

// writePGO records the CPU profile of switchboard under each of pgoLoads,
// from its admin listener's /debug/pprof/profile (serve --admin-pprof, which
// the benchmark passes with --pgo), after every measurement, and merges
// them into o.pgo with go tool pprof: the profile the compiler's
// profile-guided optimisation reads (cmd/switchboard/default.pgo).
func writePGO(ctx context.Context, e *env, scenarios []*scenario, o *options, work string) (string, error) {
	var files []string
	for _, l := range pgoLoads {
		sc := scenarioByID(scenarios, l.id)
		if sc == nil || sc.admin == "" {
			return "", fmt.Errorf("--pgo: scenario %s did not run", l.id)
		}
		progress("CPU profile for --pgo of %s at c = %d, %d s", sc.name, l.conc, o.pgoSeconds)
		file := filepath.Join(work, fmt.Sprintf("pgo-%s-%d.pprof", l.id, l.conc))
		if err := profileUnderLoad(ctx, e, sc, l.conc, o.pgoSeconds, file); err != nil {
			return "", fmt.Errorf("--pgo: %s at c = %d: %w", sc.name, l.conc, err)
		}
		files = append(files, file)
	}
	merged, err := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, files...)...).Output()
	if err != nil {
		return "", fmt.Errorf("--pgo: go tool pprof -proto: %w", err)
	}
	if err := os.WriteFile(o.pgo, merged, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("--pgo: wrote %s (%d bytes), the merged CPU profiles of switchboard under %d loads of %d s each: → server-everything at c = 8 and 32, → the HTTP echo at c = 8.", o.pgo, len(merged), len(files), o.pgoSeconds), nil
}

// profileUnderLoad fetches a CPU profile of secs seconds from sc's
// switchboard while calls run at conc, in batches, until it is written.
func profileUnderLoad(ctx context.Context, e *env, sc *scenario, conc, secs int, file string) error {
	type fetched struct {
		body []byte
		err  error
	}
	done := make(chan fetched, 1)
	go func() {
		url := "http://" + sc.admin + "/debug/pprof/profile?seconds=" + strconv.Itoa(secs)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- fetched{err: err}
			return
		}
		resp, err := e.client.Do(req)
		if err != nil {
			done <- fetched{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
		}
		done <- fetched{body, err}
	}()
	limit := time.After(time.Duration(secs)*time.Second + time.Minute)
	for {
		select {
		case f := <-done:
			if f.err != nil {
				return f.err
			}
			return os.WriteFile(file, f.body, 0o644)
		case <-limit:
			return fmt.Errorf("no profile a minute after its %d s", secs)
		default:
		}
		if _, err := runLoad(ctx, e, sc, conc, 200*conc); err != nil {
			return err
		}
	}
}
