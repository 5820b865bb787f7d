package actors

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// sessionActor owns one session aggregate. Only its Receive touches it.
type sessionActor struct {
	core
	// temp holds "temp:" keys: this turn only, never persisted.
	temp map[string][]byte
	// tempTurn is the turn temp belongs to.
	tempTurn uint32
	// later is the user message whose sections the session awaits (see
	// Later), with the requests it holds meanwhile.
	later awaiting
}

func newSessionActor(d *Directory, key, id string) *sessionActor {
	return &sessionActor{core: newCore(d, sessionKind, key, id), temp: map[string][]byte{}}
}

// st is the session state; valid after ensureRecovered.
func (a *sessionActor) st() *segmented.State { return a.m.(sessionModel).State }

// Receive handles one message at a time.
func (a *sessionActor) Receive(ctx actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			// A storage failure restarts the actor: what it holds is
			// answered first, never dropped.
			err, ok := r.(error)
			if !ok {
				err = fmt.Errorf("%w: %v", ErrUnavailable, r)
			}
			a.failHeld(err)
			panic(r)
		}
	}()
	switch ctx.Message().(type) {
	case *actor.ReceiveTimeout, *passivate:
		if a.later.id != "" {
			// Leaving: what it holds is served first, without the sections.
			a.expired(a.later.id)
			a.releaseHeld()
		}
	}
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *request:
		if endsSession(m.body) {
			m = &request{who: m.who, body: m.body, reply: a.endScopeThen(m.reply)}
		}
		if !a.hold(m) {
			a.serveRequest(m)
		}
	case *laterExpired:
		a.expired(m.id)
	case *rewritten:
		a.applyRewrite(m)
	}
	a.releaseHeld()
}

func (a *sessionActor) serveRequest(m *request) {
	a.serve(m, func(body any) (proto.Message, error) { return a.handle(m.who, body) })
}

func (a *sessionActor) env() segmented.Env {
	return segmented.Env{
		NowUnixNano: a.dir.deps.Now().UnixNano(),
		Tokenizer:   a.dir.deps.Tokenizer,
		Summarizer:  a.dir.deps.Summarizer,
		Libraries:   a.dir.deps.Libraries,
	}
}

// handle routes one request of who (nil: the node itself) once who may
// reach the session; reads are answered from memory.
func (a *sessionActor) handle(who *tenancy.Caller, body any) (proto.Message, error) {
	if req, ok := body.(*memoryv1.EraseAggregate); ok && who == nil {
		// Needs no state, and must not wait for one: an erase killed after
		// its purge leaves a snapshot past what the log holds, which
		// activation refuses; the erase resumed finishes it.
		clear(a.temp)
		return a.erase(req)
	}
	if err := a.ensureRecovered(); err != nil {
		return nil, err
	}
	if err := a.authorize(who, body); err != nil {
		return nil, err
	}
	switch req := body.(type) {
	case *memoryv1.EraseAggregate:
		clear(a.temp)
		return a.erase(req)
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
	case *Append:
		if req.Later != nil {
			return a.appendLater(req)
		}
		return a.append(req.Request)
	case *Assemble:
		return a.assemble(req)
	case *memoryv1.ContextRequest:
		st := a.st()
		if !st.Exists() {
			return nil, notFound()
		}
		if v := req.GetIfVersion(); v != 0 && v == st.Version() && !st.MemoryByReference() {
			// The context is a function of the version (built once per
			// version): the caller's copy is current. Not when its memory
			// section refers to entries: an erasure of one changes the
			// context, not the session's version.
			return &memoryv1.ContextReply{SessionId: a.id, Version: v, Seq: st.LastSeq(), NotModified: true}, nil
		}
		return st.ContextAs(req.GetFormat()), nil
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

// endsSession reports whether body is a status change that leaves the
// session TERMINATED or ARCHIVED.
func endsSession(body any) bool {
	req, ok := body.(*memoryv1.StatusRequest)
	return ok && (req.GetAction() == memoryv1.StatusAction_STATUS_ACTION_TERMINATE || req.GetAction() == memoryv1.StatusAction_STATUS_ACTION_ARCHIVE)
}

// endScopeThen wraps the reply of a terminate or archive: when the session
// is TERMINATED or ARCHIVED after it (stored now, a retry of a stored
// command, or refused because it already was), the session:<id> scope's
// actor first ends its live entries (EndSessionScope), then reply is called.
// Session and scope share the id, so the same node serves both. A scope
// that cannot store its END tombstones answers the caller's reply with its
// error (the status change itself is stored): retrying the terminate, or
// the archive that follows, sends the end again.
func (a *sessionActor) endScopeThen(reply ReplyFunc) ReplyFunc {
	return func(r proto.Message, err error) {
		if a.m == nil || errors.Is(err, ErrUnavailable) {
			reply(r, err)
			return
		}
		if st := a.st().Status(); st != memoryv1.SessionStatus_SESSION_STATUS_TERMINATED && st != memoryv1.SessionStatus_SESSION_STATUS_ARCHIVED {
			reply(r, err)
			return
		}
		if derr := a.dir.DispatchScope(sharedmem.KindSession, a.id, nil, &EndSessionScope{}, func(_ proto.Message, serr error) {
			if serr != nil && err == nil {
				r, err = nil, fmt.Errorf("the session's status is stored, but its session scope's entries were not ended (retry): %w", serr)
			}
			reply(r, err)
		}); derr != nil {
			reply(r, err)
		}
	}
}

// authorize checks that who may do body to this session: create it for its
// own user or agent, or reach it as its user or agent (writes need the
// writer role). The check runs here because only the actor knows the
// session's owner as of the last write (the projection may lag).
func (a *sessionActor) authorize(who *tenancy.Caller, body any) error {
	if who == nil {
		return nil
	}
	if req, ok := body.(*memoryv1.CreateSessionRequest); ok && !a.st().Exists() {
		return who.CreateSession(req.GetUserId(), req.GetAgentId(), req.GetProject(), req.GetApp(), req.GetAgentType())
	}
	if !a.st().Exists() {
		return nil // every operation answers 404
	}
	user, agent := a.st().Owner()
	return who.Session(a.id, user, agent, isSessionWrite(body))
}

// isSessionWrite reports whether body changes the session.
func isSessionWrite(body any) bool { return !IsRead(body) }

// IsRead reports whether body only reads an aggregate: session context,
// get, snapshot, a kernel or state request without a mutating op, an
// entry get, list or history. Anything else may write (the node refuses
// those while the log is unavailable; tenancy checks them as writes).
func IsRead(body any) bool {
	switch req := body.(type) {
	case *memoryv1.ContextRequest, *memoryv1.GetSessionRequest, snapshotReq,
		*memoryv1.GetEntryRequest, *memoryv1.ListEntriesRequest, *memoryv1.HistoryRequest, *ExportPage:
		return true
	case *memoryv1.KernelRequest:
		return req.GetOp() == nil
	case *memoryv1.StateRequest:
		return req.GetOp() == memoryv1.StateOp_STATE_OP_GET || req.GetOp() == memoryv1.StateOp_STATE_OP_LIST
	}
	return false
}

func notFound() error {
	return &segmented.Rejection{Code: 404, Field: "session_id", Reason: "session does not exist"}
}

// Append is an append the node handed on. With Later set, it is stored
// without its context sections, which come in an Assemble once the node
// has searched for their candidates (see Later); without, a user message's
// sections are decided with no candidates (an append without a search: no
// projection on the node, or a session that moved between nodes).
type Append struct {
	Request *memoryv1.AppendRequest
	Later   *Later
}

// NeedCandidates answers an Assemble whose candidates were searched for
// another key than the session's: nothing was stored.
type NeedCandidates struct{ Key segmented.CandidateKey }

func (e *NeedCandidates) Error() string {
	return "actors: the candidates were not searched for the session's current settings"
}

func (a *sessionActor) append(req *memoryv1.AppendRequest) (proto.Message, error) {
	reply, err := a.appendDecided(req, func() ([]proto.Message, error) { return a.st().DecideAppend(req, a.env()) })
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// appendDecided stores the append req as decide decides it.
func (a *sessionActor) appendDecided(req *memoryv1.AppendRequest, decide func() ([]proto.Message, error)) (*memoryv1.AppendReply, error) {
	var (
		evs  []proto.Message
		jobs []rewriteJob
	)
	res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
		var err error
		evs, err = decide()
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
	if res.Duplicate {
		a.describeDuplicate(reply)
		return reply, nil
	}
	describeAppend(reply, evs)
	if len(jobs) > 0 && a.self != nil {
		a.startRewrites(a.self, jobs)
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
