package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sessionActor owns one session aggregate. Only its Receive touches it.
type sessionActor struct {
	core
	// temp holds "temp:" keys: this turn only, never persisted.
	temp map[string][]byte
	// tempTurn is the turn temp belongs to.
	tempTurn uint32
}

func newSessionActor(d *Directory, key, id string) *sessionActor {
	return &sessionActor{core: newCore(d, sessionKind, key, id), temp: map[string][]byte{}}
}

// st is the session state; valid after ensureRecovered.
func (a *sessionActor) st() *segmented.State { return a.m.(sessionModel).State }

// Receive handles one message at a time.
func (a *sessionActor) Receive(ctx actor.Context) {
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *request:
		a.serve(m, a.handle)
	case *rewritten:
		a.applyRewrite(m)
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
		res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			return a.st().DecideCreate(req, a.id, a.env())
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.CreateSessionReply{Result: res, Session: a.st().Info()}, nil
	case *memoryv1.AppendRequest:
		return a.append(req)
	case *memoryv1.ContextRequest:
		if !a.st().Exists() {
			return nil, notFound()
		}
		return a.st().Context(), nil
	case *memoryv1.GetSessionRequest:
		if !a.st().Exists() {
			return nil, notFound()
		}
		return &memoryv1.GetSessionReply{Session: a.st().Info()}, nil
	case *memoryv1.KernelRequest:
		return a.kernel(req)
	case *memoryv1.StateRequest:
		return a.stateOp(req)
	case *memoryv1.StatusRequest:
		res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			return a.st().DecideStatus(req)
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.StatusReply{Result: res, Status: a.st().Status()}, nil
	case *Promote:
		return a.promote(req)
	case snapshotReq:
		return a.st().Snapshot(), nil
	case *memoryv1.ClearRecalledRequest:
		res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			return a.st().DecideClearPromoted()
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.ClearRecalledReply{Result: res, Usage: a.st().Usage()}, nil
	default:
		return nil, &segmented.Rejection{Code: 400, Field: "body", Reason: fmt.Sprintf("unsupported request %T", body)}
	}
}

func notFound() error {
	return &segmented.Rejection{Code: 404, Field: "session_id", Reason: "session does not exist"}
}

func (a *sessionActor) append(req *memoryv1.AppendRequest) (proto.Message, error) {
	var (
		evs  []proto.Message
		jobs []rewriteJob
	)
	res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
		var err error
		evs, err = a.st().DecideAppend(req, a.env())
		if err == nil && a.dir.deps.Rewriter != nil {
			jobs = rewriteJobs(a.st(), evs)
		}
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	a.clearTempOnNewTurn()
	reply := &memoryv1.AppendReply{Result: res, Usage: a.st().Usage()}
	if !res.Duplicate {
		describeAppend(reply, evs)
		if len(jobs) > 0 && a.self != nil {
			a.startRewrites(a.self, jobs)
		}
	}
	return reply, nil
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

func (a *sessionActor) kernel(req *memoryv1.KernelRequest) (proto.Message, error) {
	if !a.st().Exists() {
		return nil, notFound()
	}
	var res *memoryv1.MutationReply
	if req.GetOp() != nil {
		var err error
		res, err = a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			return a.st().DecideKernel(req, a.env())
		})
		if err != nil {
			return nil, err
		}
	}
	kernel, rom, pending := a.st().Kernel()
	return &memoryv1.KernelReply{Result: res, Kernel: kernel, Rom: rom, PendingRom: pending}, nil
}
