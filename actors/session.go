package actors

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sessionActor owns one session aggregate. Only its Receive touches it.
type sessionActor struct {
	dir     *Directory
	id      string
	subject string

	// state is nil until recovered from the snapshot and the log.
	state *segmented.State
	// snapVersion is the version of the last snapshot written or loaded.
	snapVersion uint64
	// temp holds "temp:" keys: this turn only, never persisted.
	temp map[string][]byte
	// tempTurn is the turn temp belongs to.
	tempTurn uint32
	// self is this actor's PID (set on Started).
	self *actor.PID
	// lastTime is the time stamped on the batch being stored.
	lastTime int64
}

func newSessionActor(d *Directory, id string) *sessionActor {
	return &sessionActor{dir: d, id: id, subject: events.SessionSubject(id), temp: map[string][]byte{}}
}

// Receive handles one message at a time.
func (a *sessionActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.self = ctx.Self()
		ctx.SetReceiveTimeout(a.dir.cfg.IdleTimeout)
	case *actor.ReceiveTimeout:
		a.passivate(ctx, nil)
	case *passivate:
		a.passivate(ctx, m.done)
	case *request:
		reply, err := a.handle(m.body)
		m.reply(reply, err)
		if errors.Is(err, ErrUnavailable) {
			// What we hold may be behind the log or ahead of it: let the
			// supervisor restart us (with backoff) and recover from the log.
			panic(err)
		}
	case *internalReq:
		if err := a.ensureRecovered(); err != nil {
			m.reply(nil, err)
			return
		}
		m.reply(a.state.Snapshot(), nil)
	case *rewritten:
		a.applyRewrite(m)
	}
}

// passivate snapshots, leaves the directory and poisons itself, so messages
// already queued are still handled first.
func (a *sessionActor) passivate(ctx actor.Context, done interface{ Done() }) {
	if done != nil {
		defer done.Done()
	}
	a.snapshot(true)
	if a.dir.release(a.id, ctx.Self()) {
		ctx.CancelReceiveTimeout()
		ctx.Poison(ctx.Self())
	}
}

func (a *sessionActor) env() segmented.Env {
	return segmented.Env{
		NowUnixNano: a.dir.deps.Now().UnixNano(),
		Tokenizer:   a.dir.deps.Tokenizer,
		Summarizer:  a.dir.deps.Summarizer,
	}
}

// handle routes one request; reads are answered from memory.
func (a *sessionActor) handle(body any) (proto.Message, error) {
	if err := a.ensureRecovered(); err != nil {
		return nil, err
	}
	switch req := body.(type) {
	case *memoryv1.CreateSessionRequest:
		res, err := a.mutate(req.GetCommandId(), func(s *segmented.State) ([]proto.Message, error) {
			return s.DecideCreate(req, a.id, a.env())
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.CreateSessionReply{Result: res, Session: a.state.Info()}, nil
	case *memoryv1.AppendRequest:
		return a.append(req)
	case *memoryv1.ContextRequest:
		if !a.state.Exists() {
			return nil, notFound()
		}
		return a.state.Context(), nil
	case *memoryv1.GetSessionRequest:
		if !a.state.Exists() {
			return nil, notFound()
		}
		return &memoryv1.GetSessionReply{Session: a.state.Info()}, nil
	case *memoryv1.KernelRequest:
		return a.kernel(req)
	case *memoryv1.StateRequest:
		return a.stateOp(req)
	case *memoryv1.StatusRequest:
		res, err := a.mutate(req.GetCommandId(), func(s *segmented.State) ([]proto.Message, error) {
			return s.DecideStatus(req)
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.StatusReply{Result: res, Status: a.state.Status()}, nil
	case *Promote:
		return a.promote(req)
	case *memoryv1.ClearRecalledRequest:
		res, err := a.mutate(req.GetCommandId(), func(s *segmented.State) ([]proto.Message, error) {
			return s.DecideClearPromoted()
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.ClearRecalledReply{Result: res, Usage: a.state.Usage()}, nil
	default:
		return nil, &segmented.Rejection{Code: 400, Field: "body", Reason: fmt.Sprintf("unsupported request %T", body)}
	}
}

func notFound() error {
	return &segmented.Rejection{Code: 404, Field: "session_id", Reason: "session does not exist"}
}

func (a *sessionActor) append(req *memoryv1.AppendRequest) (proto.Message, error) {
	var evs []proto.Message
	res, err := a.mutate(req.GetCommandId(), func(s *segmented.State) ([]proto.Message, error) {
		var err error
		evs, err = s.DecideAppend(req, a.env())
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	a.clearTempOnNewTurn()
	reply := &memoryv1.AppendReply{Result: res, Usage: a.state.Usage()}
	if !res.Duplicate {
		describeAppend(reply, evs)
	}
	return reply, nil
}

func (a *sessionActor) kernel(req *memoryv1.KernelRequest) (proto.Message, error) {
	if !a.state.Exists() {
		return nil, notFound()
	}
	var res *memoryv1.MutationReply
	if req.GetOp() != nil {
		var err error
		res, err = a.mutate(req.GetCommandId(), func(s *segmented.State) ([]proto.Message, error) {
			return s.DecideKernel(req, a.env())
		})
		if err != nil {
			return nil, err
		}
	}
	snap := a.state.Snapshot()
	return &memoryv1.KernelReply{Result: res, Kernel: snap.GetKernel(), Rom: snap.GetRom(), PendingRom: snap.GetPendingRom()}, nil
}
