package sysmon

import "testing"

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		godebug, want string
		restart       bool
		mode, after   string
	}{
		{"", "schedtrace=" + Period, true, "default", "backoff"},
		{"madvdontneed=1", "madvdontneed=1,schedtrace=" + Period, true, "default", "backoff"},
		{"schedtrace=0", "schedtrace=0", false, "default", "default"},
		{"schedtrace=1000,x=1", "schedtrace=1000,x=1", false, "backoff", "backoff"},
		{"schedtrace=5,schedtrace=0", "schedtrace=5,schedtrace=0", false, "default", "default"},
		{"schedtrace=junk", "schedtrace=junk", false, "default", "default"},
		{"xschedtrace=5", "xschedtrace=5,schedtrace=" + Period, true, "default", "backoff"},
	} {
		env := func(v string) func(string) string {
			return func(k string) string {
				if k == "GODEBUG" {
					return v
				}
				return ""
			}
		}
		got, restart := Env(env(tc.godebug))
		if got != tc.want || restart != tc.restart {
			t.Errorf("Env(GODEBUG=%q) = %q, %v; want %q, %v", tc.godebug, got, restart, tc.want, tc.restart)
		}
		if m := Mode(env(tc.godebug)); m != tc.mode {
			t.Errorf("Mode(GODEBUG=%q) = %q, want %q", tc.godebug, m, tc.mode)
		}
		// Started again with what Env returned, serve runs as it says and
		// does not restart a second time.
		if m := Mode(env(got)); m != tc.after {
			t.Errorf("Mode(GODEBUG=%q) after Env = %q, want %q", got, m, tc.after)
		}
		if _, again := Env(env(got)); again {
			t.Errorf("Env(GODEBUG=%q) asks for a second restart", got)
		}
	}
}
