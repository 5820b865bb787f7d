// Command replay is the operator tool of agentmem: rebuild and verify the
// projection, inspect a session at any point of the log, export/import the
// log, stats. See replay.Usage, or run `replay help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmem/agentmem/replay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := replay.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, replay.ErrDiffers) && !errors.Is(err, replay.ErrBehind) {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(replay.ExitCode(err))
}
