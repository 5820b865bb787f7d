package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Consolidation (DESIGN §13): the facts a session's user states become
// entries of long-term memory. It runs beside the actors (a query
// goroutine, or one started when a session terminates), never inside
// Receive; its outcome is ordinary entry writes, so replay never extracts
// again.
//
// Exactly once: each fact's command id is derived from the session, the
// fact's key and value and its source message ids, and is kept in the
// entry's metadata. A re-run (after a crash mid-way, or a second trigger)
// finds the command in the key's history, or the value already current,
// and writes nothing; JetStream's Nats-Msg-Id window and the scope's recent
// commands answer a retry in flight as a duplicate.
//
// Tenancy: the targets come from the session itself (its user_id and
// agent_id), never from a body, so a user's facts land only in that user's
// scope.

// Metadata keys of an entry consolidation wrote.
const (
	MetaSource         = SourceSessionKey // erasure.SourceSessionKey; entries written before hold erasure.LegacySourceSessionKey
	MetaMessages       = "source_messages"
	MetaConfidence     = "confidence"
	MetaSubject        = "subject"
	MetaAttribute      = "attribute"
	MetaValue          = "fact_value"
	MetaExtractor      = "extractor"
	MetaCommand        = "consolidation_command"
	MetaReplaces       = "replaces"
	MetaProposedFor    = "proposed_for"
	MetaConsolidated   = "consolidated_into"
	MetaMergedBy       = "merged_by"
	consolidatedBy     = "consolidation"
	reviewPrefix       = "review/"
	doneMarkerPrefix   = "consolidated/"
	maxSessionMsgs     = 20000 // messages read for one consolidation
	consolidatePage    = MaxRecallLimit
	maxKnownFacts      = 5000
	consolidateTimeout = 2 * time.Minute
)

// FactExtractor extracts facts (the deterministic extractor, or an LLM with
// it as fallback). name is reported in ConsolidateReply.extractor.
type FactExtractor interface {
	ExtractFacts(ctx context.Context, msgs []consolidate.Message, known []consolidate.Fact) (facts []consolidate.Fact, name string, err error)
}

// FactMerger merges the current value of a fact with a new one (strategy
// "llm"): it returns the value the key should hold.
type FactMerger interface {
	MergeFact(ctx context.Context, key, current, proposed string) (string, error)
}

// deterministicExtractor is consolidate.Extract.
type deterministicExtractor struct{}

func (deterministicExtractor) ExtractFacts(_ context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, string, error) {
	return consolidate.Extract(msgs, known), "deterministic", nil
}

func (s *Service) extractor() FactExtractor {
	if s.cfg.Extractor != nil {
		return s.cfg.Extractor
	}
	return deterministicExtractor{}
}

// consolidateEndpoint serves mem.v1.session.<id>.consolidate: who must be
// allowed to change the session.
func (s *Service) consolidateEndpoint(ctx context.Context, who *tenancy.Caller, id string, req proto.Message, reply actors.ReplyFunc) {
	if s.scopes == nil || s.rm == nil {
		reply(nil, &Error{Code: 503, Message: "consolidation needs the scopes and the read model"})
		return
	}
	if err := s.checkSession(ctx, who, id, true); err != nil {
		reply(nil, err)
		return
	}
	reply(s.Consolidate(ctx, id, req.(*memoryv1.ConsolidateRequest).GetDryRun()))
}

// Consolidate extracts the facts of session id and writes them: semantic
// facts and instructions into user:<the session's user>, episodes into
// agent:<the session's agent>. A fact without such a scope is skipped.
func (s *Service) Consolidate(ctx context.Context, id string, dryRun bool) (*memoryv1.ConsolidateReply, error) {
	info, err := s.sessionInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.rm.WaitFor(ctx, info.GetSeq()); err != nil {
		return nil, &Error{Code: 503, Message: "the read model is behind the session: " + err.Error()}
	}
	msgs, err := s.sessionMessages(id)
	if err != nil {
		return nil, err
	}
	var user, agent *scopeTarget
	if u := info.GetUserId(); u != "" {
		user = &scopeTarget{sharedmem.KindUser, u}
	}
	if a := info.GetAgentId(); a != "" {
		agent = &scopeTarget{sharedmem.KindAgent, a}
	}
	var known []consolidate.Fact
	strategy := ""
	if user != nil {
		if known, err = s.knownFacts(ctx, *user); err != nil {
			return nil, err
		}
		if strategy, err = s.conflictStrategy(ctx, *user); err != nil {
			return nil, err
		}
	}
	facts, name, err := s.extractor().ExtractFacts(ctx, msgs, known)
	if err != nil { // an extractor that fails falls back to the deterministic one
		s.logger.Warn("consolidation: extractor failed; using the deterministic one", "session", id, "err", err)
		facts, name, _ = deterministicExtractor{}.ExtractFacts(ctx, msgs, known)
	}
	out := &memoryv1.ConsolidateReply{Extractor: name}
	for i := range facts { // one fact, one key, whichever extractor named it
		facts[i].Attribute = consolidate.CanonicalAttribute(facts[i].Attribute)
	}
	for _, f := range facts {
		t := user
		if f.Type == consolidate.Episodic {
			t = agent
		}
		x := &memoryv1.ExtractedFact{Key: f.Key(), Value: f.Text(), MemoryType: memoryType(f.Type), Confidence: f.Confidence,
			MessageIds: f.MessageIDs, Correction: f.Correction, Replaces: f.Replaces, Retract: f.Retract}
		switch {
		case t == nil:
			x.Outcome = "skipped"
		case dryRun:
			x.Scope, x.Outcome = string(t.kind)+":"+t.id, "dry_run"
		default:
			x.Scope = string(t.kind) + ":" + t.id
			st := strategy
			if t != user {
				st = ""
			}
			if err := s.writeFact(ctx, *t, id, info.GetUserId(), name, f, st, x); err != nil {
				return nil, err
			}
			if t == user && f.Replaces != "" && x.GetOutcome() == "written" {
				if err := s.consolidateInto(ctx, *t, id, f, known); err != nil {
					return nil, err
				}
			}
			if t == user && f.Type == consolidate.Semantic && !f.Retract && x.GetOutcome() != "review" {
				if err := s.mergeSynonyms(ctx, *t, id, f, known); err != nil {
					return nil, err
				}
			}
			if t == agent && f.Type == consolidate.Episodic && !f.Retract && x.GetOutcome() != "review" {
				sk, err := s.summarizeEpisodes(ctx, *t, id, f.Key())
				if err != nil {
					return nil, err
				}
				if sk != "" {
					x.SummarizedInto = sk
				}
			}
			if t == user && f.Type == consolidate.Semantic && !f.Retract {
				known = append(known, f) // later facts of this run may replace it
			}
		}
		s.metrics.ConsolidatedFacts.WithLabelValues(x.GetOutcome()).Inc()
		out.Facts = append(out.Facts, x)
	}
	if !dryRun {
		if t := firstOf(user, agent); t != nil {
			if err := s.markConsolidated(ctx, *t, id, info.GetSeq(), len(facts)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func firstOf(ts ...*scopeTarget) *scopeTarget {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
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

// sessionMessages reads the session's messages from the read model, in
// order (at most maxSessionMsgs).
func (s *Service) sessionMessages(id string) ([]consolidate.Message, error) {
	var out []consolidate.Message
	for off := 0; off < maxSessionMsgs; off += consolidatePage {
		page, _, err := s.rm.Recall(id, off, consolidatePage)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if m.GetRole() != memoryv1.Role_ROLE_USER && m.GetRole() != memoryv1.Role_ROLE_ASSISTANT {
				continue
			}
			out = append(out, consolidate.Message{ID: m.GetId(), Seq: m.GetSeq(), User: m.GetRole() == memoryv1.Role_ROLE_USER, Text: m.GetContent()})
		}
		if len(page) < consolidatePage {
			break
		}
	}
	return out, nil
}

// knownFacts are the facts scope t holds (entries under fact/ with a
// subject and an attribute in their metadata).
func (s *Service) knownFacts(ctx context.Context, t scopeTarget) ([]consolidate.Fact, error) {
	var out []consolidate.Fact
	token := ""
	for len(out) < maxKnownFacts {
		m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
			return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.ListEntriesRequest{Prefix: "fact/", Limit: sharedmem.MaxListLimit, PageToken: token}, reply)
		})
		if err != nil {
			return nil, err
		}
		r := m.(*memoryv1.ListEntriesReply)
		for _, e := range r.GetEntries() {
			md := e.GetMetadata()
			if md[MetaSubject] == "" || md[MetaAttribute] == "" || md[MetaConsolidated] != "" {
				continue
			}
			v := md[MetaValue]
			if v == "" {
				continue
			}
			out = append(out, consolidate.Fact{Subject: md[MetaSubject], Attribute: md[MetaAttribute], Value: v, Type: consolidate.Semantic})
		}
		if token = r.GetNextPageToken(); token == "" {
			break
		}
	}
	return out, nil
}

// conflictStrategy is scope t's ScopeConfig.conflict_strategy.
func (s *Service) conflictStrategy(ctx context.Context, t scopeTarget) (string, error) {
	m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
		return s.scopes.DispatchScope(t.kind, t.id, nil, actors.ReadScopeConfig{}, reply)
	})
	if err != nil {
		return "", err
	}
	return m.(*memoryv1.ConfigureScopeReply).GetConfig().GetConflictStrategy(), nil
}

// factCommandID is the command id of writing f from session id: the same
// fact from the same messages always has the same id.
func factCommandID(session string, f consolidate.Fact) string {
	return FactCommandID(session, f.Key(), f.Text(), f.MessageIDs)
}

// FactCommandID is the command id consolidation writes a fact with (key,
// entry value, source message ids) from session: stable across runs.
func FactCommandID(session, key, value string, messageIDs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", session, key, value, strings.Join(messageIDs, ","))
	return "consolidate-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// writeFact writes f into t, unless it is there already, and records the
// outcome in x. sourceUser is the session's user (kept in the entry's
// metadata, SourceUserKey). With strategy review a new value for a key holding
// another one waits under review/<key>.
func (s *Service) writeFact(ctx context.Context, t scopeTarget, session, sourceUser, extractor string, f consolidate.Fact, strategy string, x *memoryv1.ExtractedFact) error {
	key, cmd := f.Key(), factCommandID(session, f)
	for attempt := 0; ; attempt++ {
		cur, hist, err := s.entryAndHistory(ctx, t, key)
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
			m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
				return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.DeleteEntryRequest{CommandId: cmd, Key: key, ExpectedVersion: &expected, By: consolidatedBy}, reply)
			})
			if err != nil {
				if Classify(err).Code == 409 && attempt == 0 {
					continue
				}
				return err
			}
			x.Outcome, x.Version = "retracted", m.(*memoryv1.EntryReply).GetEntry().GetVersion()
			return nil
		}
		if live && (strings.EqualFold(string(cur.GetValue()), f.Text()) || strings.EqualFold(cur.GetMetadata()[MetaValue], f.Value)) {
			x.Outcome, x.Version = "unchanged", cur.GetVersion() // a near-duplicate merges into what is there
			return nil
		}
		md := map[string]string{
			MetaSource: session, MetaMessages: strings.Join(f.MessageIDs, ","), MetaConfidence: strconv.FormatFloat(f.Confidence, 'f', 2, 64),
			MetaSubject: f.Subject, MetaAttribute: f.Attribute, MetaValue: f.Value, MetaExtractor: extractor, MetaCommand: cmd,
		}
		if sourceUser != "" { // a user erase finds what its user said, in any scope (an episode in the agent's)
			md[SourceUserKey] = sourceUser
		}
		req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: key, Value: []byte(f.Text()), ContentType: "text/plain; charset=utf-8",
			MemoryType: memoryType(f.Type), Importance: f.Confidence, Metadata: md, By: consolidatedBy, Tags: []string{"consolidated"}}
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
		if live && strategy == sharedmem.StrategyLLM && s.cfg.Merger != nil {
			merged, err := s.cfg.Merger.MergeFact(ctx, key, old, f.Value)
			switch {
			case err != nil:
				s.logger.Warn("consolidation: the LLM merge failed; last write wins", "key", key, "err", err)
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
			req.Key, outcome = reviewPrefix+key, "review"
			expected = -1
		}
		req.ExpectedVersion = &expected
		m, err := s.call(ctx, func(reply actors.ReplyFunc) error { return s.scopes.DispatchScope(t.kind, t.id, nil, req, reply) })
		if err != nil {
			if Classify(err).Code == 409 && attempt == 0 {
				continue // another writer moved the key: read it again, decide once more
			}
			return err
		}
		r := m.(*memoryv1.EntryReply)
		x.Outcome, x.Version = outcome, r.GetEntry().GetVersion()
		if r.GetResult().GetDuplicate() {
			x.Outcome = "duplicate"
		}
		return nil
	}
}

// consolidateInto marks the known facts under other keys whose current
// value is the one correction f replaces (a value an earlier extraction,
// or another extractor, filed under another subject or attribute): their
// next version keeps the value with consolidated_into = f's key, so the
// memory section never shows the stale value, and their history keeps it.
func (s *Service) consolidateInto(ctx context.Context, t scopeTarget, session string, f consolidate.Fact, known []consolidate.Fact) error {
	for _, k := range known {
		if k.Key() == f.Key() || !strings.EqualFold(k.Value, f.Replaces) {
			continue
		}
		cur, err := s.getEntry(ctx, t.kind, t.id, k.Key())
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		md := cur.GetMetadata()
		if cur.GetDeleted() || md[MetaConsolidated] != "" {
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[MetaConsolidated] = f.Key()
		expected := int64(cur.GetVersion())
		req := &memoryv1.PutEntryRequest{CommandId: FactCommandID(session, k.Key(), "consolidated_into "+f.Key(), f.MessageIDs), Key: k.Key(),
			Value: cur.GetValue(), ContentType: cur.GetContentType(), MemoryType: cur.GetMemoryType(), Importance: cur.GetImportance(),
			Tags: cur.GetTags(), Metadata: md, By: consolidatedBy, ExpectedVersion: &expected}
		if _, err := s.call(ctx, func(reply actors.ReplyFunc) error { return s.scopes.DispatchScope(t.kind, t.id, nil, req, reply) }); err != nil && Classify(err).Code != 409 {
			return err
		}
	}
	return nil
}

// mergeSynonyms marks the known facts of f's subject filed under a
// synonym of f's attribute (data/attribute_synonyms.txt: an LLM
// extractor's "current_city" beside "home_city") consolidated_into f's
// key: a near-duplicate merges into the canonical key, a different value
// there is replaced by f's (its own history keeps it).
func (s *Service) mergeSynonyms(ctx context.Context, t scopeTarget, session string, f consolidate.Fact, known []consolidate.Fact) error {
	for _, k := range known {
		if k.Subject != f.Subject || k.Key() == f.Key() || consolidate.CanonicalAttribute(k.Attribute) != f.Attribute {
			continue
		}
		cur, err := s.getEntry(ctx, t.kind, t.id, k.Key())
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if cur.GetDeleted() || cur.GetMetadata()[MetaConsolidated] != "" {
			continue
		}
		if err := s.remark(ctx, t, cur, f.Key(), FactCommandID(session, k.Key(), "consolidated_into "+f.Key(), f.MessageIDs)); err != nil {
			return err
		}
	}
	return nil
}

// entryAndHistory reads key's current entry (nil when absent) and its
// history.
func (s *Service) entryAndHistory(ctx context.Context, t scopeTarget, key string) (*memoryv1.Entry, []*memoryv1.Entry, error) {
	cur, err := s.getEntry(ctx, t.kind, t.id, key)
	if isNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
		return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.HistoryRequest{Key: key}, reply)
	})
	if err != nil {
		return nil, nil, err
	}
	return cur, m.(*memoryv1.HistoryReply).GetVersions(), nil
}

// markConsolidated records that session id was consolidated up to its
// stream sequence seq: consolidated/<id> in t (the restart sweep skips a
// session with one; the memory section never shows it).
func (s *Service) markConsolidated(ctx context.Context, t scopeTarget, id string, seq uint64, n int) error {
	expected := int64(-1)
	req := &memoryv1.PutEntryRequest{CommandId: "consolidated-" + id + "-" + strconv.FormatUint(seq, 10), Key: doneMarkerPrefix + id,
		Value: []byte(fmt.Sprintf(`{"session":%q,"seq":%d,"facts":%d}`, id, seq, n)), ContentType: "application/json",
		By: consolidatedBy, ExpectedVersion: &expected, Metadata: map[string]string{MetaSource: id}}
	_, err := s.call(ctx, func(reply actors.ReplyFunc) error { return s.scopes.DispatchScope(t.kind, t.id, nil, req, reply) })
	return err
}

// consolidatedAt reports whether session id has a consolidated/<id>
// marker in t.
func (s *Service) consolidatedAt(ctx context.Context, t scopeTarget, id string) (bool, error) {
	_, err := s.getEntry(ctx, t.kind, t.id, doneMarkerPrefix+id)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// hiddenFromMemory: entries the memory section never shows: consolidation
// markers, values waiting for review, and values consolidated into
// another key (stale).
func hiddenFromMemory(e *memoryv1.Entry) bool {
	k := e.GetKey()
	return strings.HasPrefix(k, doneMarkerPrefix) || strings.HasPrefix(k, reviewPrefix) || e.GetMetadata()[MetaConsolidated] != ""
}
