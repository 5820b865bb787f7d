package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api/consistency"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Error is an error reply from the service.
type Error struct {
	// Code is HTTP-like: 400, 403, 404, 409, 413, 503.
	Code    int
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("agentmem: %d %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("agentmem: %d %s", e.Code, e.Message)
}

// Code returns the service error code of err, or 0 if err is not an *Error.
func Code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Client talks to the memory service over one NATS connection.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
	// lastSeq is the highest stream sequence of this client's writes (shared
	// by copies made with WithTimeout): queries wait for it by default.
	lastSeq *atomic.Uint64
	// tokens are the consistency tokens of this client's writes, merged
	// (shared by copies): queries send them by default too.
	tokens *tokenSet
	// contexts holds the latest contexts got (shared by copies).
	contexts *contextCache
}

// New returns a client on nc (which the caller owns and closes).
func New(nc *nats.Conn) *Client {
	return &Client{nc: nc, timeout: DefaultTimeout, lastSeq: new(atomic.Uint64), tokens: &tokenSet{}, contexts: &contextCache{}}
}

// WithTimeout returns a copy of c whose calls without a context deadline use d.
func (c *Client) WithTimeout(d time.Duration) *Client { cc := *c; cc.timeout = d; return &cc }

// LastWriteSeq is the stream sequence of this client's latest acknowledged
// write; queries pass it as min_seq unless told otherwise, so a client
// always reads its own writes.
func (c *Client) LastWriteSeq() uint64 { return c.lastSeq.Load() }

// LastWriteConsistency is the consistency tokens of this client's
// acknowledged writes, merged (api/consistency: the highest sequence per
// log partition); queries pass it as consistency unless told otherwise, so
// a client reads its own writes on any node of a log in partitions.
func (c *Client) LastWriteConsistency() string { return c.tokens.get() }

// mutationReply is a reply carrying the version and sequence of a write.
type mutationReply interface {
	proto.Message
	GetResult() *memoryv1.MutationReply
}

// write sends a mutating request and records the sequence it was stored at.
func (c *Client) write(ctx context.Context, subject string, req proto.Message, reply mutationReply) error {
	err := c.call(ctx, subject, req, reply)
	c.recordSeq(reply.GetResult().GetSeq())
	c.tokens.add(reply.GetResult().GetConsistency())
	return err
}

// recordSeq raises the client's last write sequence to seq.
func (c *Client) recordSeq(seq uint64) {
	for {
		cur := c.lastSeq.Load()
		if seq <= cur || c.lastSeq.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// after is what a query waits for: minSeq and token as given, or when
// neither is, this client's last write's sequence and its writes' tokens.
func (c *Client) after(minSeq uint64, token string) (uint64, string) {
	if minSeq != 0 || token != "" {
		return minSeq, token
	}
	return c.lastSeq.Load(), c.tokens.get()
}

// callAfter sends query req, which waits for minSeq and token (set puts
// them on req), or for this client's writes when neither is given. A node
// that refuses what the client kept of its writes (400 on min_seq or
// consistency: the log moved to another layout, replay migrate-log
// --partitions, or was reset) makes the client forget it and ask once
// more without; a value the caller gave is refused as it is.
func (c *Client) callAfter(ctx context.Context, subject string, req, reply proto.Message, minSeq uint64, token string, set func(uint64, string)) error {
	set(c.after(minSeq, token))
	err := c.call(ctx, subject, req, reply)
	var e *Error
	if minSeq != 0 || token != "" || !errors.As(err, &e) || e.Code != 400 || (e.Field != "min_seq" && e.Field != "consistency") {
		return err
	}
	c.forget()
	set(0, "")
	return c.call(ctx, subject, req, reply)
}

// forget drops what the client kept of its writes.
func (c *Client) forget() {
	c.lastSeq.Store(0)
	c.tokens.set("")
}

// tokenSet is a merged consistency token list (safe for concurrent use).
type tokenSet struct {
	mu sync.Mutex
	s  string
}

func (t *tokenSet) add(token string) {
	if token == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s = consistency.Merge(t.s, token)
}

func (t *tokenSet) set(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s = s
}

func (t *tokenSet) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

func (c *Client) call(ctx context.Context, subject string, req, reply proto.Message) error {
	data, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("agentmem: encode %s: %w", subject, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	msg, err := c.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject, Data: data})
	if err != nil {
		return fmt.Errorf("agentmem: %s: %w", subject, err)
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		n, _ := strconv.Atoi(code)
		detail := &memoryv1.ErrorDetail{}
		if proto.Unmarshal(msg.Data, detail) != nil || detail.GetMessage() == "" {
			return &Error{Code: n, Message: msg.Header.Get("Nats-Service-Error")}
		}
		return &Error{Code: n, Field: detail.GetField(), Message: detail.GetMessage()}
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("agentmem: decode reply of %s: %w", subject, err)
	}
	return nil
}

func subject(id, op string) string { return "mem.v1.session." + id + "." + op }

// commandID sets a fresh command id on a request that has none.
func commandID(id *string) {
	if *id == "" {
		*id = uuid.NewString()
	}
}

// CreateSession creates session id.
func (c *Client) CreateSession(ctx context.Context, id string, req *memoryv1.CreateSessionRequest) (*memoryv1.CreateSessionReply, error) {
	if req == nil {
		req = &memoryv1.CreateSessionRequest{}
	}
	commandID(&req.CommandId)
	reply := &memoryv1.CreateSessionReply{}
	return reply, c.write(ctx, subject(id, "create"), req, reply)
}

// Append appends messages to session id in one command.
func (c *Client) Append(ctx context.Context, id string, req *memoryv1.AppendRequest) (*memoryv1.AppendReply, error) {
	commandID(&req.CommandId)
	reply := &memoryv1.AppendReply{}
	return reply, c.write(ctx, subject(id, "append"), req, reply)
}

// AppendMessages is Append with a fresh command id.
func (c *Client) AppendMessages(ctx context.Context, id string, msgs ...*memoryv1.MessageInput) (*memoryv1.AppendReply, error) {
	return c.Append(ctx, id, &memoryv1.AppendRequest{Messages: msgs})
}

// Get returns the session's status, version and counts.
func (c *Client) Get(ctx context.Context, id string) (*memoryv1.SessionInfo, error) {
	reply := &memoryv1.GetSessionReply{}
	if err := c.call(ctx, subject(id, "get"), &memoryv1.GetSessionRequest{}, reply); err != nil {
		return nil, err
	}
	return reply.GetSession(), nil
}

// Kernel changes the Kernel (or stages a ROM) with req's op, or reads it when no op is set.
func (c *Client) Kernel(ctx context.Context, id string, req *memoryv1.KernelRequest) (*memoryv1.KernelReply, error) {
	if req == nil {
		req = &memoryv1.KernelRequest{}
	}
	if req.GetOp() != nil {
		commandID(&req.CommandId)
	}
	reply := &memoryv1.KernelReply{}
	return reply, c.write(ctx, subject(id, "kernel"), req, reply)
}

// State reads or writes a "temp:" or "session:" key.
func (c *Client) State(ctx context.Context, id string, req *memoryv1.StateRequest) (*memoryv1.StateReply, error) {
	if req.GetOp() == memoryv1.StateOp_STATE_OP_SET || req.GetOp() == memoryv1.StateOp_STATE_OP_DELETE {
		commandID(&req.CommandId)
	}
	reply := &memoryv1.StateReply{}
	return reply, c.write(ctx, subject(id, "state"), req, reply)
}

// SetStatus pauses, resumes, terminates or archives the session.
func (c *Client) SetStatus(ctx context.Context, id string, action memoryv1.StatusAction, reason string) (*memoryv1.StatusReply, error) {
	req := &memoryv1.StatusRequest{Action: action, Reason: reason}
	commandID(&req.CommandId)
	reply := &memoryv1.StatusReply{}
	return reply, c.write(ctx, subject(id, "status"), req, reply)
}

// Recall reads the session's messages from swap, oldest first. A zero
// MinSeq and an empty Consistency wait for this client's writes.
func (c *Client) Recall(ctx context.Context, id string, req *memoryv1.RecallRequest) (*memoryv1.RecallReply, error) {
	if req == nil {
		req = &memoryv1.RecallRequest{}
	}
	reply := &memoryv1.RecallReply{}
	return reply, c.callAfter(ctx, subject(id, "recall"), req, reply, req.MinSeq, req.Consistency,
		func(seq uint64, token string) { req.MinSeq, req.Consistency = seq, token })
}

// Search ranks the session's (or its user's) messages by BM25 for a query.
func (c *Client) Search(ctx context.Context, id string, req *memoryv1.SearchRequest) (*memoryv1.SearchReply, error) {
	reply := &memoryv1.SearchReply{}
	return reply, c.callAfter(ctx, subject(id, "search"), req, reply, req.MinSeq, req.Consistency,
		func(seq uint64, token string) { req.MinSeq, req.Consistency = seq, token })
}

// Promote copies recalled messages into the promoted layer of the context.
func (c *Client) Promote(ctx context.Context, id string, messageIDs ...string) (*memoryv1.PromoteReply, error) {
	req := &memoryv1.PromoteRequest{MessageIds: messageIDs}
	req.MinSeq, req.Consistency = c.after(0, "")
	commandID(&req.CommandId)
	reply := &memoryv1.PromoteReply{}
	return reply, c.write(ctx, subject(id, "promote"), req, reply)
}

// ClearRecalled empties the promoted layer.
func (c *Client) ClearRecalled(ctx context.Context, id string) (*memoryv1.ClearRecalledReply, error) {
	req := &memoryv1.ClearRecalledRequest{}
	commandID(&req.CommandId)
	reply := &memoryv1.ClearRecalledReply{}
	return reply, c.write(ctx, subject(id, "clear_recalled"), req, reply)
}

// ListSessions lists sessions from the sessions index, by user or agent.
func (c *Client) ListSessions(ctx context.Context, req *memoryv1.ListSessionsRequest) (*memoryv1.ListSessionsReply, error) {
	reply := &memoryv1.ListSessionsReply{}
	return reply, c.callAfter(ctx, "mem.v1.sessions.list", req, reply, req.MinSeq, req.Consistency,
		func(seq uint64, token string) { req.MinSeq, req.Consistency = seq, token })
}
