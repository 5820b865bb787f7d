package consolidation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// run is one consolidation of one session.
type run struct {
	c           *Consolidator
	id          string
	info        *memoryv1.SessionInfo
	user, agent *Scope
	dryRun      bool
	extractor   string
	strategy    string             // the user scope's conflict strategy
	known       []consolidate.Fact // the user's facts, as the run goes
	written     uint32             // entries written or changed
}

// do extracts from msgs and writes.
func (r *run) do(ctx context.Context, msgs []consolidate.Message) (*memoryv1.ConsolidateReply, error) {
	c := r.c
	if r.user != nil {
		var err error
		if r.known, err = r.knownFacts(ctx, *r.user); err != nil {
			return nil, err
		}
		cfg, err := c.scopes.Config(ctx, *r.user)
		if err != nil {
			return nil, err
		}
		r.strategy = cfg.GetConflictStrategy()
	}
	facts, name, err := c.cfg.Extractor.ExtractFacts(ctx, msgs, r.known)
	if err != nil { // an extractor that fails falls back to the deterministic one
		c.log.Warn("consolidation: extractor failed; using the deterministic one", "session", r.id, "err", err)
		facts, name, _ = Deterministic{}.ExtractFacts(ctx, msgs, r.known)
	}
	r.extractor = name
	consolidate.Stamp(facts, msgs)
	out := &memoryv1.ConsolidateReply{Extractor: name}
	for i := range facts { // one fact, one key, whichever extractor named it
		facts[i].Attribute = consolidate.CanonicalAttribute(facts[i].Attribute)
	}
	for _, f := range facts {
		x, err := r.fact(ctx, f)
		if err != nil {
			return nil, err
		}
		c.count(x.GetOutcome())
		out.Facts = append(out.Facts, x)
	}
	if d, ok := consolidate.SessionDigest(msgs, facts); ok {
		x, err := r.digest(ctx, d)
		if err != nil {
			return nil, err
		}
		out.Digest = x
	}
	if r.dryRun {
		return out, nil
	}
	if t, ok := Target(r.info); ok {
		if err := r.mark(ctx, t, len(facts), lastSaid(msgs)); err != nil {
			return nil, err
		}
		out.Marker = Marker(r.info)
	}
	out.Done, out.Written = true, r.written
	return out, nil
}

// fact writes f where it belongs and says what became of it.
func (r *run) fact(ctx context.Context, f consolidate.Fact) (*memoryv1.ExtractedFact, error) {
	t := r.user
	if f.Type == consolidate.Episodic {
		t = r.agent
	}
	x := &memoryv1.ExtractedFact{Key: f.Key(), Value: f.Text(), MemoryType: memoryType(f.Type), Confidence: f.Confidence,
		MessageIds: f.MessageIDs, Correction: f.Correction, Replaces: f.Replaces, Retract: f.Retract}
	switch {
	case t == nil:
		x.Outcome = "skipped"
		return x, nil
	case r.dryRun:
		x.Scope, x.Outcome = t.String(), "dry_run"
		return x, nil
	}
	x.Scope = t.String()
	strategy := ""
	if t == r.user {
		strategy = r.strategy
	}
	if err := r.writeFact(ctx, *t, f, strategy, x); err != nil {
		return nil, err
	}
	if t == r.user && f.Replaces != "" && x.GetOutcome() == "written" {
		if err := r.consolidateInto(ctx, *t, f); err != nil {
			return nil, err
		}
	}
	if t == r.user && f.Type == consolidate.Semantic && !f.Retract && x.GetOutcome() != "review" {
		if err := r.mergeSynonyms(ctx, *t, f); err != nil {
			return nil, err
		}
	}
	if t == r.agent && f.Type == consolidate.Episodic && !f.Retract && x.GetOutcome() != "review" {
		sk, err := r.summarizeEpisodes(ctx, *t, f.Key())
		if err != nil {
			return nil, err
		}
		x.SummarizedInto = sk
	}
	if t == r.user && f.Type == consolidate.Semantic && !f.Retract {
		r.known = append(r.known, f) // later facts of this run may replace it
	}
	return x, nil
}

func memoryType(t consolidate.Type) memoryv1.MemoryType {
	switch t {
	case consolidate.Episodic:
		return memoryv1.MemoryType_MEMORY_TYPE_EPISODIC
	case consolidate.Procedural:
		return memoryv1.MemoryType_MEMORY_TYPE_PROCEDURAL
	}
	return memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC
}

// knownFacts are the facts scope t holds (entries under fact/ with a
// subject and an attribute in their metadata, not consolidated into
// another).
func (r *run) knownFacts(ctx context.Context, t Scope) ([]consolidate.Fact, error) {
	var out []consolidate.Fact
	token := ""
	for len(out) < maxKnownFacts {
		entries, next, err := r.c.scopes.List(ctx, t, "fact/", token)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			md := e.GetMetadata()
			if e.GetDeleted() || md[MetaSubject] == "" || md[MetaAttribute] == "" || md[MetaConsolidated] != "" || md[MetaValue] == "" {
				continue
			}
			out = append(out, consolidate.Fact{Subject: md[MetaSubject], Attribute: md[MetaAttribute], Value: md[MetaValue],
				Type: consolidate.Semantic, Date: md[DateKey]})
		}
		if token = next; token == "" {
			break
		}
	}
	return out, nil
}

// CommandID is the command id a run writes key with (its value, and the
// source message ids) from session: stable across runs.
func CommandID(session, key, value string, messageIDs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", session, key, value, strings.Join(messageIDs, ","))
	return "consolidate-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// sourceMeta is the metadata every entry of the run carries: its session,
// and its user when there is one.
func (r *run) sourceMeta(md map[string]string) map[string]string {
	if md == nil {
		md = map[string]string{}
	}
	md[SourceSessionKey] = r.id
	if u := r.info.GetUserId(); u != "" {
		md[SourceUserKey] = u
	}
	return md
}

// writeFact writes f into t, unless it is there already, and records the
// outcome in x. With strategy review a new value for a key holding
// another one waits under review/<key>.
func (r *run) writeFact(ctx context.Context, t Scope, f consolidate.Fact, strategy string, x *memoryv1.ExtractedFact) error {
	s := r.c.scopes
	key, cmd := f.Key(), CommandID(r.id, f.Key(), f.Text(), f.MessageIDs)
	for attempt := 0; ; attempt++ {
		cur, hist, err := r.entryAndHistory(ctx, t, key)
		if err != nil {
			return err
		}
		for _, v := range hist {
			if v.GetMetadata()[MetaCommand] == cmd {
				x.Outcome, x.Version = "duplicate", v.GetVersion()
				return nil
			}
		}
		live := cur != nil && !cur.GetDeleted()
		if f.Retract { // delete the entry when it holds the value retracted
			if !live || !strings.EqualFold(cur.GetMetadata()[MetaValue], f.Value) {
				x.Outcome = "unchanged"
				return nil
			}
			expected := int64(cur.GetVersion())
			rep, err := s.Delete(ctx, t, &memoryv1.DeleteEntryRequest{CommandId: cmd, Key: key, ExpectedVersion: &expected, By: By})
			if err != nil {
				if errors.Is(err, ErrConflict) && attempt == 0 {
					continue
				}
				return err
			}
			x.Outcome, x.Version = "retracted", rep.GetEntry().GetVersion()
			r.written++
			return nil
		}
		if live && sameFact(cur, f) {
			x.Outcome, x.Version = "unchanged", cur.GetVersion() // a near-duplicate merges into what is there
			return nil
		}
		md := r.sourceMeta(map[string]string{
			MetaMessages: strings.Join(f.MessageIDs, ","), MetaConfidence: strconv.FormatFloat(f.Confidence, 'f', 2, 64),
			MetaSubject: f.Subject, MetaAttribute: f.Attribute, MetaValue: f.Value, MetaExtractor: r.extractor, MetaCommand: cmd,
		})
		if f.Said != 0 {
			md[SaidKey] = strconv.FormatInt(f.Said, 10)
		}
		if f.Date != "" {
			md[DateKey] = f.Date
		}
		req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: key, Value: []byte(f.Text()), ContentType: "text/plain; charset=utf-8",
			MemoryType: memoryType(f.Type), Importance: f.Confidence, Metadata: md, By: By, Tags: []string{"consolidated"}}
		var expected int64
		old := cur.GetMetadata()[MetaValue]
		if old == "" {
			old = string(cur.GetValue())
		}
		switch {
		case live:
			md[MetaReplaces] = old
			expected = int64(cur.GetVersion())
		case f.Replaces != "": // a value under another key (consolidateInto marks it)
			md[MetaReplaces] = f.Replaces
		}
		outcome := "written"
		if live && strategy == sharedmem.StrategyLLM && r.c.cfg.Merger != nil {
			merged, err := r.c.cfg.Merger.MergeFact(ctx, key, old, f.Value)
			switch {
			case err != nil:
				r.c.log.Warn("consolidation: the LLM merge failed; last write wins", "key", key, "err", err)
			case strings.EqualFold(merged, old):
				x.Outcome, x.Version = "unchanged", cur.GetVersion() // the model kept the current value
				return nil
			default:
				g := f
				g.Value = merged
				req.Value, md[MetaValue], md[MetaMergedBy] = []byte(g.Text()), merged, "llm"
				x.Value = g.Text()
			}
		}
		if live && strategy == sharedmem.StrategyReview {
			md[MetaProposedFor], md[MetaReplaces] = key, old
			req.Key, outcome = ReviewPrefix+key, "review"
			expected = -1
		}
		req.ExpectedVersion = &expected
		rep, err := s.Put(ctx, t, req)
		if err != nil {
			if errors.Is(err, ErrConflict) && attempt == 0 {
				continue // another writer moved the key: read it again, decide once more
			}
			return err
		}
		x.Outcome, x.Version = outcome, rep.GetEntry().GetVersion()
		if rep.GetResult().GetDuplicate() {
			x.Outcome = "duplicate"
		} else {
			r.written++
		}
		return nil
	}
}

// sameFact reports whether entry cur holds f already: the same text, or
// the same value (and the same date, when both name one).
func sameFact(cur *memoryv1.Entry, f consolidate.Fact) bool {
	if strings.EqualFold(string(cur.GetValue()), f.Text()) {
		return true
	}
	md := cur.GetMetadata()
	if !strings.EqualFold(md[MetaValue], f.Value) {
		return false
	}
	return md[DateKey] == "" || f.Date == "" || md[DateKey] == f.Date
}

// consolidateInto marks the known facts under other keys whose current
// value is the one correction f replaces (a value an earlier extraction,
// or another extractor, filed under another subject or attribute): their
// next version keeps the value with consolidated_into = f's key, so the
// memory section never shows the stale value, and their history keeps it.
func (r *run) consolidateInto(ctx context.Context, t Scope, f consolidate.Fact) error {
	for _, k := range r.known {
		if k.Key() == f.Key() || !strings.EqualFold(k.Value, f.Replaces) {
			continue
		}
		cur, err := r.c.scopes.Get(ctx, t, k.Key())
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if cur.GetDeleted() || cur.GetMetadata()[MetaConsolidated] != "" {
			continue
		}
		if err := r.remark(ctx, t, cur, f.Key(), CommandID(r.id, k.Key(), "consolidated_into "+f.Key(), f.MessageIDs)); err != nil {
			return err
		}
	}
	return nil
}

// mergeSynonyms marks the known facts of f's subject filed under a
// synonym of f's attribute (an LLM extractor's "current_city" beside
// "home_city") consolidated_into f's key: a near-duplicate merges into the
// canonical key, a different value there is replaced by f's (its own
// history keeps it).
func (r *run) mergeSynonyms(ctx context.Context, t Scope, f consolidate.Fact) error {
	for _, k := range r.known {
		if k.Subject != f.Subject || k.Key() == f.Key() || consolidate.CanonicalAttribute(k.Attribute) != f.Attribute {
			continue
		}
		cur, err := r.c.scopes.Get(ctx, t, k.Key())
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if cur.GetDeleted() || cur.GetMetadata()[MetaConsolidated] != "" {
			continue
		}
		if err := r.remark(ctx, t, cur, f.Key(), CommandID(r.id, k.Key(), "consolidated_into "+f.Key(), f.MessageIDs)); err != nil {
			return err
		}
	}
	return nil
}

// entryAndHistory reads key's current entry (nil when absent) and its
// history.
func (r *run) entryAndHistory(ctx context.Context, t Scope, key string) (*memoryv1.Entry, []*memoryv1.Entry, error) {
	cur, err := r.c.scopes.Get(ctx, t, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	hist, err := r.c.scopes.History(ctx, t, key)
	if err != nil {
		return nil, nil, err
	}
	return cur, hist, nil
}

// remark writes cur's next version with consolidated_into = into ("":
// cleared), its value and the rest kept; a conflict (the key moved on)
// leaves it.
func (r *run) remark(ctx context.Context, t Scope, cur *memoryv1.Entry, into, cmd string) error {
	md := map[string]string{}
	for k, v := range cur.GetMetadata() {
		md[k] = v
	}
	if into == "" {
		delete(md, MetaConsolidated)
	} else {
		md[MetaConsolidated] = into
	}
	expected := int64(cur.GetVersion())
	req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: cur.GetKey(), Value: cur.GetValue(), ContentType: cur.GetContentType(),
		MemoryType: cur.GetMemoryType(), Importance: cur.GetImportance(), Tags: cur.GetTags(), Metadata: md, By: By,
		ExpectedVersion: &expected}
	rep, err := r.c.scopes.Put(ctx, t, req)
	switch {
	case errors.Is(err, ErrConflict):
		return nil
	case err != nil:
		return err
	}
	if !rep.GetResult().GetDuplicate() {
		r.written++
	}
	return nil
}

// digest writes the session's digest (episode/session/<id>) into its
// target scope: the next version when the session said more since.
func (r *run) digest(ctx context.Context, d consolidate.Digest) (*memoryv1.ExtractedFact, error) {
	key := DigestKey(r.id)
	x := &memoryv1.ExtractedFact{Key: key, Value: d.Text, MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Confidence: 1,
		MessageIds: d.MessageIDs}
	t, ok := Target(r.info)
	switch {
	case !ok:
		x.Outcome = "skipped"
		return x, nil
	case r.dryRun:
		x.Scope, x.Outcome = t.String(), "dry_run"
		return x, nil
	}
	x.Scope = t.String()
	cmd := CommandID(r.id, key, d.Text, d.MessageIDs)
	md := r.sourceMeta(map[string]string{MetaMessages: strings.Join(d.MessageIDs, ","), MetaExtractor: "digest", MetaCommand: cmd})
	if d.First != 0 {
		md[SaidKey] = strconv.FormatInt(d.First, 10)
		md[DateKey] = consolidate.Day(d.First)
		if last := consolidate.Day(d.Last); last != md[DateKey] {
			md[DateKey] += " to " + last
		}
	}
	req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: key, Value: []byte(d.Text), ContentType: "text/plain; charset=utf-8",
		MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Importance: 0.6, Metadata: md, By: By, Tags: []string{"consolidated", "digest"}}
	outcome, version, err := r.putOnce(ctx, t, req)
	if err != nil {
		return nil, err
	}
	x.Outcome, x.Version = outcome, version
	return x, nil
}

// putOnce writes req as its key's next version unless its command is in
// the key's history already ("duplicate"); a conflict is read again once.
func (r *run) putOnce(ctx context.Context, t Scope, req *memoryv1.PutEntryRequest) (string, uint64, error) {
	for attempt := 0; ; attempt++ {
		cur, hist, err := r.entryAndHistory(ctx, t, req.GetKey())
		if err != nil {
			return "", 0, err
		}
		for _, v := range hist {
			if v.GetMetadata()[MetaCommand] == req.GetCommandId() {
				return "duplicate", v.GetVersion(), nil
			}
		}
		expected := int64(0)
		if cur != nil {
			expected = int64(cur.GetVersion())
		}
		req.ExpectedVersion = &expected
		rep, err := r.c.scopes.Put(ctx, t, req)
		if err != nil {
			if errors.Is(err, ErrConflict) && attempt == 0 {
				continue
			}
			return "", 0, err
		}
		if rep.GetResult().GetDuplicate() {
			return "duplicate", rep.GetEntry().GetVersion(), nil
		}
		r.written++
		return "written", rep.GetEntry().GetVersion(), nil
	}
}

// lastSaid is when the last of msgs was said (0 unknown).
func lastSaid(msgs []consolidate.Message) int64 {
	var t int64
	for _, m := range msgs {
		t = max(t, m.Said)
	}
	return t
}

// mark records that the session was consolidated up to its stream
// sequence: consolidated/<id> in t, written last (a restart sweep skips a
// session with one; the memory section never shows it). Its value says
// how many facts the run read.
func (r *run) mark(ctx context.Context, t Scope, facts int, said int64) error {
	seq := r.info.GetSeq()
	expected := int64(-1)
	md := r.sourceMeta(nil)
	if said != 0 { // when the last message consolidated was said
		md[SaidKey] = strconv.FormatInt(said, 10)
	}
	// The same run (session, sequence and facts) writes the same marker:
	// a repeat is a duplicate.
	req := &memoryv1.PutEntryRequest{CommandId: fmt.Sprintf("consolidated-%s-%d-%d", r.id, seq, facts), Key: MarkerKey(r.id),
		Value:       []byte(fmt.Sprintf(`{"session":%q,"seq":%d,"facts":%d}`, r.id, seq, facts)),
		ContentType: "application/json", By: By, ExpectedVersion: &expected, Metadata: md}
	rep, err := r.c.scopes.Put(ctx, t, req)
	if err == nil && !rep.GetResult().GetDuplicate() {
		r.written++
	}
	return err
}
