package erasure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Actors carries out one aggregate's removal: the actor of a session or a
// scope, sent an EraseAggregate or a CompactAggregate (with no caller: the
// node asks), answers an EraseReceipt. The node's placed dispatch and
// actors.Directory implement it.
type Actors interface {
	Dispatch(sessionID string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
	DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

// Data erases one large-data object under the removal base names (its id,
// reason, target, who and why), as largedata.Store.Erase does, and returns
// the removal's completion sequence and the messages removed.
type Data interface {
	Erase(ctx context.Context, id string, base *memoryv1.LogRemoval) (seq, messages uint64, err error)
}

// ReadModel is what a plan is read from (the projection), and what an
// erase waits for before it answers.
type ReadModel interface {
	// WaitFor returns once the read model applied log sequence seq.
	WaitFor(ctx context.Context, seq uint64) error
	ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error)
	// DataOwnedBy lists the large data owned by owner ("session:<id>").
	DataOwnedBy(owner string) ([]string, error)
	// EntriesWithMetadata lists the entries any held version of which
	// carries metadata name = value.
	EntriesWithMetadata(name, value string) ([]EntryRef, error)
}

// Errors of the coordinator. An error of an actor or of the large-data
// store is returned as is (wrapped).
var (
	// ErrUnavailable is returned when the ledger could not be read or
	// written, the read model could not list a plan, or it has not applied
	// an erase in time. The erase may be partly done: the same request
	// again (same removal id) resumes it, and so does the node.
	ErrUnavailable = errors.New("erasure: unavailable")
	// ErrNoReadModel is returned for a user erase without a read model to
	// list the user's sessions.
	ErrNoReadModel = errors.New("erasure: a user erase needs the read model (the projection) on this node")
	// ErrNoData is returned for a plan item of large data on a coordinator
	// without a Data store.
	ErrNoData = errors.New("erasure: no large-data store")
)

// PhysicalNote is a receipt's word on the bytes on disk.
const PhysicalNote = "the log's messages, snapshots and read-model rows are deleted now; " +
	"their bytes leave the files under the data dir at the next `agentmem-replay compact`"

// StepKind names a point of an erase (Step).
type StepKind uint8

// The steps of an erase, in order: the plan recorded, each item removed,
// the plan's completion recorded.
const (
	StepPlanned StepKind = iota + 1
	StepItem
	StepCompleted
)

func (k StepKind) String() string {
	switch k {
	case StepPlanned:
		return "planned"
	case StepItem:
		return "item"
	case StepCompleted:
		return "completed"
	}
	return fmt.Sprintf("step(%d)", uint8(k))
}

// Step is a point an erase reached (Config.Step).
type Step struct {
	// Plan is the plan's removal id.
	Plan string
	Kind StepKind
	// Done is how many items are removed; Item the last one (StepItem).
	Done int
	Item Item
	// Items is the plan's length.
	Items int
	// Resumed: a step of Resume finishing the plan, not of Erase.
	Resumed bool
}

// Config adjusts a Coordinator. Every field is optional.
type Config struct {
	// Now is the clock the records carry (nil: time.Now).
	Now func() time.Time
	// NewID makes the removal id of an erase without a command id (nil:
	// "e" and a random UUID's hex digits).
	NewID func() string
	// Step, when set, is called as an erase (or its resumption) passes
	// each step; an error stops it there and is returned, what is recorded
	// staying as it is. Fault tests stop (or kill) an erase at a step.
	Step func(Step) error
	// Token is the consistency token of a record stored at seq in the
	// stream of aggregate id (nil: receipts carry none). A receipt's
	// consistency merges the tokens of every record the erase wrote.
	Token func(id string, seq uint64) string
}

// Deps are a Coordinator's collaborators. Log, Reader, Codec and Actors
// are required.
type Deps struct {
	// Log holds the removal ledger (events.AppendRemoval, LoadRemoval);
	// Reader reads it whole (Resume).
	Log    events.Log
	Reader events.StreamReader
	// Streams, set when the log is in K > 1 partitions, are the K
	// streams, each read and resumed on its own (ResumePartitions; Reader
	// is then not read). A removal's records are all in one stream: a
	// plan's in the stream Log routes its id to, an aggregate's removal
	// in that aggregate's stream (events.LedgerLogOf).
	Streams []Stream
	Codec   *events.Codec
	Actors  Actors
	// Data erases large data (nil: none is listed or erased).
	Data Data
	// ReadModel lists plans and is waited for (nil: a session's plan holds
	// its own aggregates only, and a user erase is refused).
	ReadModel ReadModel
}

// Stream is one stream of a log in partitions: its removal ledger read
// whole and its removals' records loaded.
type Stream interface {
	events.Log
	events.StreamReader
}

// Coordinator runs removals: erase requests (Erase), the log-window
// compaction of a scope (Compact), and what a crash left pending (Resume).
// It keeps no state of its own: the ledger is the state, so any number of
// coordinators (one per node) may run, and a second run of the same
// removal finds the first one's records and resumes it.
type Coordinator struct {
	cfg  Config
	deps Deps
}

// New returns a coordinator.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	switch {
	case deps.Log == nil, deps.Reader == nil, deps.Codec == nil:
		return nil, errors.New("erasure: a coordinator needs the log, its reader and the codec")
	case deps.Actors == nil:
		return nil, errors.New("erasure: a coordinator needs the actors")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return "e" + strings.ReplaceAll(uuid.NewString(), "-", "") }
	}
	return &Coordinator{cfg: cfg, deps: deps}, nil
}

// Request is one erase.
type Request struct {
	Target Target
	// ID names the removal. Empty: RequestID(Target, By, CommandID), or a
	// new one without a command id.
	ID        string
	CommandID string
	// Reason is recorded (0: REMOVAL_REASON_ERASE). A RETENTION erase of a
	// session plans the session's own data only: what was extracted from it
	// into long-term memory stays.
	Reason memoryv1.RemovalReason
	// By is the verified caller ("node" for the node's own policies), Why
	// the caller's reason; both are recorded, content-free.
	By, Why string
}

func (r Request) reason() memoryv1.RemovalReason {
	if r.Reason == memoryv1.RemovalReason_REMOVAL_REASON_UNSPECIFIED {
		return memoryv1.RemovalReason_REMOVAL_REASON_ERASE
	}
	return r.Reason
}

// Erase erases req.Target: it records the plan (or finds the one a
// previous attempt of the same removal id recorded: that plan stands),
// removes each item by a removal of its own, records the plan's
// completion, and waits until the read model applied it. The receipt names
// the removal and what went. An error leaves what is recorded: the same
// request again, or the node's Resume, finishes it.
func (c *Coordinator) Erase(ctx context.Context, req Request) (*memoryv1.EraseReceipt, error) {
	id := req.ID
	if id == "" {
		if id = RequestID(req.Target, req.By, req.CommandID); id == "" {
			id = c.cfg.NewID()
		}
	}
	rec, err := events.LoadRemoval(ctx, c.deps.Log, id)
	if err != nil {
		return nil, fmt.Errorf("%w: read the removal ledger: %w", ErrUnavailable, err)
	}
	plan := rec.Removal // a retry: the plan recorded stands
	var items []Item
	if plan == nil {
		l, err := c.list(ctx, req)
		if err != nil {
			return nil, err
		}
		items = Plan(req.Target, l)
		if len(items) == 0 {
			return nil, fmt.Errorf("erasure: nothing to erase for %s", req.Target)
		}
		plan = &memoryv1.LogRemoval{Id: id, Reason: req.reason(), Target: req.Target.String(), RequestedBy: req.By, Why: req.Why,
			AtUnixNano: c.cfg.Now().UnixNano(), Planned: spell(items)}
		if rec.RemovalSeq, err = events.AppendRemoval(ctx, c.deps.Log, c.deps.Codec, plan, c.cfg.Now()); err != nil {
			return nil, fmt.Errorf("%w: record the erase: %w", ErrUnavailable, err)
		}
	}
	rc, err := c.finish(ctx, plan, items, rec, false)
	if err != nil {
		return nil, err
	}
	if rm := c.deps.ReadModel; rm != nil {
		if err := rm.WaitFor(ctx, rc.GetRemovalSeq()); err != nil {
			return nil, fmt.Errorf("%w: erased from the log, but the read model has not applied it yet (retry with the same command_id): %w", ErrUnavailable, err)
		}
	}
	rc.Target, rc.ErasedUnixNano = req.Target.Named(), c.cfg.Now().UnixNano()
	return rc, nil
}

// finish removes plan's items (items: as planned, with their keys; nil:
// read from the plan) and records its completion if rec (what the ledger
// holds of it) has none; resumed says Resume calls it. The receipt's
// removal sequence is the last record any of it wrote.
func (c *Coordinator) finish(ctx context.Context, plan *memoryv1.LogRemoval, items []Item, rec events.RemovalRecords, resumed bool) (*memoryv1.EraseReceipt, error) {
	if items == nil {
		items = make([]Item, len(plan.GetPlanned()))
		for i, s := range plan.GetPlanned() {
			var err error
			if items[i], err = ParseItem(s); err != nil {
				return nil, fmt.Errorf("erasure: plan %s: %w", plan.GetId(), err)
			}
		}
	}
	step := Step{Plan: plan.GetId(), Kind: StepPlanned, Items: len(items), Resumed: resumed}
	if err := c.step(step); err != nil {
		return nil, err
	}
	rc := &memoryv1.EraseReceipt{RemovalId: plan.GetId(), Target: plan.GetTarget(), Physical: PhysicalNote}
	var missing error // the entry a one-entry plan names is not there
	for i, it := range items {
		if err := c.remove(ctx, plan, plan.GetPlanned()[i], it, rc); err != nil {
			if it.Kind != ItemEntry || !notFound(err) {
				return nil, err
			}
			// Erased since the plan was made (a user's copy), or never
			// there: nothing to remove. An entry erase answers the 404
			// once its plan is complete (not pending for ever).
			if len(items) == 1 {
				missing = err
			}
		}
		step.Kind, step.Done, step.Item = StepItem, i+1, it
		if err := c.step(step); err != nil {
			return nil, err
		}
	}
	done := rec.DoneSeq
	if done == 0 {
		var err error
		if done, err = events.CompleteRemoval(ctx, c.deps.Log, c.deps.Codec, plan.GetId(), rec.RemovalSeq, c.cfg.Now()); err != nil {
			return nil, fmt.Errorf("%w: record the erase's completion: %w", ErrUnavailable, err)
		}
	}
	rc.RemovalSeq = max(rc.RemovalSeq, done)
	c.token(rc, plan.GetId(), done) // the plan and its completion: the stream of its id
	step.Kind, step.Item = StepCompleted, Item{}
	if err := c.step(step); err != nil {
		return nil, err
	}
	if missing != nil {
		return nil, missing
	}
	return rc, nil
}

// token adds to rc's consistency the token of a record at seq in the
// stream of aggregate id (nothing for seq 0: nothing was written).
func (c *Coordinator) token(rc *memoryv1.EraseReceipt, id string, seq uint64) {
	if c.cfg.Token != nil && seq > 0 {
		rc.Consistency = consistency.Merge(rc.Consistency, c.cfg.Token(id, seq))
	}
}

func (c *Coordinator) step(s Step) error {
	if c.cfg.Step == nil {
		return nil
	}
	return c.cfg.Step(s)
}

// remove removes item it of plan, spelled so in the plan, under its own
// removal (events.PlannedRemovalID of the plan's id and that spelling) and
// adds what went to rc. An item removed already is removed again as a
// no-op: its removal is found completed, an aggregate gone answers an
// empty receipt; an entry its scope does not hold answers 404.
func (c *Coordinator) remove(ctx context.Context, plan *memoryv1.LogRemoval, spelled string, it Item, rc *memoryv1.EraseReceipt) error {
	id := events.PlannedRemovalID(plan.GetId(), spelled)
	if it.Kind == ItemData {
		if c.deps.Data == nil {
			return fmt.Errorf("%w: plan item %s", ErrNoData, it)
		}
		seq, n, err := c.deps.Data.Erase(ctx, it.ID, &memoryv1.LogRemoval{Id: id, Reason: plan.GetReason(),
			Target: plan.GetTarget(), RequestedBy: plan.GetRequestedBy(), Why: plan.GetWhy()})
		if err != nil {
			return fmt.Errorf("erasure: %s: %w", it, err)
		}
		rc.Messages += n
		rc.RemovalSeq = max(rc.RemovalSeq, seq)
		c.token(rc, it.ID, seq)
		rc.Data = append(rc.Data, it.ID)
		return nil
	}
	body := &memoryv1.EraseAggregate{RemovalId: id, Reason: plan.GetReason(), Target: plan.GetTarget(),
		RequestedBy: plan.GetRequestedBy(), Why: plan.GetWhy()}
	if it.Kind == ItemEntry {
		// By the key when the plan spelled it (written before), else by
		// its digest: what is sent is what the plan holds.
		if strings.HasSuffix(spelled, ":#"+it.KeySum) {
			body.KeySha256 = it.sum()
		} else {
			body.Key = it.Key
		}
	}
	r, err := c.call(ctx, it, body)
	if err != nil {
		return fmt.Errorf("erasure: %s: %w", it, err)
	}
	rc.Messages += r.GetMessages()
	rc.RemovalSeq = max(rc.RemovalSeq, r.GetRemovalSeq())
	c.token(rc, it.ID, r.GetRemovalSeq())
	switch {
	case it.Kind == ItemEntry:
		rc.Entries = append(rc.Entries, it.entryName())
	case it.Kind == ItemSession:
		rc.Sessions = append(rc.Sessions, it.ID)
	case it.Scope != sharedmem.KindSession: // a session's scope goes with its session
		rc.Scopes = append(rc.Scopes, string(it.Scope)+":"+it.ID)
	}
	return nil
}

// call sends body to the actor of the aggregate it is (or is in) and
// waits for its receipt.
func (c *Coordinator) call(ctx context.Context, it Item, body any) (*memoryv1.EraseReceipt, error) {
	m, err := actors.Await(ctx, func(reply actors.ReplyFunc) error {
		if it.Kind == ItemSession {
			return c.deps.Actors.Dispatch(it.ID, nil, body, reply)
		}
		return c.deps.Actors.DispatchScope(it.Scope, it.ID, nil, body, reply)
	})
	if err != nil {
		return nil, err
	}
	r, ok := m.(*memoryv1.EraseReceipt)
	if !ok {
		return nil, fmt.Errorf("erasure: the actor of %s answered %T", it, m)
	}
	return r, nil
}

// notFound reports whether err answers 404 (an actor's rejection, or one
// relayed from another node).
func notFound(err error) bool {
	var rej interface{ Status() (int, string, string) }
	if !errors.As(err, &rej) {
		return false
	}
	code, _, _ := rej.Status()
	return code == 404
}

// Compact bounds the log of scope kind:id to the time-travel window: its
// actor rewrites the scope from a baseline of its state without the
// versions updated before before (each key's current one kept) and
// removes the older messages, recorded as removal id (CompactionID; a
// second Compact of the same id resumes it). The receipt counts the
// messages removed: 0 when there was nothing older to remove.
func (c *Coordinator) Compact(ctx context.Context, kind sharedmem.Kind, id, removalID string, before time.Time) (*memoryv1.EraseReceipt, error) {
	return c.call(ctx, ScopeItem(kind, id), &memoryv1.CompactAggregate{RemovalId: removalID, BeforeUnixNano: before.UnixNano()})
}

func spell(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.String()
	}
	return out
}
