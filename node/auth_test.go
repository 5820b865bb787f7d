package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// authConf is the example authorization config (examples/auth).
const authConf = "../examples/auth/nats.conf"

// TestAuthEmbeddedNode runs the embedded server with the example
// authorization config (--nats-config): without credentials the node itself
// is refused; with --nats-user/--nats-password it serves, and an agent
// worker reaches only its own subjects.
func TestAuthEmbeddedNode(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = t.TempDir(), "127.0.0.1:-1", ""
	cfg.NATSConfig = authConf
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		_ = n.Shutdown(context.Background())
		t.Fatal("node started on an authorization config without credentials")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("Start = %v, want an authorization violation", err)
	}

	n, _ = node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.NATSUser, c.NATSPassword = authConf, "node", "node-secret"
	})
	a1 := connect(t, n.ClientURL(), "agent-a1", "a1-secret", "_INBOX.a1")
	rep, err := a1.nc.Request("mem.v1.agent.a1.list", nil, 5*time.Second)
	if err != nil || rep.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("agent-a1 listing its own memory: %v %v", err, rep)
	}
	a1.noViolation(t)
	a1.refused(t, "mem.v1.agent.a2.list")
}

// authServer runs NATS with the example config and a node connected to it as
// user "node"; it returns the server's plain URL and the node's connection.
func authServer(t *testing.T) (string, *nats.Conn) {
	t.Helper()
	ecfg := natsembed.DefaultConfig()
	ecfg.DataDir = t.TempDir()
	ecfg.Listen = "127.0.0.1:-1"
	ecfg.ConfigFile = authConf
	srv, err := natsembed.Start(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // after the node's cleanup (LIFO)
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("node", "node-secret")
	_, nc := node.StartForTest(t, func(c *node.Config) { c.NATSURL = u.String() })
	// node.Start does not flush the service's subscriptions: wait until it answers.
	for range 100 {
		if _, err := nc.Request("$SRV.PING.memory", nil, 100*time.Millisecond); err == nil {
			break
		}
	}
	return srv.ClientURL(), nc
}

// user is a connection as one configured user, recording the asynchronous
// errors (permissions violations) the server reports to it.
type user struct {
	nc   *nats.Conn
	errs chan error
}

func connect(t *testing.T, serverURL, name, password, inbox string) *user {
	t.Helper()
	u := &user{errs: make(chan error, 64)}
	opts := []nats.Option{
		nats.UserInfo(name, password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case u.errs <- err:
			default:
			}
		}),
	}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	nc, err := nats.Connect(serverURL, opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(nc.Close)
	u.nc = nc
	return u
}

// violation waits for the server to report a permissions violation on a
// subject starting with subject.
func (u *user) violation(t *testing.T, subject string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-u.errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-timeout:
			t.Fatalf("no permissions violation reported for %q", subject)
		}
	}
}

// noViolation checks that no permissions violation was reported so far.
func (u *user) noViolation(t *testing.T) {
	t.Helper()
	if err := u.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case err := <-u.errs:
			if errors.Is(err, nats.ErrPermissionViolation) {
				t.Fatalf("unexpected: %v", err)
			}
		default:
			return
		}
	}
}

// probe is the body of permission probes: not protobuf, so the service
// answers 400 at once without touching any aggregate.
var probe = []byte{0xff}

// allowed sends a request on subject and checks that it went through NATS:
// any reply (a service error included) or "no responders" (an endpoint
// this build does not serve) proves the publish was permitted.
func (u *user) allowed(t *testing.T, subject string) {
	t.Helper()
	_, err := u.nc.Request(subject, probe, 5*time.Second)
	if err != nil && !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request %s: %v", subject, err)
	}
	u.noViolation(t)
}

// refused sends a request on subject and checks that the server dropped it
// as a permissions violation (the request itself only times out).
func (u *user) refused(t *testing.T, subject string) {
	t.Helper()
	if _, err := u.nc.Request(subject, probe, 500*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("request %s = %v, want a timeout (dropped)", subject, err)
	}
	u.violation(t, subject)
}

func TestAuthPermissions(t *testing.T) {
	serverURL, nodeConn := authServer(t)
	a1 := connect(t, serverURL, "agent-a1", "a1-secret", "_INBOX.a1")
	admin := connect(t, serverURL, "admin", "admin-secret", "")

	t.Run("own agent subjects", func(t *testing.T) {
		for _, s := range []string{"mem.v1.agent.a1.get", "mem.v1.agent.a1.put", "mem.v1.agent.a1.list"} {
			a1.allowed(t, s)
		}
	})
	t.Run("member scopes", func(t *testing.T) {
		a1.allowed(t, "mem.v1.scope.workflow.w1.put")
		a1.allowed(t, "mem.v1.scope.global.global.get")
		a1.refused(t, "mem.v1.scope.workflow.w2.get")
	})
	t.Run("another agent", func(t *testing.T) {
		a1.refused(t, "mem.v1.agent.a2.get")
		a1.refused(t, "mem.v1.agent.a2.put")
	})
	t.Run("sessions", func(t *testing.T) {
		a1.refused(t, "mem.v1.session.x.create")
	})
	t.Run("app and project scopes are read-only for agents", func(t *testing.T) {
		for _, op := range []string{"get", "list", "history", "search", "resolve"} {
			a1.allowed(t, "mem.v1.scope.project.p1."+op)
			a1.allowed(t, "mem.v1.scope.app.crm."+op)
		}
		for _, op := range []string{"put", "delete", "rollback", "configure"} {
			a1.refused(t, "mem.v1.scope.project.p1."+op)
			a1.refused(t, "mem.v1.scope.app.crm."+op)
		}
		admin.allowed(t, "mem.v1.scope.project.p1.put")
		admin.allowed(t, "mem.v1.scope.app.crm.put")
	})
	t.Run("subscriptions", func(t *testing.T) {
		for _, s := range []string{"mem.ev.agent.a2", "mem.ev.agent.a1", "mem.ev.>", "_INBOX.>", "_INBOX.a2.>", "mem.v1.agent.a1.get"} {
			sub, err := a1.nc.SubscribeSync(s)
			if err != nil {
				t.Fatal(err)
			}
			a1.violation(t, s)
			_ = sub.Unsubscribe()
		}
	})

	// An entry in agent a1's and a2's private scopes, written to the log as
	// the node's agent actor would.
	seq1 := appendAgentEntry(t, nodeConn, "a1")
	appendAgentEntry(t, nodeConn, "a2")

	t.Run("watch own agent", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := client.New(a1.nc).Watch(ctx, client.WatchAgent("a1"), 0)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		select {
		case ch, ok := <-w.Changes():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ch.Seq != seq1 || ch.ID != "a1" {
				t.Fatalf("change seq %d id %s, want %d a1", ch.Seq, ch.ID, seq1)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no change")
		}
		cancel()
		for range w.Changes() {
		}
		if err := w.Err(); err != nil {
			t.Fatal(err)
		}
		a1.noViolation(t) // create, pulls and delete were all allowed
	})
	t.Run("watch another agent", func(t *testing.T) {
		for _, filter := range []string{client.WatchAgent("a2"), client.WatchAll} {
			_, err := client.New(a1.nc).WithTimeout(time.Second).Watch(context.Background(), filter, 0)
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
				t.Fatalf("Watch(%s) = %v, want a timeout", filter, err)
			}
			a1.violation(t, "$JS.API.CONSUMER.CREATE."+events.StreamName+".") // name is random
		}
	})
	t.Run("consumer filter must match the create subject", func(t *testing.T) {
		// Allowed subject (own filter), but a config asking for a2's subject.
		req := `{"stream_name":"MEM","config":{"name":"sneaky","filter_subject":"mem.ev.agent.a2","ack_policy":"none","deliver_policy":"all"}}`
		msg, err := a1.nc.Request("$JS.API.CONSUMER.CREATE.MEM.sneaky.mem.ev.agent.a1", []byte(req), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(msg.Data), `"error"`) {
			t.Fatalf("server accepted a consumer on another agent's subject: %s", msg.Data)
		}
	})
}

func appendAgentEntry(t *testing.T, nc *nats.Conn, agent string) uint64 {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	log, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := events.NewCodec().Pack([]proto.Message{&memoryv1.EntryChanged{Entry: &memoryv1.Entry{
		Key: "secret", Value: []byte("only " + agent), Size: uint32(len("only " + agent)), Version: 1,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId: "put-" + agent, AggregateKind: events.KindAgent, AggregateId: agent,
		Version: 1, TimeUnixNano: time.Now().UnixNano(), Events: evs,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Append(ctx, events.AgentSubject(agent), 0, "put-"+agent, data)
	if err != nil {
		t.Fatal(err)
	}
	return res.Seq
}
