package natsembed

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRestartJetStream: a restart keeps every stored message and the
// stream takes writes again, on the same client connection.
func TestRestartJetStream(t *testing.T) {
	s, nc := StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "r.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RestartJetStream(); err != nil {
		t.Fatalf("RestartJetStream: %v", err)
	}
	if !s.JetStreamEnabled() {
		t.Fatal("JetStream off after restart")
	}
	if f := s.StoreFaults(); len(f) != 0 {
		t.Fatalf("StoreFaults after restart = %q", f)
	}
	ack, err := js.Publish(ctx, "r.a", []byte("y"))
	if err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	if ack.Sequence != 4 {
		t.Fatalf("seq after restart = %d, want 4 (nothing lost, nothing added)", ack.Sequence)
	}
	// Off by the server's own hand (as on a fault), then on again.
	if err := s.NATS().ShutdownJetStream(); err != nil {
		t.Fatal(err)
	}
	if s.JetStreamEnabled() || len(s.StoreFaults()) == 0 {
		t.Fatalf("disabled JetStream: enabled=%v faults=%q", s.JetStreamEnabled(), s.StoreFaults())
	}
	if err := s.RestartJetStream(); err != nil {
		t.Fatalf("RestartJetStream after disable: %v", err)
	}
	if _, err := js.Publish(ctx, "r.a", []byte("z")); err != nil {
		t.Fatalf("publish after re-enable: %v", err)
	}
}

// TestSlogLogger: notices go to debug, warnings and errors keep their level.
func TestSlogLogger(t *testing.T) {
	var buf bytes.Buffer
	l := NewSlogLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Noticef("hello %d", 1)
	l.Debugf("debug")
	l.Warnf("careful %s", "now")
	l.Errorf("broken: %v", "disk")
	out := buf.String()
	if strings.Contains(out, "hello") || strings.Contains(out, "debug") {
		t.Fatalf("notice or debug at info level:\n%s", out)
	}
	for _, want := range []string{`level=WARN msg="careful now" component=nats-server`, `level=ERROR msg="broken: disk" component=nats-server`} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
}

// The single-user node's own users (random passwords, and the anonymous
// no-auth user with none) make the server warn "Plaintext passwords
// detected" on every start: with users it made itself that goes at debug;
// with users an operator configured it stays a warning.
func TestPlaintextWarningOfOwnUsers(t *testing.T) {
	for _, own := range []bool{true, false} {
		var buf bytes.Buffer
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Listen = "127.0.0.1:-1"
		cfg.Logger = NewSlogLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
		if own {
			cfg.NodeUsers = &NodeUsers{NodePassword: "n", APIPassword: "a", Stream: "MEM"}
		} else {
			cfg.ConfigFile = filepath.Join(t.TempDir(), "nats.conf")
			if err := os.WriteFile(cfg.ConfigFile, []byte("authorization { users = [ { user: u, password: plain } ] }\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.Shutdown()
		if got := strings.Contains(buf.String(), "Plaintext passwords detected"); got == own {
			t.Errorf("own users %v: warning logged %v:\n%s", own, got, buf.String())
		}
	}
}
