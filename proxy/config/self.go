package config

import (
	"os"
	"path/filepath"
	"strings"
)

// executable is os.Executable, replaceable in tests.
var executable = os.Executable

// startsSelf reports whether a stdio server with this command and args is
// switchboard serving (or listing tools, which starts servers too): the
// command is the running binary or is named switchboard, and the first
// argument is serve, tools, a flag, or missing (serve). Such a config
// starts itself over and over. The demo servers of the embedded config run
// the binary with demo-server, which starts nothing, and pass. why says
// what was recognised.
func startsSelf(command string, args []string) (bool, string) {
	if strings.TrimSpace(command) == "" {
		return false, ""
	}
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	if base != "switchboard" && !sameAsExecutable(command) {
		return false, ""
	}
	sub := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub = args[0]
	}
	if sub != "serve" && sub != "tools" {
		return false, ""
	}
	return true, "switchboard " + sub
}

// sameAsExecutable reports whether command names the running binary under
// another name (a symlink or a copy) when that binary is switchboard. A
// test binary running itself as a child (the fork/exec trick, told apart
// by its environment) is not switchboard and passes.
func sameAsExecutable(command string) bool {
	if !strings.ContainsRune(command, filepath.Separator) {
		return false
	}
	self, err := executable()
	if err != nil || strings.TrimSuffix(filepath.Base(self), ".exe") != "switchboard" {
		return false
	}
	a, err := os.Stat(command)
	if err != nil {
		return false
	}
	b, err := os.Stat(self)
	return err == nil && os.SameFile(a, b)
}
