// Package instance is the registry of running switchboards on this
// machine, so that `switchboard status` can find a proxy whose admin
// address it was not told: one served over stdio (admin on a free port),
// or one started with another SWITCHBOARD_ADMIN_LISTEN or adminListen.
//
// Each serving switchboard writes one small JSON Record, named after its
// PID and a sequence number, into Dir, and removes it when it stops; a
// reader skips and removes records of processes that are gone. It imports
// nothing of the module (proxy writes, cmd/switchboard reads). Records are
// written atomically (rename), so a reader never sees half of one; the
// functions are safe for concurrent use by any number of processes.
package instance
