// Package taskid mints and opens the task IDs switchboard gives its
// clients for tasks its upstreams created (the tasks extension,
// SEP-2663). An ID names the public tool whose call created the task, the
// server that owns it and the server's own task ID, and is bound to the
// caller it was issued to by an HMAC under the process's key:
//
//	swt1.<b64(public tool)>.<b64(server)>.<b64(upstream ID)>.<b64(mac)>
//
// so tasks/get, tasks/update and tasks/cancel route to the owner with one
// lookup and reach it with the server's ID exactly as it was issued. An ID
// that was altered, issued to another caller or under another key does
// not open: to its holder it is an unknown task.
package taskid
