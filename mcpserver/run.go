package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/tools"
)

// Run connects to NATS as cfg says and serves MCP until ctx ends (or, on
// stdio, until the client closes its end). Logs go to logger, never to
// stdout (stdio's protocol channel).
func Run(ctx context.Context, cfg Config, logger *slog.Logger, version string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	nc, err := nats.Connect(cfg.NATSURL, cfg.natsOptions()...)
	if err != nil {
		return fmt.Errorf("mcpserver: connect %s: %w", cfg.NATSURL, err)
	}
	defer nc.Close()
	ex := &tools.Executor{Client: client.New(nc).WithTimeout(cfg.Timeout), Agent: cfg.Agent}
	srv := New(ex, version)
	if cfg.HTTPAddr == "" {
		logger.Info("serving MCP on stdio", "nats", cfg.NATSURL, "agent", cfg.Agent)
		return srv.Run(ctx, NewLineTransport(os.Stdin, os.Stdout))
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("mcpserver: listen %s: %w", cfg.HTTPAddr, err)
	}
	logger.Info("serving MCP over Streamable HTTP", "addr", ln.Addr().String(), "nats", cfg.NATSURL, "agent", cfg.Agent)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		logger.Warn("the HTTP endpoint has no authentication of its own: whoever reaches it acts as this server's NATS identity", "addr", ln.Addr().String())
	}
	return ServeHTTP(ctx, srv, ln, HTTPOptions{SessionTimeout: cfg.SessionTimeout, MaxSessions: cfg.MaxHTTPSessions,
		AllowedOrigins: cfg.AllowedOrigins, AllowedHosts: cfg.AllowedHosts}, logger)
}

// ServeHTTP serves srv over Streamable HTTP on ln (every path) until ctx
// ends, then closes the MCP sessions and the listener and returns when the
// handlers have returned (at most 5 s later). Every request's Host and
// Origin are checked first (403), and sessions are bounded (503
// max_http_sessions): see HTTPOptions.
func ServeHTTP(ctx context.Context, srv *mcp.Server, ln net.Listener, opts HTTPOptions, logger *slog.Logger) error {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: opts.SessionTimeout, Logger: logger})
	hs := &http.Server{Handler: newGuard(h, srv, opts), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("mcpserver: serve: %w", err)
	case <-ctx.Done():
	}
	// Closing the sessions ends their long-lived GET streams, so the
	// shutdown below need not wait for them.
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
