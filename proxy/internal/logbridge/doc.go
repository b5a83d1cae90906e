// Package logbridge adapts an hclog.Logger to slog.Handler, so the go-sdk's
// slog output lands in switchboard's one log stream (and its redactor).
//
// It imports nothing of this module. A Handler is safe for concurrent use.
package logbridge
