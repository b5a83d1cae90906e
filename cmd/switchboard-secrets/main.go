// Command switchboard-secrets is switchboard's secrets helper: it reads
// secrets from the backends whose libraries switchboard does not link (AWS
// Secrets Manager, with the AWS SDK's standard configuration chain) for the
// switchboard process that started it, over its standard input and output
// (package secrets/helper). switchboard starts it on the first secret://aws
// reference, from beside its own executable or from PATH (or where
// SWITCHBOARD_SECRETS_HELPER says), and ends it when it has been idle.
//
// It is not meant to be run by hand.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/mcp-switchboard/switchboard/secrets/awssm"
	"github.com/mcp-switchboard/switchboard/secrets/helper"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "switchboard-secrets is started by switchboard, which speaks to it over stdin and stdout; it takes no arguments")
		os.Exit(2)
	}
	// The parent ends the helper by closing its stdin; a signal sent to the
	// whole process group (a terminal's ^C) is the parent's to act on.
	signal.Ignore(os.Interrupt)
	aws := awssm.New(awssm.Options{})
	backends := map[string]helper.Fetch{"aws": aws.Fetch}
	isNotFound := func(err error) bool { return errors.Is(err, awssm.ErrNotFound) }
	if err := helper.Serve(context.Background(), os.Stdin, os.Stdout, backends, isNotFound); err != nil {
		fmt.Fprintln(os.Stderr, "switchboard-secrets:", err)
		os.Exit(1)
	}
}
