package dispatch

import "testing"

// TestRecordNamesItsCaller: a session's record says who the caller is, the
// view and the token, which a multi-round-trip call's state is bound to
// (mrtr.Caller); two callers never share it.
func TestRecordNamesItsCaller(t *testing.T) {
	var c interface{ Caller() string } = &record{pr: Principal{View: "a", TokenID: "agents.list[0].tokens[0]"}}
	other := &record{pr: Principal{View: "a", TokenID: "agents.list[0].tokens[1]"}}
	if c.Caller() == other.Caller() || c.Caller() != (&record{pr: Principal{View: "a", TokenID: "agents.list[0].tokens[0]"}}).Caller() {
		t.Errorf("callers %q and %q: want one string per principal", c.Caller(), other.Caller())
	}
}
