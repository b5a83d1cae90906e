package proxy

import (
	"context"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// newTelemetry sets up telemetry for c; its gauges observe the proxy.
func (p *Proxy) newTelemetry(ctx context.Context, c *config.Config) (*telemetry.Telemetry, error) {
	o := telemetry.Options{Version: Version, Prometheus: true, Log: p.log, Observe: p.observe}
	if t := c.Telemetry; t != nil {
		o.ServiceName = t.ServiceName
		o.Prometheus = t.Prometheus == nil || *t.Prometheus
	}
	t, err := telemetry.New(ctx, o)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return t, nil
}

// observe is the state the gauges show.
func (p *Proxy) observe() telemetry.Observation {
	obs := telemetry.Observation{LastReloadOK: true, Servers: map[string]upstream.Status{}, Sessions: map[string]int{}}
	cur := p.serving.Load()
	if snap := cur.Snap; snap != nil {
		perClient, instances := perClientHandles(snap), p.d.Tables().PerClient
		for key, h := range snap.Handles {
			obs.Servers[key] = statusOf(h, perClient, instances)
		}
	}
	if lr := p.lastReload.Load(); lr != nil && !lr.OK {
		obs.LastReloadOK = false
	}
	counts := p.d.SessionCounts()
	for id := range cur.Views {
		name := id
		if name == "" {
			name = "default"
		}
		obs.Sessions[name] = counts[id]
	}
	return obs
}
