package api

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Episode summaries (DESIGN §13): when consolidation writes an episode
// into an agent's scope that holds Config.EpisodeSummaryAfter similar
// older live episodes (consolidate.SimilarTasks), one summary entry
// (episode/summary/<task>, consolidate.SummarizeEpisodes) is written and
// the older entries are marked consolidated_into it, so the memory section
// shows the summary, not N near-copies. A later round with a summary
// among the similar episodes writes the summary's next version.
//
// Exactly once: the summary's command id comes from its text and its
// sources (key@version), and it lists them in metadata (MetaSummarizes);
// each run first finishes the marks of every summary (a crash between
// the summary and its marks), so a re-run writes nothing new.
//
// Erasure: a summary carries its latest source's agentmem.source_user and
// agentmem.source_session, and one metadata pair per source session
// (SummarySessionKey + id) and user (SummaryUserKey + id); a session or
// user erase finds it by them (EntriesWithMetadata reads every version, so
// the sessions of earlier versions are found too) and erases the whole
// summary entry. The other episodes it summarized stay, marked; the next
// consolidation of the agent finds their summary gone and clears the mark
// (they show again, and are summarized again later).

// Metadata of a summary entry.
const (
	MetaSummarizes    = "summarizes" // sources, "key@version" comma-separated
	MetaEpisodes      = "episodes"   // episodes counted
	MetaWorked        = "worked"     // of which worked
	MetaTask          = "task"
	SummarySessionKey = erasure.SummarySessionKey // + session id = session id
	SummaryUserKey    = erasure.SummaryUserKey    // + user id = user id
	summaryExtractor  = "episode-summary"
	maxSummaryMDBytes = 3 << 10 // below sharedmem.MaxMetadataBytes: inputs are dropped, oldest first
)

// summaryAfter is the configured threshold (0: the default; < 0: off).
func (s *Service) summaryAfter() int {
	switch k := s.cfg.EpisodeSummaryAfter; {
	case k < 0:
		return 0
	case k == 0:
		return consolidate.DefaultSummaryAfter
	default:
		return min(k, consolidate.MaxSummaryAfter)
	}
}

// scopeEpisodes lists t's entries under episode/ (live ones, at most
// maxKnownFacts).
func (s *Service) scopeEpisodes(ctx context.Context, t scopeTarget) ([]*memoryv1.Entry, error) {
	var out []*memoryv1.Entry
	token := ""
	for len(out) < maxKnownFacts {
		m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
			return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.ListEntriesRequest{Prefix: "episode/", Limit: sharedmem.MaxListLimit, PageToken: token}, reply)
		})
		if err != nil {
			return nil, err
		}
		r := m.(*memoryv1.ListEntriesReply)
		for _, e := range r.GetEntries() {
			if !e.GetDeleted() {
				out = append(out, e)
			}
		}
		if token = r.GetNextPageToken(); token == "" {
			break
		}
	}
	return out, nil
}

// episodeOf reads an episode entry.
func episodeOf(e *memoryv1.Entry) consolidate.Episode {
	md := e.GetMetadata()
	ep := consolidate.Episode{Key: e.GetKey(), Version: e.GetVersion(), Text: string(e.GetValue()), Session: erasure.SourceSession(md),
		User: md[SourceUserKey], At: e.GetUpdatedUnixNano(), Task: consolidate.TaskOf(md[MetaAttribute])}
	if ep.Task == "" {
		ep.Task = consolidate.TaskOf(strings.TrimPrefix(e.GetKey(), "episode/"))
	}
	if strings.HasPrefix(e.GetKey(), consolidate.SummaryKeyPrefix) {
		ep.Summary, ep.Task = true, md[MetaTask]
		ep.Count, _ = strconv.Atoi(md[MetaEpisodes])
		ep.Worked, _ = strconv.Atoi(md[MetaWorked])
	}
	return ep
}

// summarizeEpisodes runs after consolidation wrote (or found) the episode
// under key in t from session: it finishes pending marks, then summarizes
// the episode with its similar older ones when there are enough.
// It returns the summary's key when it wrote one.
func (s *Service) summarizeEpisodes(ctx context.Context, t scopeTarget, session, key string) (string, error) {
	k := s.summaryAfter()
	if k == 0 {
		return "", nil
	}
	all, err := s.scopeEpisodes(ctx, t)
	if err != nil {
		return "", err
	}
	if all, err = s.settleSummaryMarks(ctx, t, all); err != nil {
		return "", err
	}
	var cur *memoryv1.Entry
	for _, e := range all {
		if e.GetKey() == key {
			cur = e
		}
	}
	if cur == nil || cur.GetMetadata()[MetaConsolidated] != "" || strings.HasPrefix(key, consolidate.SummaryKeyPrefix) {
		return "", nil
	}
	ep := episodeOf(cur)
	terms := consolidate.TaskTerms(ep.Task)
	var similar []consolidate.Episode
	var summary *consolidate.Episode
	for _, e := range all {
		if e.GetKey() == key || e.GetMetadata()[MetaConsolidated] != "" {
			continue
		}
		o := episodeOf(e)
		if !consolidate.SimilarTasks(terms, consolidate.TaskTerms(o.Task)) {
			continue
		}
		if o.Summary { // at most one summary goes in: the newest
			if summary == nil || o.At > summary.At || (o.At == summary.At && o.Key < summary.Key) {
				summary = &o
			}
			continue
		}
		similar = append(similar, o)
	}
	if summary != nil {
		similar = append(similar, *summary)
	}
	if len(similar) < k {
		return "", nil
	}
	// The newest k older ones (a summary always kept), then the new one.
	slices.SortFunc(similar, func(a, b consolidate.Episode) int {
		switch {
		case a.Summary != b.Summary:
			if a.Summary {
				return -1
			}
			return 1
		case a.At != b.At:
			if a.At > b.At {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	inputs := append(similar[:k:k], ep)
	sum, md := summaryOf(inputs)
	for len(inputs) > 2 && metadataBytes(md) > maxSummaryMDBytes {
		inputs = slices.Delete(inputs, len(inputs)-2, len(inputs)-1) // the oldest older one
		sum, md = summaryOf(inputs)
	}
	cmd := FactCommandID(session, sum.Key, sum.Text, sum.Sources)
	md[MetaCommand] = cmd
	if err := s.putSummary(ctx, t, sum, md, cmd); err != nil {
		return "", err
	}
	for _, in := range inputs {
		if in.Key == sum.Key {
			continue // the summary's own earlier version
		}
		if err := s.markInto(ctx, t, in.Key, in.Version, sum.Key, cmd); err != nil {
			return "", err
		}
	}
	return sum.Key, nil
}

// summaryOf is the summary of inputs and its metadata.
func summaryOf(inputs []consolidate.Episode) (consolidate.EpisodeSummary, map[string]string) {
	sum := consolidate.SummarizeEpisodes(inputs)
	md := map[string]string{
		MetaSource: sum.Latest.Session, MetaExtractor: summaryExtractor, MetaSummarizes: strings.Join(sum.Sources, ","),
		MetaEpisodes: strconv.Itoa(sum.Count), MetaWorked: strconv.Itoa(sum.Worked), MetaTask: sum.Task,
	}
	if sum.Latest.Session != "" {
		md[SourceSessionKey] = sum.Latest.Session
	}
	if sum.Latest.User != "" {
		md[SourceUserKey] = sum.Latest.User
	}
	for _, id := range sum.Sessions {
		md[SummarySessionKey+id] = id
	}
	for _, id := range sum.Users {
		md[SummaryUserKey+id] = id
	}
	return sum, md
}

func metadataBytes(md map[string]string) int {
	n := len(MetaCommand) + 45 // the command id, added after
	for k, v := range md {
		n += len(k) + len(v)
	}
	return n
}

// putSummary writes the summary as sum.Key's next version, unless its
// command is in the key's history already.
func (s *Service) putSummary(ctx context.Context, t scopeTarget, sum consolidate.EpisodeSummary, md map[string]string, cmd string) error {
	for attempt := 0; ; attempt++ {
		cur, hist, err := s.entryAndHistory(ctx, t, sum.Key)
		if err != nil {
			return err
		}
		for _, v := range hist {
			if v.GetMetadata()[MetaCommand] == cmd {
				return nil
			}
		}
		expected := int64(-1)
		if cur != nil {
			expected = int64(cur.GetVersion())
		}
		req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: sum.Key, Value: []byte(sum.Text), ContentType: "text/plain; charset=utf-8",
			MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Importance: 0.7, Metadata: md, By: consolidatedBy,
			Tags: []string{"consolidated", "summary"}, ExpectedVersion: &expected}
		_, err = s.call(ctx, func(reply actors.ReplyFunc) error { return s.scopes.DispatchScope(t.kind, t.id, nil, req, reply) })
		if err != nil && Classify(err).Code == 409 && attempt == 0 {
			continue
		}
		return err
	}
}

// markInto gives key (at version) a next version marked consolidated_into
// into; nothing when key moved on since, or is marked already.
func (s *Service) markInto(ctx context.Context, t scopeTarget, key string, version uint64, into, cmd string) error {
	cur, err := s.getEntry(ctx, t.kind, t.id, key)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.GetDeleted() || cur.GetVersion() != version || cur.GetMetadata()[MetaConsolidated] != "" {
		return nil
	}
	return s.remark(ctx, t, cur, into, FactCommandID(cmd, key, "consolidated_into "+into, nil))
}

// remark writes cur's next version with consolidated_into = into ("":
// cleared), its value and the rest kept.
func (s *Service) remark(ctx context.Context, t scopeTarget, cur *memoryv1.Entry, into, cmd string) error {
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
		MemoryType: cur.GetMemoryType(), Importance: cur.GetImportance(), Tags: cur.GetTags(), Metadata: md, By: consolidatedBy,
		ExpectedVersion: &expected}
	if _, err := s.call(ctx, func(reply actors.ReplyFunc) error { return s.scopes.DispatchScope(t.kind, t.id, nil, req, reply) }); err != nil && Classify(err).Code != 409 {
		return err
	}
	return nil
}

// settleSummaryMarks finishes what a crash left of a summary round: every
// live summary's sources still at the version it summarized are marked;
// an episode marked into a summary that is gone (erased) is unmarked. It
// returns the episodes as they are now.
func (s *Service) settleSummaryMarks(ctx context.Context, t scopeTarget, all []*memoryv1.Entry) ([]*memoryv1.Entry, error) {
	live := map[string]*memoryv1.Entry{}
	for _, e := range all {
		live[e.GetKey()] = e
	}
	changed := false
	for _, e := range all {
		md := e.GetMetadata()
		if into := md[MetaConsolidated]; strings.HasPrefix(into, consolidate.SummaryKeyPrefix) && live[into] == nil {
			if err := s.remark(ctx, t, e, "", FactCommandID("unmark", e.GetKey(), "gone "+into, []string{strconv.FormatUint(e.GetVersion(), 10)})); err != nil {
				return nil, err
			}
			changed = true
			continue
		}
		if !strings.HasPrefix(e.GetKey(), consolidate.SummaryKeyPrefix) || md[MetaSummarizes] == "" {
			continue
		}
		for _, src := range strings.Split(md[MetaSummarizes], ",") {
			at := strings.LastIndexByte(src, '@')
			if at < 0 {
				continue
			}
			key := src[:at]
			v, err := strconv.ParseUint(src[at+1:], 10, 64)
			o := live[key]
			if err != nil || key == e.GetKey() || o == nil || o.GetVersion() != v || o.GetMetadata()[MetaConsolidated] != "" {
				continue
			}
			if err := s.markInto(ctx, t, key, v, e.GetKey(), md[MetaCommand]); err != nil {
				return nil, err
			}
			changed = true
		}
	}
	if !changed {
		return all, nil
	}
	return s.scopeEpisodes(ctx, t)
}
