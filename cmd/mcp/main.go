// Command mcp (built as agentmem-mcp) serves agentmem's memory tools over
// MCP, on stdio or Streamable HTTP, as one agent's NATS connection; with
// --print-tools it prints the tool definitions and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmem/agentmem/internal/envflag"
	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/mcpserver"
	"github.com/agentmem/agentmem/tools"
)

func main() {
	cfg := mcpserver.DefaultConfig()
	fs := flag.NewFlagSet("agentmem-mcp", flag.ExitOnError)
	mcpserver.BindFlags(fs, &cfg)
	printTools := fs.String("print-tools", "", "print the tool definitions as openai, anthropic or mcp JSON and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = envflag.Usage(fs, "agentmem-mcp "+version.Version+": agentmem's memory tools over MCP (stdio, or Streamable HTTP with --http), as one agent's NATS connection")
	_ = fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println("agentmem-mcp", version.Version)
		return
	}
	if *printTools != "" {
		if err := tools.WriteJSON(os.Stdout, *printTools); err != nil {
			fmt.Fprintln(os.Stderr, "agentmem-mcp:", err)
			os.Exit(2)
		}
		return
	}
	if err := mcpserver.ApplyEnv(fs, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "agentmem-mcp:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mcpserver.Run(ctx, cfg, logger, version.Version); err != nil {
		logger.Error("agentmem-mcp failed", "err", err)
		os.Exit(1)
	}
}
