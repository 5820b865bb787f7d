package sharedmem

import (
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// Env carries what a decision may depend on besides the state: the time.
// Decide* record every value they take from Env in the events, so Apply
// never needs it.
type Env struct {
	NowUnixNano int64
	// EvictOwn is set for a write by one of several writers of a shared
	// scope (a tenant's, not an admin's): the evictions its write needs
	// under max_entries take only entries the writer (by) wrote last, and
	// when those do not make room it is refused (413 max_entries). No
	// member's write evicts another member's entries. Apply never reads it.
	EvictOwn bool
	// EpisodicTTLSeconds is the node's default TTL of episodic entries
	// written without one in a scope whose episodic_ttl_seconds is 0
	// (0: never). The expiry it gives is recorded in the entry's event.
	EpisodicTTLSeconds int64
}

// Meta describes the stored batch being applied.
type Meta struct {
	CommandID    string
	Version      uint64 // aggregate version after the batch; must increase
	Seq          uint64 // stream sequence of the batch
	TimeUnixNano int64
	// Digest is the command's request digest (EventBatch.command_digest),
	// kept in recent_commands beside its id (nil: none recorded).
	Digest []byte
}

// MaxRecentCommands bounds ScopeSnapshot.recent_commands.
const MaxRecentCommands = 64

// State is one scope aggregate: a *memoryv1.ScopeSnapshot plus a key index
// and derived values (live count, earliest expiry). It has a single owner
// (the scope actor) and no locks: reads must not run concurrently with
// Apply.
//
// Invariants (checked by the tests): snap.Keys is sorted by key with no
// duplicates; every KeyHistory has at least one version, versions strictly
// increasing by one; index maps every key to its KeyHistory; live is the
// number of keys whose last version is not a tombstone and liveBytes the
// sum of their stored value lengths; byWriter holds, for each updated_by of
// a live current version, how many such versions and bytes it wrote (no
// zero usage is kept); nextExpiry is the smallest non-zero
// expires_unix_nano of a live current version (0: none). All of them are
// kept by every applied event, not only when a snapshot loads.
type State struct {
	snap       *memoryv1.ScopeSnapshot
	index      map[string]*memoryv1.KeyHistory
	live       int
	liveBytes  int64
	byWriter   map[string]Usage
	nextExpiry int64
	cache      plainCache
}

// Usage is what one writer holds in a scope: the live current versions it
// wrote last (updated_by) and their stored value bytes.
type Usage struct {
	Entries int
	Bytes   int64
}

// count adds (sign 1) or removes (sign -1) a live current version from the
// derived totals.
func (s *State) count(e *memoryv1.Entry, sign int) {
	n := int64(len(e.Value)) * int64(sign)
	s.live += sign
	s.liveBytes += n
	if s.byWriter == nil {
		s.byWriter = map[string]Usage{}
	}
	u := s.byWriter[e.UpdatedBy]
	u.Entries += sign
	u.Bytes += n
	if u.Entries == 0 {
		delete(s.byWriter, e.UpdatedBy)
	} else {
		s.byWriter[e.UpdatedBy] = u
	}
}

// New returns an empty scope. It does not validate kind or id (see
// ScopeID): the actor that owns the scope has done so.
func New(kind Kind, id string) *State {
	return &State{
		snap:  &memoryv1.ScopeSnapshot{Kind: string(kind), Id: id, Config: &memoryv1.ScopeConfig{}},
		index: map[string]*memoryv1.KeyHistory{},
	}
}

// FromSnapshot returns a State holding a deep clone of snap (nil: an empty
// scope with no kind). Keys are re-sorted if they are not in order.
func FromSnapshot(snap *memoryv1.ScopeSnapshot) *State {
	if snap == nil {
		return New("", "")
	}
	return FromOwnedSnapshot(proto.Clone(snap).(*memoryv1.ScopeSnapshot))
}

// FromOwnedSnapshot is FromSnapshot without the clone: the State takes snap
// over, and the caller must not use it afterwards.
func FromOwnedSnapshot(snap *memoryv1.ScopeSnapshot) *State {
	if snap == nil {
		return New("", "")
	}
	s := &State{snap: snap}
	s.snap.Keys = slices.DeleteFunc(s.snap.Keys, func(k *memoryv1.KeyHistory) bool { return len(k.GetVersions()) == 0 })
	if !slices.IsSortedFunc(s.snap.Keys, cmpHistory) {
		slices.SortStableFunc(s.snap.Keys, cmpHistory)
	}
	s.reindex()
	return s
}

func cmpHistory(a, b *memoryv1.KeyHistory) int { return strings.Compare(a.GetKey(), b.GetKey()) }

// reindex rebuilds the index and the derived values from the snapshot.
func (s *State) reindex() {
	s.index = make(map[string]*memoryv1.KeyHistory, len(s.snap.Keys))
	for _, kh := range s.snap.Keys {
		s.index[kh.Key] = kh
	}
	s.recount()
}

// recount recomputes live, liveBytes and nextExpiry.
func (s *State) recount() {
	s.live, s.liveBytes, s.nextExpiry, s.byWriter = 0, 0, 0, nil
	for _, kh := range s.snap.Keys {
		e := last(kh)
		if e.Deleted {
			continue
		}
		s.count(e, 1)
		if x := e.ExpiresUnixNano; x > 0 && (s.nextExpiry == 0 || x < s.nextExpiry) {
			s.nextExpiry = x
		}
	}
}

// Snapshot returns a deep clone of the state. Marshalled with
// proto.MarshalOptions{Deterministic: true}, equal states give equal bytes.
func (s *State) Snapshot() *memoryv1.ScopeSnapshot {
	return proto.Clone(s.snap).(*memoryv1.ScopeSnapshot)
}

// MarshalSnapshot is o.Marshal(s.Snapshot()) without the deep clone.
func (s *State) MarshalSnapshot(o proto.MarshalOptions) ([]byte, error) {
	return o.Marshal(s.snap)
}

// Kind is the scope's kind.
func (s *State) Kind() Kind { return Kind(s.snap.Kind) }

// ID is the scope's id ("global" for the global scope).
func (s *State) ID() string { return s.snap.Id }

// Version is the aggregate version (0 before the first batch).
func (s *State) Version() uint64 { return s.snap.Version }

// LastSeq is the stream sequence of the last applied batch.
func (s *State) LastSeq() uint64 { return s.snap.LastSeq }

// Config returns (a clone of) the scope's configuration; never nil.
func (s *State) Config() *memoryv1.ScopeConfig {
	if s.snap.Config == nil {
		return &memoryv1.ScopeConfig{}
	}
	return proto.Clone(s.snap.Config).(*memoryv1.ScopeConfig)
}

// Live is the number of keys whose current version is not a tombstone,
// counting entries that have expired but whose EXPIRE event is not stored
// yet.
func (s *State) Live() int { return s.live }

// LiveBytes is the size of the live current values as stored (compressed
// when that was smaller), the measure of the per-scope byte quota.
func (s *State) LiveBytes() int64 { return s.liveBytes }

// WriterUsage is what writer (an entry's updated_by) holds in the scope.
func (s *State) WriterUsage(writer string) Usage { return s.byWriter[writer] }

// WriterUsageAfter is what writer would hold after writing storedLen bytes
// as the new current version of key: a key it wrote last is replaced (its
// bytes freed), any other key is one more entry. It bounds what a write
// can add, before the decision (expiry and eviction may free more).
func (s *State) WriterUsageAfter(writer, key string, storedLen int, now int64) Usage {
	u := s.byWriter[writer]
	if cur := s.current(key); cur != nil && !cur.Deleted && !expired(cur, now) && cur.UpdatedBy == writer {
		u.Bytes -= int64(len(cur.Value))
	} else {
		u.Entries++
	}
	u.Bytes += int64(storedLen)
	return u
}

// StoredLen is the length of version of key as stored (false: no such
// version kept, or a tombstone).
func (s *State) StoredLen(key string, version uint64) (int, bool) {
	kh, ok := s.index[key]
	if !ok {
		return 0, false
	}
	e := findVersion(kh, version)
	if e == nil || e.Deleted {
		return 0, false
	}
	return len(e.Value), true
}

// NextExpiry is the earliest expires_unix_nano of a live entry (0: none).
// The actor schedules a timer for it and then calls DecideExpire.
func (s *State) NextExpiry() int64 { return s.nextExpiry }

// CommandWindow is the stream sequence of the oldest command LookupCommand
// still finds, and whether the window holds every command the aggregate
// stored (then a miss means "never stored"; otherwise older commands are
// looked up in the projection's command index).
func (s *State) CommandWindow() (oldestSeq uint64, complete bool) {
	if s.snap == nil || len(s.snap.RecentCommands) == 0 {
		return 0, s.Version() == 0
	}
	return s.snap.RecentCommands[0].GetSeq(), uint64(len(s.snap.RecentCommands)) >= s.snap.GetVersion()
}

// LookupCommand returns the result of a recently applied command (the last
// MaxRecentCommands), to answer a retried command idempotently.
func (s *State) LookupCommand(commandID string) (*memoryv1.CommandResult, bool) {
	if commandID == "" {
		return nil, false
	}
	for i := len(s.snap.RecentCommands) - 1; i >= 0; i-- {
		if c := s.snap.RecentCommands[i]; c.GetCommandId() == commandID {
			return proto.Clone(c).(*memoryv1.CommandResult), true
		}
	}
	return nil, false
}

// last returns the current (last) version of a history.
func last(kh *memoryv1.KeyHistory) *memoryv1.Entry {
	return kh.Versions[len(kh.Versions)-1]
}

// current returns the stored current version of key (nil: unknown key).
func (s *State) current(key string) *memoryv1.Entry {
	if kh, ok := s.index[key]; ok {
		return last(kh)
	}
	return nil
}

// expired reports whether a live entry's expiry has passed at now: expiry
// is due at expires_unix_nano itself (0 < expires <= now), for reads and
// decisions alike.
func expired(e *memoryv1.Entry, now int64) bool {
	return !e.Deleted && e.ExpiresUnixNano > 0 && e.ExpiresUnixNano <= now
}
