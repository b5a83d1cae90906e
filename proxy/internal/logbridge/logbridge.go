package logbridge

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// Handler is a slog.Handler writing to an hclog.Logger.
type Handler struct {
	log    hclog.Logger
	demote bool
	attrs  []any
	group  string
}

// New returns a slog.Handler that writes to log. With demote, info records
// are logged at debug: a library's lifecycle chatter (sessions opening and
// closing) is per request for us.
func New(log hclog.Logger, demote bool) *Handler { return &Handler{log: log, demote: demote} }

func (h *Handler) level(l slog.Level) hclog.Level {
	if h.demote && l >= slog.LevelInfo && l < slog.LevelWarn {
		return hclog.Debug
	}
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	case l >= slog.LevelInfo:
		return hclog.Info
	}
	return hclog.Debug
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= h.level(l) && h.log.GetLevel() != hclog.Off
}

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, len(h.attrs)+2*r.NumAttrs())
	args = append(args, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.key(a.Key), a.Value.Resolve().Any())
		return true
	})
	h.log.Log(h.level(r.Level), r.Message, args...)
	return nil
}

func (h *Handler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &Handler{log: h.log, demote: h.demote, group: h.group, attrs: append([]any(nil), h.attrs...)}
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.key(a.Key), a.Value.Resolve().Any())
	}
	return n
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{log: h.log, demote: h.demote, attrs: h.attrs, group: h.key(name)}
}
