package actors

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// pastLog writes a scope's history to an in-memory log the way its actor,
// an entry erase, a compaction and a scope erase leave it: the removal
// recorded in the ledger, then a baseline, then the older messages
// removed.
type pastLog struct {
	t       *testing.T
	log     *events.MemLog
	codec   *events.Codec
	subject string
	version uint64
	keys    map[string][]*memoryv1.Entry // the scope's state: key → versions
	removal int
	// byDigest: the contexts name their items' keys by digest, the
	// plans their entries (as written since); else by the key itself (as
	// written before).
	byDigest bool
}

func newPastLog(t *testing.T) *pastLog {
	return &pastLog{t: t, log: events.NewMemLog(), codec: events.NewCodec(), subject: events.AgentSubject("bot"), keys: map[string][]*memoryv1.Entry{}}
}

func (p *pastLog) append(subject string, evs ...proto.Message) uint64 {
	p.t.Helper()
	packed, err := p.codec.Pack(evs)
	if err != nil {
		p.t.Fatal(err)
	}
	p.version++
	data, err := events.EncodeBatch(&memoryv1.EventBatch{AggregateKind: "agent", AggregateId: "bot", Version: p.version, SchemaVersion: events.SchemaVersion, Events: packed})
	if err != nil {
		p.t.Fatal(err)
	}
	last, err := p.log.LastSeq(context.Background(), subject)
	if err != nil {
		p.t.Fatal(err)
	}
	res, err := p.log.Append(context.Background(), subject, last, "", data)
	if err != nil {
		p.t.Fatal(err)
	}
	return res.Seq
}

// put writes the next version of key.
func (p *pastLog) put(key, value string) {
	vs := p.keys[key]
	version := uint64(1)
	if len(vs) > 0 {
		version = vs[len(vs)-1].GetVersion() + 1
	}
	e := &memoryv1.Entry{Key: key, Value: []byte(value), Size: uint32(len(value)), Version: version}
	p.keys[key] = append(vs, e)
	p.append(p.subject, &memoryv1.EntryChanged{Entry: e})
}

// tick writes a message of another aggregate and returns its sequence: a
// point of the log (the batch a context's sections were chosen by, or a
// later one of the session).
func (p *pastLog) tick() uint64 {
	return p.append(events.SessionSubject("s1"), &memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "x", Version: 1}})
}

// rewrite records removal rm, writes a baseline of the state (without
// key drop when set; only each key's current version when trim) and
// removes the messages before it.
func (p *pastLog) rewrite(rm *memoryv1.LogRemoval, drop string, trim bool) {
	p.t.Helper()
	rm.Rewritten = []string{"agent.bot"}
	if _, err := events.AppendRemoval(context.Background(), p.log, p.codec, rm, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	delete(p.keys, drop)
	st := &memoryv1.ScopeSnapshot{Kind: "agent", Id: "bot"}
	for k, vs := range p.keys {
		if trim {
			vs = vs[len(vs)-1:]
			p.keys[k] = vs
		}
		st.Keys = append(st.Keys, &memoryv1.KeyHistory{Key: k, Versions: vs})
	}
	seq := p.append(p.subject, &memoryv1.ScopeBaseline{State: st, RemovalId: rm.GetId()})
	if err := p.log.RemoveSubject(context.Background(), p.subject, seq-1); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pastLog) nextID() string {
	p.removal++
	return fmt.Sprintf("r%d", p.removal)
}

// entryItem is the plan item of key.
func (p *pastLog) entryItem(key string) string {
	if p.byDigest {
		return "entry:agent:bot:#" + hex.EncodeToString(segmented.KeySum(key))
	}
	return "entry:agent:bot:" + key
}

// eraseEntry erases key alone (its plan's one item: the removal's target).
func (p *pastLog) eraseEntry(key string) {
	item := p.entryItem(key)
	p.rewrite(&memoryv1.LogRemoval{Id: events.PlannedRemovalID(p.nextID(), item), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: item}, key, false)
}

// eraseUserCopy erases key as one item of a user's erase (the removal's
// target is the user).
func (p *pastLog) eraseUserCopy(key string) {
	p.rewrite(&memoryv1.LogRemoval{Id: events.PlannedRemovalID(p.nextID(), p.entryItem(key)), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "user:u1"}, key, false)
}

func (p *pastLog) compact() {
	p.rewrite(&memoryv1.LogRemoval{Id: p.nextID(), Reason: memoryv1.RemovalReason_REMOVAL_REASON_COMPACT, Target: "scope:agent:bot"}, "", true)
}

// eraseScope erases the whole scope.
func (p *pastLog) eraseScope() {
	p.t.Helper()
	if _, err := events.AppendRemoval(context.Background(), p.log, p.codec, &memoryv1.LogRemoval{Id: p.nextID(), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
		Target: "agent:bot", Erased: []string{"agent.bot"}}, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	last, _ := p.log.LastSeq(context.Background(), p.subject)
	if err := p.log.RemoveSubject(context.Background(), p.subject, last); err != nil {
		p.t.Fatal(err)
	}
	p.keys = map[string][]*memoryv1.Entry{}
}

// pastContext is a context of three memory items of agent:bot (7 tokens
// each, chosen at the given sequences) and one L1 message of 6 tokens.
type pastContext struct {
	cx     *memoryv1.ContextReply
	chosen map[string]uint64
}

func (p *pastLog) newPastContext(items map[string]uint64) pastContext {
	pc := pastContext{cx: &memoryv1.ContextReply{Layers: &memoryv1.LayerTokens{}, Usage: &memoryv1.Usage{Budget: 100, Used: 6}}, chosen: map[string]uint64{}}
	for _, kv := range []string{"keep:1", "scratch:1", "old:1"} {
		at, ok := items[kv]
		if !ok {
			continue
		}
		key, _, _ := strings.Cut(kv, ":")
		item := &memoryv1.MemoryItem{Scope: "agent:bot", Key: key, Version: 1, Tokens: 7, TextBytes: 1000}
		if p.byDigest {
			item.Key, item.KeySha256 = "", segmented.KeySum(key)
		}
		pc.cx.Messages = append(pc.cx.Messages, &memoryv1.ContextMessage{Layer: segmented.LayerMemory, Id: segmented.MemoryID(item, ""), Tokens: 7, Memory: item})
		pc.cx.Layers.Memory += 7
		pc.cx.Usage.Used += 7
		pc.chosen[refKey("agent:bot", segmented.KeySum(key), 1)] = at
	}
	pc.cx.Messages = append(pc.cx.Messages, &memoryv1.ContextMessage{Layer: segmented.LayerL1, Id: "m1", Content: "hi", Tokens: 6})
	return pc
}

// byName maps the digest name of each key of the tests (KeyName) to the
// key.
var byName = func() map[string]string {
	out := map[string]string{}
	for _, k := range []string{"keep", "scratch", "old"} {
		out[segmented.KeyName(&memoryv1.MemoryItem{KeySha256: segmented.KeySum(k)}, "")] = k
	}
	return out
}()

// at is the context shown at point: each memory item as "key=text",
// "key erased", "key not kept" (absent: left out), and the memory tokens.
func (p *pastLog) at(pc pastContext, point uint64) (map[string]string, uint32) {
	p.t.Helper()
	got, err := hydrateAt(context.Background(), p.log, p.log, p.codec, pc.chosen, point, pc.cx)
	if err != nil {
		p.t.Fatal(err)
	}
	out := map[string]string{}
	var tokens uint32
	for _, m := range got.GetMessages() {
		if m.GetLayer() != segmented.LayerMemory {
			continue
		}
		tokens += m.GetTokens()
		key := strings.TrimPrefix(m.GetId(), "memory:agent:bot/")
		if k, ok := byName[key]; ok {
			// Named by digest: the log no longer holds the key, and
			// neither does the item's text.
			if strings.Contains(m.GetContent(), k) {
				p.t.Errorf("at %d: item %s reads %q, which names its key", point, key, m.GetContent())
			}
			key = k
		}
		switch c := m.GetContent(); {
		case strings.HasPrefix(c, "[erased]"):
			out[key] = "erased"
		case strings.HasPrefix(c, "[not kept]"):
			out[key] = "not kept"
		default:
			out[key] = strings.TrimPrefix(c, "Memory agent:bot "+key+" (v1): ")
		}
	}
	if tokens != got.GetLayers().GetMemory() || got.GetUsage().GetUsed() != 6+tokens {
		p.t.Errorf("at %d: the items listed take %d tokens; the layers say %d, the usage %d (6 of them L1)", point, tokens, got.GetLayers().GetMemory(), got.GetUsage().GetUsed())
	}
	return out, tokens
}

func (p *pastLog) expect(what string, pc pastContext, point uint64, want map[string]string) {
	p.t.Helper()
	got, _ := p.at(pc, point)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		p.t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestTimeTravelRewrittenScope: what a past context shows of its memory
// items once their scope's log was rewritten. Versions restated by a
// baseline read back; an entry erased after the point is marked erased
// (its tokens kept), one erased before it is left out as the node left it
// out; a key erased and written again (its versions anew) does not lend
// its new value to the old item, but a context that chose the new one
// shows it; a version compacted away is marked not kept; an erase that
// was one item of a user's erase and a whole scope's erase count too.
func TestTimeTravelRewrittenScope(t *testing.T) {
	for _, byDigest := range []bool{false, true} {
		t.Run(fmt.Sprintf("byDigest=%v", byDigest), func(t *testing.T) { testTimeTravelRewrittenScope(t, byDigest) })
	}
}

func testTimeTravelRewrittenScope(t *testing.T, byDigest bool) {
	p := newPastLog(t)
	p.byDigest = byDigest
	p.put("keep", "kept value")
	p.put("scratch", "scratch value")
	p.put("old", "old value 1")
	chose := p.tick() // the batch that chose the three items
	p.put("old", "old value 2")
	pc := p.newPastContext(map[string]uint64{"keep:1": chose, "scratch:1": chose, "old:1": chose})
	all := map[string]string{"keep": "kept value", "scratch": "scratch value", "old": "old value 1"}
	p.expect("before any rewrite", pc, chose, all)

	p.eraseEntry("scratch")
	p.expect("after scratch's erase, at the point before it", pc, chose, map[string]string{"keep": "kept value", "scratch": "erased", "old": "old value 1"})
	later := p.tick() // the session's next batch, its sections unchanged
	p.expect("after scratch's erase, at a point after it", pc, later, map[string]string{"keep": "kept value", "old": "old value 1"})

	p.put("scratch", "a new scratch value") // version 1 again
	rechose := p.tick()
	p.expect("scratch written again", pc, chose, map[string]string{"keep": "kept value", "scratch": "erased", "old": "old value 1"})
	fresh := p.newPastContext(map[string]uint64{"scratch:1": rechose})
	p.expect("a context that chose the new scratch", fresh, rechose, map[string]string{"scratch": "a new scratch value"})

	p.compact() // the erase's baseline goes; old v1 leaves the window
	p.expect("after a compaction", pc, chose, map[string]string{"keep": "kept value", "scratch": "erased", "old": "not kept"})
	p.expect("after a compaction, a point after the erase", pc, later, map[string]string{"keep": "kept value", "old": "not kept"})
	p.expect("after a compaction, the new scratch", fresh, rechose, map[string]string{"scratch": "a new scratch value"})

	p.eraseUserCopy("keep")
	p.expect("keep erased as a copy of a user's", pc, chose, map[string]string{"keep": "erased", "scratch": "erased", "old": "not kept"})
	p.expect("keep erased as a copy of a user's, the new scratch", fresh, rechose, map[string]string{"scratch": "a new scratch value"})

	p.eraseScope()
	p.put("scratch", "a new scope's value")
	p.expect("the scope erased and written again", fresh, rechose, map[string]string{"scratch": "erased"})
}

// TestTimeTravelReadErrors: a scope record that does not decode, a log
// that cannot be read, are errors, never items left out; without a ledger
// a version gone is marked not kept.
func TestTimeTravelReadErrors(t *testing.T) {
	p := newPastLog(t)
	p.put("keep", "kept value")
	p.put("scratch", "scratch value")
	chose := p.tick()
	p.eraseEntry("scratch")
	pc := p.newPastContext(map[string]uint64{"keep:1": chose, "scratch:1": chose})
	got, err := hydrateAt(context.Background(), p.log, nil, p.codec, pc.chosen, chose, pc.cx)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.GetMessages()[1].GetContent(); !strings.HasPrefix(c, "[not kept]") || got.GetLayers().GetMemory() != 14 {
		t.Errorf("without a ledger: scratch reads %q, memory %d tokens; want marked not kept, 14", c, got.GetLayers().GetMemory())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := hydrateAt(ctx, p.log, p.log, p.codec, pc.chosen, chose, pc.cx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read: %v, want context.Canceled", err)
	}
	last, _ := p.log.LastSeq(context.Background(), p.subject)
	if _, err := p.log.Append(context.Background(), p.subject, last, "", []byte("not a batch")); err != nil {
		t.Fatal(err)
	}
	if _, err := hydrateAt(context.Background(), p.log, p.log, p.codec, pc.chosen, chose, pc.cx); err == nil {
		t.Error("a scope record that does not decode: no error")
	}
}
