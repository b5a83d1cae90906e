// Package connlimit caps the connections a listener holds open at once
// below the process's file-descriptor limit, so that what else needs a
// descriptor (the admin listener and its probes, servers' pipes, the
// config, pin and audit files) still gets one when clients open more
// connections than the process can hold. It owns the cap and the count;
// it must not know HTTP or MCP.
package connlimit
