package dispatch

import "testing"

// TestRecordNamesItsCaller: a session's record says who the caller is, the
// view and the token's value, which a multi-round-trip call's state is
// bound to (mrtr.Caller); two callers never share it, and a token's place
// in the config (which a reload moves) does not count.
func TestRecordNamesItsCaller(t *testing.T) {
	var tokens Tokens
	tokens.Add("token-a", "auth.tokens[0]", "a", false)
	tokens.Add("token-b", "auth.tokens[1]", "a", false)
	a, _ := tokens.Match("token-a")
	b, _ := tokens.Match("token-b")
	pa := Principal{View: "a", TokenID: a.ID, Holder: a.Holder()}
	var c interface{ Caller() string } = &record{pr: pa}
	// Token B at token A's place, as after a reload that removed A.
	moved := Principal{View: "a", TokenID: a.ID, Holder: b.Holder()}
	if c.Caller() == (&record{pr: moved}).Caller() || pa.Same(moved) {
		t.Errorf("token B at token A's config path is taken for A")
	}
	again := Principal{View: "a", TokenID: "auth.tokens[7]", Holder: a.Holder()}
	if c.Caller() != (&record{pr: again}).Caller() || !pa.Same(again) {
		t.Errorf("token A at another config path is not A")
	}
	if other := (Principal{View: "b", Holder: a.Holder()}); pa.Same(other) || c.Caller() == other.Caller() {
		t.Errorf("token A in another view is the same caller")
	}
}
