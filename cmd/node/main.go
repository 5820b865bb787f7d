// Command node runs an agentmem node: embedded NATS + JetStream by default.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentmem/agentmem/node"
)

func main() {
	cfg := node.DefaultConfig()
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	node.BindFlags(fs, &cfg)
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long shutdown waits for in-flight requests and snapshots")
	_ = fs.Parse(os.Args[1:])
	if err := node.ApplyEnv(fs, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := node.Run(ctx, cfg, logger, *drain); err != nil {
		logger.Error("node failed", "err", err)
		os.Exit(1)
	}
}
