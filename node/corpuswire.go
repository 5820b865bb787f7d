package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/erasure"
)

// corpusCall is a read asked of a corpus partition's owner (JSON; proto
// messages inside as proto binary, so a remote answer equals the local
// one bit for bit, scores included).
type corpusCall struct {
	Method string `json:"method"`
	// Wait is what the owner's file must have applied, per log partition,
	// before it reads (the caller's position; LookupCommand's covered
	// sequence); WaitMS bounds that wait.
	Wait   []uint64 `json:"wait,omitempty"`
	WaitMS int64    `json:"wait_ms,omitempty"`

	ID        string   `json:"id,omitempty"`   // session, user, owner, scope id, aggregate id
	Kind      string   `json:"kind,omitempty"` // aggregate kind, scope name
	Query     string   `json:"query,omitempty"`
	Except    string   `json:"except,omitempty"`
	Key       string   `json:"key,omitempty"`
	Offset    int      `json:"offset,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Seq       uint64   `json:"seq,omitempty"`
	IDs       []string `json:"ids,omitempty"`
	Sum       []byte   `json:"sum,omitempty"`
	Scope     int32    `json:"scope,omitempty"`
	Summaries bool     `json:"summaries,omitempty"`
	Req       []byte   `json:"req,omitempty"` // a request message, proto binary
}

// corpusReply is an owner's answer. Slices keep nil apart from empty.
type corpusReply struct {
	Err  *corpusErr         `json:"err,omitempty"`
	Msgs [][]byte           `json:"msgs"` // proto binary
	Strs []string           `json:"strs"`
	Refs []erasure.EntryRef `json:"refs"`
	N    uint64             `json:"n,omitempty"`
	I64  int64              `json:"i64,omitempty"`
	OK   bool               `json:"ok,omitempty"`
	Text string             `json:"text,omitempty"`
	Next string             `json:"next,omitempty"`
}

// corpusErr is an error across the hop: an *api.Error (API) keeps its
// code, field and message; any other error its text.
type corpusErr struct {
	API     bool   `json:"api,omitempty"`
	Code    int    `json:"code,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func toCorpusErr(err error) *corpusErr {
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return &corpusErr{API: true, Code: ae.Code, Field: ae.Field, Message: ae.Message}
	}
	return &corpusErr{Message: err.Error()}
}

func (e *corpusErr) err() error {
	if e == nil {
		return nil
	}
	if e.API {
		return &api.Error{Code: e.Code, Field: e.Field, Message: e.Message}
	}
	return errors.New(e.Message)
}

// putMsgs encodes messages (nil stays nil).
func putMsgs[M proto.Message](ms []M) ([][]byte, error) {
	if ms == nil {
		return nil, nil
	}
	out := make([][]byte, len(ms))
	for i, m := range ms {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// getMsgs decodes messages made by newM (nil stays nil).
func getMsgs[M proto.Message](bs [][]byte, newM func() M) ([]M, error) {
	if bs == nil {
		return nil, nil
	}
	out := make([]M, len(bs))
	for i, b := range bs {
		out[i] = newM()
		if err := proto.Unmarshal(b, out[i]); err != nil {
			return nil, fmt.Errorf("node: corpus reply: %w", err)
		}
	}
	return out, nil
}

// getMsg decodes the one message of a reply into m (false: none).
func getMsg(rep *corpusReply, m proto.Message) (bool, error) {
	if len(rep.Msgs) == 0 {
		return false, nil
	}
	if err := proto.Unmarshal(rep.Msgs[0], m); err != nil {
		return false, fmt.Errorf("node: corpus reply: %w", err)
	}
	return true, nil
}

// corpusRetryPause is the pause between two requests no owner answered.
const corpusRetryPause = 50 * time.Millisecond

// request asks corpus partition part's owner, again while no node serves
// it (no responders, a timeout) until r.timeout (or ctx) ends: then a 503
// naming the partition.
func (r *corpusReadModel) request(ctx context.Context, part int, call corpusCall) (*corpusReply, error) {
	data, err := json.Marshal(call)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(r.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	subject := corpusSubject(part)
	for {
		msg, err := r.nc.RequestWithContext(ctx, subject, data)
		if err == nil {
			rep := new(corpusReply)
			if err := json.Unmarshal(msg.Data, rep); err != nil {
				return nil, fmt.Errorf("node: corpus partition %d answered %q: %w", part, truncate(msg.Data), err)
			}
			return rep, nil
		}
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			return nil, &api.Error{Code: 503, Message: fmt.Sprintf("corpus partition %d of %d: %v; retry", part, r.parts, err)}
		}
		t := time.NewTimer(corpusRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &api.Error{Code: 503, Message: fmt.Sprintf("corpus partition %d of %d: no node served it within %s; retry", part, r.parts, r.timeout)}
		case <-t.C:
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// waitBound is how long an owner waits for the caller's position: at
// most corpusWaitBound, and half what is left of the request, so that it
// answers (a 503 naming what it lacks) before the caller gives up.
func (r *corpusReadModel) waitBound(ctx context.Context) time.Duration {
	left := r.timeout
	if d, ok := ctx.Deadline(); ok {
		left = min(left, time.Until(d))
	}
	return max(min(corpusWaitBound, left/2), time.Millisecond)
}

// do runs one read routed by rt: in place on a local file (local), or
// asked of the owner (call, its answer decoded by remote). Either way the
// file first reaches call.Wait (the caller's position when nil).
func (r *corpusReadModel) do(ctx context.Context, rt route, call corpusCall, local func(readModel) error, remote func(*corpusReply) error) error {
	if rt.anyLocal {
		f, ok := r.local.Any()
		if !ok {
			return errNoCorpusFile
		}
		return local(r.readModelOf(f))
	}
	if call.Wait == nil {
		call.Wait = r.position()
	}
	bound := r.waitBound(ctx)
	if f, ok := r.local.File(rt.part); ok {
		if err := waitCorpus(ctx, f, rt.part, call.Wait, bound); err != nil {
			return err
		}
		return local(r.readModelOf(f))
	}
	if call.WaitMS == 0 {
		call.WaitMS = bound.Milliseconds()
	}
	rep, err := r.request(ctx, rt.part, call)
	if err != nil {
		return err
	}
	if rep.Err != nil {
		return rep.Err.err()
	}
	return remote(rep)
}

// waitCorpus waits, at most bound, until file f (corpus partition part)
// applied targets (per log partition); else a 503 naming what it lacks.
func waitCorpus(ctx context.Context, f corpusFile, part int, targets []uint64, bound time.Duration) error {
	behind := false
	for i, t := range targets {
		if i < f.p.Partitions() && f.p.AppliedSeqOf(i) < t {
			behind = true
		}
	}
	if !behind {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := f.p.WaitForAll(wctx, targets); err != nil {
		for i, t := range targets {
			if i < f.p.Partitions() && f.p.AppliedSeqOf(i) < t {
				return &api.Error{Code: 503, Message: fmt.Sprintf("corpus partition %d has applied %d of log partition %d, not yet %d (waited %s); retry", part, f.p.AppliedSeqOf(i), i, t, bound)}
			}
		}
	}
	return nil
}
