package natsembed

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// slogLogger passes the server's log lines to a slog.Logger: notices (the
// server's "info") at debug, so a node's log shows the server only when
// something is wrong; warnings at warn; errors and fatal lines at error;
// debug and trace lines at debug (the server sends them only with
// Config.Debug).
type slogLogger struct {
	l *slog.Logger
	// ownUsers: the users are the ones a single-user node makes itself
	// (random passwords, and the anonymous no-auth user, which has none):
	// the server's "Plaintext passwords detected" is then not something an
	// operator configured or can change, and goes at debug.
	ownUsers bool
}

var _ server.Logger = slogLogger{}

// NewSlogLogger returns a server.Logger writing to l (Config.Logger). Every
// line carries component=nats-server.
func NewSlogLogger(l *slog.Logger) server.Logger {
	return slogLogger{l: l.With("component", "nats-server")}
}

func (s slogLogger) log(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, fmt.Sprintf(format, v...))
}

func (s slogLogger) Noticef(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
func (s slogLogger) Warnf(format string, v ...any) {
	if s.ownUsers && strings.HasPrefix(format, "Plaintext passwords detected") {
		s.log(slog.LevelDebug, format+" (the node's own generated users)", v)
		return
	}
	s.log(slog.LevelWarn, format, v)
}
func (s slogLogger) Errorf(format string, v ...any) { s.log(slog.LevelError, format, v) }
func (s slogLogger) Fatalf(format string, v ...any) { s.log(slog.LevelError, format, v) }
func (s slogLogger) Debugf(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
func (s slogLogger) Tracef(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
