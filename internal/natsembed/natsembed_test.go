package natsembed

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"no data dir":      func(c *Config) { c.DataDir = "" },
		"no listen":        func(c *Config) { c.Listen = "" },
		"listen no port":   func(c *Config) { c.Listen = "127.0.0.1" },
		"listen bad port":  func(c *Config) { c.Listen = "127.0.0.1:http" },
		"listen port -2":   func(c *Config) { c.Listen = "127.0.0.1:-2" },
		"negative payload": func(c *Config) { c.MaxPayload = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			mut(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			if _, err := Start(c); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Start = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestStartForTestJetStream(t *testing.T) {
	s, nc := StartForTest(t)
	if s.NATS() == nil || s.ClientURL() == "" {
		t.Fatal("server not exposed")
	}
	if got := nc.MaxPayload(); got != int64(DefaultMaxPayload) {
		t.Fatalf("MaxPayload = %d, want %d", got, DefaultMaxPayload)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "t.1", []byte("x"))
	if err != nil || ack.Sequence != 1 {
		t.Fatalf("publish: %v %+v", err, ack)
	}
}

func TestShutdownIdempotent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:-1"
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(s.Shutdown)
	}
	wg.Wait()
	s.Shutdown()
	if s.NATS().Running() {
		t.Fatal("still running after Shutdown")
	}
}

// TestRestartRecovers checks that acknowledged writes survive a restart on
// the same data dir (with SyncAlways, as a power-loss-safe node would run).
func TestRestartRecovers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:-1"
	cfg.SyncAlways = true
	cfg.ServerName = "restart-test"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	run := func(f func(js jetstream.JetStream)) {
		s, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		f(js)
	}
	run(func(js jetstream.JetStream) {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if _, err := js.Publish(ctx, "r.a", []byte("payload")); err != nil {
				t.Fatal(err)
			}
		}
	})
	run(func(js jetstream.JetStream) {
		st, err := js.Stream(ctx, "R")
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != 10 || info.State.LastSeq != 10 {
			t.Fatalf("after restart: %+v", info.State)
		}
	})
}

func TestConfigFileUsers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nats.conf")
	conf := `
listen: "127.0.0.1:1"  # overridden by Config.Listen
authorization {
  users = [
    {user: worker, password: secret, permissions: {publish: "mem.v1.>", subscribe: "_INBOX.>"}}
    {user: node, password: nodepw}
  ]
}
`
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Listen = "127.0.0.1:-1"
	cfg.ConfigFile = file
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()

	if nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted despite authorization")
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("node", "nodepw"))
	if err != nil {
		t.Fatalf("node user: %v", err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != int64(DefaultMaxPayload) {
		t.Fatalf("MaxPayload = %d", got)
	}

	errs := make(chan error, 1)
	wc, err := nats.Connect(s.ClientURL(), nats.UserInfo("worker", "secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("worker user: %v", err)
	}
	defer wc.Close()
	if err := wc.Publish("mem.ev.session.x", nil); err != nil {
		t.Fatal(err)
	}
	if err := wc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("got %v, want permissions violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("worker publish outside its permissions was not refused")
	}
}

func TestBadConfigFile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:-1"
	cfg.ConfigFile = filepath.Join(t.TempDir(), "missing.conf")
	if _, err := Start(cfg); err == nil {
		t.Fatal("missing config file accepted")
	}
}

// TestStartAddrInUse: a taken listen address fails Start at once (not after
// the 10 s readiness wait) with ErrAddrInUse naming the address.
func TestStartAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = ln.Addr().String()
	began := time.Now()
	s, err := Start(cfg)
	if err == nil {
		s.Shutdown()
		t.Fatal("Start on a taken address succeeded")
	}
	if !errors.Is(err, ErrAddrInUse) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start = %v, want ErrAddrInUse wrapping EADDRINUSE", err)
	}
	if !strings.Contains(err.Error(), "address in use: "+cfg.Listen) {
		t.Errorf("error %q does not name the address", err)
	}
	// Generous: it fails in milliseconds; the bug was the 10 s readiness wait.
	if el := time.Since(began); el >= readyTimeout/2 {
		t.Errorf("Start took %v to fail", el)
	}
	t.Log(err)
}

// TestStartJetStreamFails: a store directory JetStream cannot use fails
// Start at once with the server's reason.
func TestStartJetStreamFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = file
	cfg.Listen = "127.0.0.1:-1"
	began := time.Now()
	s, err := Start(cfg)
	if err == nil {
		s.Shutdown()
		t.Fatal("Start on a file as store directory succeeded")
	}
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "JetStream") {
		t.Fatalf("Start = %v, want ErrStart naming JetStream", err)
	}
	if el := time.Since(began); el >= readyTimeout/2 {
		t.Errorf("Start took %v to fail", el)
	}
	t.Log(err)
}
