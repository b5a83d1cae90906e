package proxy

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/instance"
	"github.com/mcp-switchboard/switchboard/proxy/internal/connlimit"
)

// stdioAdminListen is the admin address of `serve --stdio` when none is
// configured: a free loopback port, since every MCP client starts its own
// switchboard and a fixed port would be taken by the first. The instance
// registry tells `switchboard status` where it is (issue 18).
const stdioAdminListen = "127.0.0.1:0"

// listen binds the MCP listener (nil with --stdio) and the admin listener,
// before any upstream starts: a taken port fails the start at once. With
// --stdio, an admin address that cannot be bound is logged and skipped
// (adm nil): the client's session matters more.
func (p *Proxy) listen(c *config.Config) (ln, adm net.Listener, err error) {
	adminAddr := cmp.Or(c.AdminListen, config.DefaultAdminListen)
	if p.opts.Stdio {
		adm, err := net.Listen("tcp", cmp.Or(c.AdminListen, stdioAdminListen))
		if err != nil {
			p.log.Warn("admin listener not opened", "error", err)
			return nil, nil, nil
		}
		return nil, adm, nil
	}
	ln, err = net.Listen("tcp", cmp.Or(c.Listen, config.DefaultListen))
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	adm, err = net.Listen("tcp", adminAddr)
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("admin listen: %w", err)
	}
	if nofile := connlimit.FileLimit(); nofile > 0 {
		// Clients get the descriptors less a reserve, so the admin
		// listener (/healthz) and the servers still get theirs when
		// clients open more connections than the process can hold.
		p.conns = connlimit.New(ln, connlimit.Cap(nofile), p.log)
		ln = p.conns
	}
	return ln, adm, nil
}

// noteAddrs records the bound addresses for the banner, /status and the
// ready file.
func (p *Proxy) noteAddrs(ln, adm net.Listener) {
	p.listenAddr, p.adminAddr = "stdio", "none"
	if ln != nil {
		p.listenAddr = ln.Addr().String()
	}
	if adm != nil {
		p.adminAddr = adm.Addr().String()
	}
}

// configName is the config the proxy serves as the banner and /status name
// it: its absolute path, or "embedded demo".
func (p *Proxy) configName() string {
	if p.opts.ConfigPath == "" {
		return "embedded demo"
	}
	if abs, err := filepath.Abs(p.opts.ConfigPath); err == nil {
		return abs
	}
	return p.opts.ConfigPath
}

// register announces this proxy in the instance registry and returns the
// func that withdraws it. Failing to register is logged: serving goes on.
func (p *Proxy) register() (unregister func()) {
	if p.adminAddr == "none" {
		return func() {}
	}
	getenv := p.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir, err := instance.Dir(getenv)
	var remove func()
	if err == nil {
		cfg := ""
		if p.opts.ConfigPath != "" {
			cfg = p.configName()
		}
		remove, err = instance.Register(dir, instance.Record{
			PID: os.Getpid(), Config: cfg, Listen: p.listenAddr, Admin: p.adminAddr, Version: Version, Started: time.Now().UTC(),
		})
	}
	if err != nil {
		p.log.Warn("instance not registered; switchboard status needs --admin", "error", err)
		return func() {}
	}
	return remove
}

// writeReady writes the bound addresses to the ready file, if one is set.
func (p *Proxy) writeReady() {
	if p.opts.ReadyFile == "" {
		return
	}
	if err := writeFileAtomic(p.opts.ReadyFile, p.listenAddr+"\n"+p.adminAddr+"\n"); err != nil {
		p.log.Warn("ready file", "error", err)
	}
}
