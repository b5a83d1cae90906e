package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// cmdRestart asks a running switchboard to restart one server now (a
// failed one included), through POST /admin/restart/{server} with the
// admin token.
func cmdRestart(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var addr, cfgPath, token string
	fs := newFlags("restart", "restart [--admin ADDR | --config FILE] [--token TOKEN] SERVER", stderr)
	fs.StringVar(&addr, "admin", "", "admin address of the running switchboard (found as status finds it)")
	fs.StringVar(&cfgPath, "config", "", "restart in the switchboard that serves this config file")
	fs.StringVar(&token, "token", "", "the config's admin.reloadToken (default $SWITCHBOARD_ADMIN_TOKEN)")
	// The server's name may come before or after the flags.
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitConfig
		}
		if fs.NArg() == 0 {
			break
		}
		names, args = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	if len(names) != 1 {
		fmt.Fprintln(stderr, "switchboard restart: name one server")
		fs.Usage()
		return exitConfig
	}
	server := names[0]
	if token == "" {
		token = os.Getenv("SWITCHBOARD_ADMIN_TOKEN")
	}
	if token == "" {
		fmt.Fprintln(stderr, "switchboard restart: needs the admin token (--token or $SWITCHBOARD_ADMIN_TOKEN; the config's admin.reloadToken)")
		return exitConfig
	}
	tg, base, err := findAdmin(addr, absPath(cfgPath))
	if err != nil {
		fmt.Fprintln(stderr, "switchboard restart:", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/admin/restart/"+url.PathEscape(server), nil)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard restart:", err)
		return exitConfig
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "switchboard restart: no switchboard answers at %s (%s): %v\n", tg.addr, tg.source, err)
		return exitError
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusAccepted:
		fmt.Fprintf(stdout, "restarting %s at %s; `switchboard status` shows when it is up\n", server, tg.addr)
		return exitOK
	case http.StatusNotFound:
		if strings.Contains(string(body), "no server") {
			fmt.Fprintf(stderr, "switchboard restart: %s", body)
		} else {
			fmt.Fprintf(stderr, "switchboard restart: the switchboard at %s has no admin token set (admin.reloadToken), so it takes no admin actions\n", tg.addr)
		}
	case http.StatusUnauthorized:
		fmt.Fprintln(stderr, "switchboard restart: the admin token was refused")
	default:
		fmt.Fprintf(stderr, "switchboard restart: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
	}
	return exitError
}
