package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// SessionScopeKind is the aggregate kind (and subject token) of the
// session:<id> scope: mem.ev.session.<id> is the session aggregate itself,
// so the scope's entries live on mem.ev.session_scope.<id>.
const SessionScopeKind = "session_scope"

// AggregateKind is the log kind of a scope kind.
func AggregateKind(k sharedmem.Kind) string {
	if k == sharedmem.KindSession {
		return SessionScopeKind
	}
	return string(k)
}

// scopeModel adapts sharedmem.State to the pipeline.
type scopeModel struct{ *sharedmem.State }

func (m scopeModel) Exists() bool { return m.State.Version() > 0 }

func (m scopeModel) apply(cmd string, digest []byte, version, seq uint64, t int64, evs []proto.Message) error {
	return m.State.Apply(sharedmem.Meta{CommandID: cmd, Digest: digest, Version: version, Seq: seq, TimeUnixNano: t}, evs)
}

func (m scopeModel) marshal() ([]byte, error) { return m.State.MarshalSnapshot(deterministic) }

func scopeModelKind(k sharedmem.Kind) modelKind {
	return modelKind{
		kind:  AggregateKind(k),
		empty: func(id string) model { return scopeModel{sharedmem.New(k, id)} },
		restore: func(data []byte) (model, error) {
			snap := &memoryv1.ScopeSnapshot{}
			if err := proto.Unmarshal(data, snap); err != nil {
				return nil, err
			}
			return scopeModel{sharedmem.FromOwnedSnapshot(snap)}, nil
		},
	}
}

// CopyEntry is the publish command: put src (a plain entry read from another
// scope) into this scope as a new version.
type CopyEntry struct {
	CommandID string
	Entry     *memoryv1.Entry
	By        string
}

// ReadScopeConfig asks a scope actor for its configuration (answered with
// a ConfigureScopeReply without a result): the node's own read.
type ReadScopeConfig struct{}

// expireTick wakes a scope actor when its earliest entry expires.
type expireTick struct{}

// EndSessionScope is the command a session actor sends the actor of its
// session:<id> scope once the session is TERMINATED or ARCHIVED: every live
// entry gets an END tombstone (sharedmem.DecideEnd), so session-scope
// entries end with the session. Sent again on a retried
// terminate and on archive, so a crash between the two batches heals; a
// scope with nothing live stores nothing. The reply is a MutationReply.
type EndSessionScope struct{}

// scopeActor owns one scope aggregate (agent:<id> or a shared scope).
type scopeActor struct {
	core
	kind sharedmem.Kind
	// timer fires expireTick at timerAt (unix nanos); nil when none is due.
	timer   *time.Timer
	timerAt int64
}

// DispatchScope sends body to the actor of scope kind:id, spawning it if
// needed. Ids must be valid (sharedmem.ScopeID).
//
// Access to a scope follows from its kind and id alone, so the API checks it
// before dispatching; who attributes the command (its principal is the
// writer).
func (d *Directory) DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply ReplyFunc) error {
	mk := scopeModelKind(kind)
	return d.dispatch(mk.kind+"/"+id, func(key string) actor.Actor {
		return &scopeActor{core: newCore(d, mk, key, id), kind: kind}
	}, &request{who: who, body: body, reply: reply})
}

func (a *scopeActor) st() *sharedmem.State { return a.m.(scopeModel).State }

// Receive handles one message at a time.
func (a *scopeActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Stopping, *actor.Restarting:
		a.stopTimer()
	}
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *request:
		a.serve(m, func(body any) (proto.Message, error) { return a.handle(m.who, body) })
	case *expireTick:
		a.timer, a.timerAt = nil, 0
		if a.ensureRecovered() == nil {
			if err := a.expire(); errors.Is(err, ErrUnavailable) {
				panic(err)
			}
		}
	}
}

func (a *scopeActor) env() sharedmem.Env {
	return sharedmem.Env{NowUnixNano: a.dir.deps.Now().UnixNano(), EpisodicTTLSeconds: int64(a.dir.cfg.EpisodicTTL / time.Second)}
}

// writeEnv is env for a write by who: a tenant's write to a shared scope
// evicts only its own entries (sharedmem.Env.EvictOwn); an admin's, the
// node's and an agent's write to its own scope evict as the scope's
// configuration says.
func (a *scopeActor) writeEnv(who *tenancy.Caller) sharedmem.Env {
	env := a.env()
	env.EvictOwn = who != nil && !who.Admin() && a.kind != sharedmem.KindAgent
	return env
}

// expire stores EXPIRE tombstones for entries whose time has come, then
// schedules the next wake-up.
func (a *scopeActor) expire() error {
	now := a.dir.deps.Now().UnixNano()
	if next := a.st().NextExpiry(); next != 0 && next <= now {
		if _, err := a.mutate(uuid.NewString(), func() ([]proto.Message, error) {
			return a.st().DecideExpire(sharedmem.Env{NowUnixNano: now}), nil
		}); err != nil {
			return err
		}
	}
	a.schedule()
	return nil
}

// schedule arms the timer for the earliest expiry (expiry is an event the
// actor emits; a passivated scope expires its entries when it is next
// activated, and reads hide expired entries meanwhile).
func (a *scopeActor) schedule() {
	next := a.st().NextExpiry()
	if next == 0 || next == a.timerAt {
		return
	}
	a.stopTimer()
	self, d := a.self, a.dir
	a.timerAt = next
	a.timer = time.AfterFunc(time.Duration(max(next-d.deps.Now().UnixNano(), 0)), func() { d.send(self, &expireTick{}) })
}

func (a *scopeActor) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer, a.timerAt = nil, 0
	}
}

// handle routes one request of who (nil: the node itself).
func (a *scopeActor) handle(who *tenancy.Caller, body any) (proto.Message, error) {
	if req, ok := body.(*memoryv1.EraseAggregate); ok && req.GetKey() == "" && len(req.GetKeySha256()) == 0 {
		// A whole-scope erase needs no state, and must not wait for one:
		// an erase killed after its purge leaves a snapshot past what the
		// log holds, which activation refuses; the erase resumed finishes
		// it.
		a.stopTimer()
		return a.erase(req)
	}
	if err := a.ensureRecovered(); err != nil {
		return nil, err
	}
	if err := a.expire(); err != nil {
		return nil, err
	}
	if reply, ok, err := a.handleNamespace(who, body); ok {
		return reply, err
	}
	now := a.dir.deps.Now().UnixNano()
	switch req := body.(type) {
	case *memoryv1.CompactAggregate:
		return a.compact(req)
	case *memoryv1.EraseAggregate:
		return a.eraseEntry(req) // a whole-scope erase is served above
	case *memoryv1.PutEntryRequest:
		if err := a.checkQuota(who, req.GetBy(), req.GetKey(), len(req.GetValue()), now); err != nil {
			return nil, err
		}
		return a.write(req.GetCommandId(), req.GetKey(), func() ([]proto.Message, error) {
			return a.st().DecidePut(req, req.GetBy(), a.writeEnv(who))
		})
	case *memoryv1.DeleteEntryRequest:
		return a.write(req.GetCommandId(), req.GetKey(), func() ([]proto.Message, error) {
			return a.st().DecideDelete(req, req.GetBy(), a.env())
		})
	case *memoryv1.RollbackEntryRequest:
		// A rollback restores a stored value: it counts like a put of it.
		if n, ok := a.st().StoredLen(req.GetKey(), req.GetToVersion()); ok {
			if err := a.checkQuota(who, req.GetBy(), req.GetKey(), n, now); err != nil {
				return nil, err
			}
		}
		return a.write(req.GetCommandId(), req.GetKey(), func() ([]proto.Message, error) {
			return a.st().DecideRollback(req, req.GetBy(), a.writeEnv(who))
		})
	case *CopyEntry:
		if err := a.checkQuota(who, req.By, req.Entry.GetKey(), len(req.Entry.GetValue()), now); err != nil {
			return nil, err
		}
		return a.write(req.CommandID, req.Entry.GetKey(), func() ([]proto.Message, error) {
			return a.st().DecideCopy(req.Entry, req.By, a.writeEnv(who))
		})
	case *EndSessionScope:
		if who != nil || a.kind != sharedmem.KindSession {
			return nil, &sharedmem.Rejection{Code: 400, Field: "body", Reason: "only a session's actor ends its session scope"}
		}
		res, err := a.mutate("", func() ([]proto.Message, error) { return a.st().DecideEnd(a.env()), nil })
		if err != nil {
			return nil, err
		}
		a.schedule()
		return res, nil
	case *memoryv1.ConfigureScopeRequest:
		// The API checks this first; the actor holds the rule too, so no
		// other path to the scope configures it for a non-admin.
		if who != nil {
			if err := who.Configure(string(a.kind), a.id); err != nil {
				return nil, err
			}
		}
		res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
			return a.st().DecideConfigure(req, a.env())
		})
		if err != nil {
			return nil, err
		}
		return &memoryv1.ConfigureScopeReply{Result: res, Config: a.st().Config()}, nil
	case ReadScopeConfig:
		return &memoryv1.ConfigureScopeReply{Config: a.st().Config()}, nil
	case *memoryv1.GetEntryRequest:
		e, err := a.st().Get(req.GetKey(), req.GetVersion(), now)
		if err != nil {
			return nil, err
		}
		return &memoryv1.EntryReply{Entry: e}, nil
	case *memoryv1.ListEntriesRequest:
		entries, next, err := a.st().List(req, now)
		if err != nil {
			return nil, err
		}
		return &memoryv1.ListEntriesReply{Entries: entries, NextPageToken: next}, nil
	case *memoryv1.HistoryRequest:
		versions, err := a.st().History(req.GetKey())
		if err != nil {
			return nil, err
		}
		return &memoryv1.HistoryReply{Versions: versions}, nil
	default:
		return nil, &sharedmem.Rejection{Code: 400, Field: "body", Reason: fmt.Sprintf("unsupported request %T", body)}
	}
}

// write runs one entry mutation and answers with the key's newest version
// (a tombstone after a delete).
func (a *scopeActor) write(commandID, key string, decide func() ([]proto.Message, error)) (proto.Message, error) {
	var version uint64
	res, err := a.mutate(commandID, func() ([]proto.Message, error) {
		evs, err := decide()
		for _, ev := range evs {
			if e, ok := ev.(*memoryv1.EntryChanged); ok && e.GetEntry().GetKey() == key {
				version = e.GetEntry().GetVersion()
			}
		}
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	a.schedule()
	reply := &memoryv1.EntryReply{Result: res}
	if res.Duplicate {
		// The original reply showed the version the command wrote.
		version = a.writtenVersion(res.GetSeq(), key)
	}
	if version != 0 {
		if e, err := a.st().Get(key, version, a.dir.deps.Now().UnixNano()); err == nil {
			reply.Entry = e
			reply.UnindexedBytes = sharedmem.Unindexed(e) // what search will not see (the projection's cap)
		}
	}
	return reply, nil
}

// checkQuota refuses a write by who, attributed to by (an entry's
// updated_by), that would take what by holds in this scope past who's
// limits (tenancy.Limits): more live entries than max_entries_per_scope, or
// more bytes of live values (as stored; this value as sent or as stored
// for a rollback, an upper bound) than max_bytes_per_scope. The quota is
// per writer, not per scope: on a shared scope one member's entries never
// count against another's. Answered 413 naming the limit. Admins and the
// node itself are not bounded.
func (a *scopeActor) checkQuota(who *tenancy.Caller, by, key string, valueLen int, now int64) error {
	if who == nil || who.Admin() {
		return nil
	}
	st, l := a.st(), who.Limits
	had, after := st.WriterUsage(by), st.WriterUsageAfter(by, key, valueLen, now)
	if after.Entries > had.Entries && after.Entries > l.MaxEntriesPerScope {
		return &sharedmem.Rejection{Code: 413, Field: "max_entries_per_scope",
			Reason: fmt.Sprintf("this writer holds %d live entries in the scope, the most it may (entries of other writers do not count)", had.Entries)}
	}
	if after.Bytes > had.Bytes && after.Bytes > l.MaxBytesPerScope {
		return &sharedmem.Rejection{Code: 413, Field: "max_bytes_per_scope",
			Reason: fmt.Sprintf("this writer holds %d bytes of live values in the scope; %d more would pass its %d", had.Bytes, valueLen, l.MaxBytesPerScope)}
	}
	return nil
}
