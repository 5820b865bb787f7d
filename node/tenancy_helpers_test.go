package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
)

// The example multi-tenant configuration (examples/auth): accounts, service
// exports and imports, and the tenants file mapping them to principals.
const (
	tenantsNATSConf = "../examples/auth/nats.conf"
	tenantsFile     = "../examples/auth/tenants.json"
)

// tenantNode is a node running the example tenant configuration, and a
// connection inside its own account (the node user, full rights there) to
// look at the log as it is.
type tenantNode struct {
	n    *node.Node
	url  string
	js   jetstream.JetStream
	http string // the HTTP API's base URL
}

func startTenantNode(t *testing.T) *tenantNode {
	t.Helper()
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.Tenants = tenantsNATSConf, tenantsFile
		c.NATSUser, c.NATSPassword = "node", "node-secret"
		c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
		c.HTTPAddr = "127.0.0.1:0"
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &tenantNode{n: n, url: n.ClientURL(), js: js, http: "http://" + n.MetricsAddr()}
}

// tenant is one principal's connection.
type tenant struct {
	name string
	nc   *nats.Conn
	c    *client.Client
}

func (tn *tenantNode) as(t *testing.T, user, password string) *tenant {
	t.Helper()
	nc, err := nats.Connect(tn.url, nats.UserInfo(user, password), nats.Name(user),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return &tenant{name: user, nc: nc, c: client.New(nc)}
}

// outcome is what a request got: a service code (0: answered without
// error), or no answer at all.
type outcome struct {
	code  int // 0 ok, >0 the Nats-Service-Error-Code
	field string
	none  string // "no responders" or "timeout" when nothing answered
}

func (o outcome) String() string {
	switch {
	case o.none != "":
		return o.none
	case o.code == 0:
		return "ok"
	}
	return fmt.Sprintf("%d %s", o.code, o.field)
}

// do sends body to subject (with header values hdr, optional) and reports
// the outcome.
func (u *tenant) do(subject string, body proto.Message, hdr ...string) outcome {
	var data []byte
	if body != nil {
		data, _ = proto.Marshal(body)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	for i := 0; i+1 < len(hdr); i += 2 {
		msg.Header.Add(hdr[i], hdr[i+1])
	}
	rep, err := u.nc.RequestMsg(msg, 3*time.Second)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return outcome{none: "no responders"}
	case errors.Is(err, nats.ErrTimeout):
		return outcome{none: "timeout"}
	case err != nil:
		return outcome{none: err.Error()}
	}
	code, _ := strconv.Atoi(rep.Header.Get("Nats-Service-Error-Code"))
	field := rep.Header.Get("Nats-Service-Error")
	return outcome{code: code, field: field}
}

// digest is a fingerprint of what the log holds for each subject: the last
// message's sequence and a hash of its bytes, and the subject's message
// count. Equal digests before and after a case: nothing of the victim's
// changed.
func (tn *tenantNode) digest(t *testing.T, subjects ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := tn.js.Stream(ctx, "MEM")
	if err != nil {
		t.Fatalf("digest: stream MEM: %v", err)
	}
	out := ""
	for _, s := range subjects {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(s))
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.GetLastMsgForSubject(ctx, s)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			out += s + "=none;"
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("%s=%d/%d/%x;", s, info.State.Subjects[s], m.Sequence, sha256.Sum256(m.Data))
	}
	return out
}

// streamState is the whole log stream's first and last sequence and count.
func (tn *tenantNode) streamState(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := tn.js.Stream(ctx, "MEM")
	if err != nil {
		t.Fatalf("stream MEM: %v", err)
	}
	i, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("first %d last %d msgs %d consumers %d", i.State.FirstSeq, i.State.LastSeq, i.State.Msgs, i.State.Consumers)
}

// httpDo sends body to the HTTP API (method, path) with header values hdr
// (pairs; "Authorization" unset when absent) and reports the outcome: the
// HTTP status as the code (0 for 200) and the ErrorDetail's field.
func (tn *tenantNode) httpDo(method, path string, body []byte, hdr ...string) outcome {
	req, err := http.NewRequest(method, tn.http+path, bytes.NewReader(body))
	if err != nil {
		return outcome{none: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return outcome{none: err.Error()}
	}
	defer resp.Body.Close()
	var e struct {
		Field string `json:"field"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(data, &e)
	if resp.StatusCode == http.StatusOK {
		return outcome{}
	}
	return outcome{code: resp.StatusCode, field: e.Field}
}

// bearer is the Authorization header of a token of examples/auth/tenants.json.
func bearer(principal string) []string {
	return []string{"Authorization", "Bearer " + principal + "-http-token"}
}
