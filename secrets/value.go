package secrets

import (
	"fmt"
	"log/slog"
)

// redactedText is what a Value prints in every format.
const redactedText = "[redacted]"

// Value holds a secret and never prints itself: fmt (every verb, %#v
// included), encoding/json, encoding.TextMarshaler users, log/slog and
// go-hclog in text and JSON mode all see "[redacted]". Reveal returns the
// secret. The zero Value holds "".
type Value struct {
	s string
}

// NewValue wraps s.
func NewValue(s string) Value { return Value{s: s} }

// Reveal returns the secret. Call it only where the value leaves the
// process on purpose (a child's environment, an outgoing header).
func (v Value) Reveal() string { return v.s }

// IsZero reports whether v holds the empty string.
func (v Value) IsZero() bool { return v.s == "" }

// String implements fmt.Stringer.
func (Value) String() string { return redactedText }

// GoString implements fmt.GoStringer (%#v).
func (Value) GoString() string { return redactedText }

// Format implements fmt.Formatter, so no verb (%x, %q, %+v …) reaches the
// secret.
func (Value) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", redactedText)
		return
	}
	_, _ = f.Write([]byte(redactedText))
}

// MarshalJSON implements json.Marshaler.
func (Value) MarshalJSON() ([]byte, error) { return []byte(`"` + redactedText + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (Value) MarshalText() ([]byte, error) { return []byte(redactedText), nil }

// LogValue implements slog.LogValuer.
func (Value) LogValue() slog.Value { return slog.StringValue(redactedText) }

var (
	_ fmt.Stringer   = Value{}
	_ fmt.GoStringer = Value{}
	_ fmt.Formatter  = Value{}
	_ slog.LogValuer = Value{}
)
