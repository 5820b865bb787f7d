package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// decideFunc is one command's pure decision against the current state.
type decideFunc func(*segmented.State) ([]proto.Message, error)

// mutate runs decide → append → apply for one command. A command id seen
// before answers with its original result (duplicate) and appends nothing.
func (a *sessionActor) mutate(commandID string, decide decideFunc) (*memoryv1.MutationReply, error) {
	if commandID == "" {
		commandID = uuid.NewString()
	} else if err := events.ValidateID("command_id", commandID); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if r, ok := a.state.LookupCommand(commandID); ok {
			return &memoryv1.MutationReply{Version: r.GetVersion(), Seq: r.GetSeq(), Duplicate: true}, nil
		}
		evs, err := decide(a.state)
		if err != nil {
			var rej *segmented.Rejection
			if errors.As(err, &rej) {
				a.dir.deps.Metrics.Rejections.WithLabelValues(fmt.Sprint(rej.Code)).Inc()
			}
			return nil, err
		}
		if len(evs) == 0 {
			return &memoryv1.MutationReply{Version: a.state.Version(), Seq: a.state.LastSeq()}, nil
		}
		res, err := a.store(commandID, evs)
		switch {
		case err == nil && !res.Duplicate:
			var jobs []rewriteJob
			if a.dir.deps.Rewriter != nil {
				jobs = rewriteJobs(a.state, evs)
			}
			meta := segmented.Meta{CommandID: commandID, Version: a.state.Version() + 1, Seq: res.Seq, TimeUnixNano: a.lastTime}
			if err := a.state.Apply(meta, evs); err != nil {
				// The batch is stored but cannot be applied: our state is
				// not to be trusted; restart and recover from the log.
				return nil, fmt.Errorf("%w: apply stored batch %d: %v", ErrUnavailable, res.Seq, err)
			}
			a.snapshot(false)
			if len(jobs) > 0 && a.self != nil {
				a.startRewrites(a.self, jobs)
			}
			return &memoryv1.MutationReply{Version: a.state.Version(), Seq: res.Seq}, nil
		case err == nil && res.Duplicate, errors.Is(err, events.ErrConflict):
			// Someone (another node, or our own earlier attempt whose ack was
			// lost) moved the aggregate: reload and decide once more.
			a.dir.deps.Metrics.Conflicts.Inc()
			if attempt > 0 {
				return nil, &segmented.Rejection{Code: 409, Field: "session_id",
					Reason: "the session was changed concurrently by another writer; retry"}
			}
			if err := a.reload(); err != nil {
				return nil, err
			}
		default:
			a.dir.deps.Metrics.StoreFailures.Inc()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
}

// store appends one batch, fenced by the aggregate's last sequence.
func (a *sessionActor) store(commandID string, evs []proto.Message) (events.AppendResult, error) {
	deps := a.dir.deps
	packed, err := deps.Codec.Pack(evs)
	if err != nil {
		return events.AppendResult{}, err
	}
	now := deps.Now().UnixNano()
	a.lastTime = now
	batch := &memoryv1.EventBatch{
		CommandId:     commandID,
		AggregateKind: "session",
		AggregateId:   a.id,
		Version:       a.state.Version() + 1,
		TimeUnixNano:  now,
		SchemaVersion: events.SchemaVersion,
		Events:        packed,
	}
	data, err := events.EncodeBatch(batch)
	if err != nil {
		return events.AppendResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.dir.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	// Nats-Msg-Id deduplicates stream-wide: scope the command id to the
	// aggregate so two sessions may use the same command id.
	res, err := deps.Log.Append(ctx, a.subject, a.state.LastSeq(), "session."+a.id+"."+commandID, data)
	deps.Metrics.AppendLatency.Observe(time.Since(start).Seconds())
	return res, err
}

// describeAppend fills the per-message part of an append reply from the
// events that were stored.
func describeAppend(reply *memoryv1.AppendReply, evs []proto.Message) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case *memoryv1.MessagesAppended:
			for _, m := range e.GetMessages() {
				reply.MessageIds = append(reply.MessageIds, m.GetId())
				reply.Tokens = append(reply.Tokens, m.GetTokens())
			}
		case *memoryv1.L1Summarized, *memoryv1.L1Evicted:
			reply.Compressions++
		}
	}
}
