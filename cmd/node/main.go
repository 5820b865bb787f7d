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

	"github.com/agentmem/agentmem/internal/envflag"
	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/node"
)

func main() {
	cfg := node.DefaultConfig()
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	node.BindFlags(fs, &cfg)
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long shutdown waits for in-flight requests and snapshots")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = envflag.Usage(fs, "agentmem-node "+version.Version+": an agentmem node (embedded NATS + JetStream by default; HTTP API, /metrics and /healthz on --http)")
	_ = fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println("agentmem-node", version.Version)
		return
	}
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
