package upstream

import (
	"errors"
	"io/fs"
	neturl "net/url"
	"os/exec"
	"syscall"
)

// Start failures that trying again cannot change: the command is not
// there or may not be run, a reference does not resolve, the URL is not
// one. Restarting with backoff would only fail the same way maxRestarts
// more times and log each; such a server is failed at once, with the
// reason logged once and kept as its last error. A reload (which retries
// every failed server) or Restart tries again. See "First contact", item 6.

// ErrPermanent matches (with errors.Is) a start failure that trying again
// cannot change.
var ErrPermanent = errors.New("permanent start failure")

// permanentError marks an error as permanent, keeping its message.
type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as a start failure that trying again cannot change
// (ErrPermanent); its message is unchanged. An Expander returns it for a
// reference that does not resolve. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// startError marks a failure to start a process permanent when the program
// or its working directory is not there, may not be run, or is no
// program: the next attempt would find the same. Other failures (too many
// open files, fork limits) pass unchanged.
func startError(err error) error {
	for _, target := range []error{exec.ErrNotFound, exec.ErrDot, fs.ErrNotExist, fs.ErrPermission, syscall.ENOEXEC, syscall.ENOTDIR} {
		if errors.Is(err, target) {
			return Permanent(err)
		}
	}
	return err
}

// checkURL checks a remote server's URL once its references are
// expanded: config validation could not see it. The message leaves the
// URL out, as it may hold a secret.
func checkURL(raw string) error {
	u, err := neturl.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Permanent(errors.New("url: not an absolute http or https URL once its references are expanded"))
	}
	return nil
}
