package consolidation

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/consolidate"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Episode summaries: when a run writes an episode into an agent's scope
// that holds SummaryAfter similar older live episodes
// (consolidate.SimilarTasks), one summary entry (episode/summary/<task>,
// consolidate.SummarizeEpisodes) is written and the older entries are
// marked consolidated_into it, so the memory section shows the summary,
// not N near-copies. A later round with a summary among the similar
// episodes writes the summary's next version. Session digests
// (episode/session/…) are no episodes of a task and are left alone.
//
// Exactly once: the summary's command id comes from its text and its
// sources (key@version), and it lists them in metadata (MetaSummarizes);
// each run first finishes the marks of every summary (a crash between
// the summary and its marks), so a re-run writes nothing new.
//
// Erasure: a summary carries its latest source's SourceSessionKey and
// SourceUserKey, and one metadata pair per source session
// (SummarySessionKey + id) and user (SummaryUserKey + id); a session or
// user erase finds it by them and erases the whole summary entry. The
// other episodes it summarized stay, marked; the next run in the agent's
// scope finds their summary gone and clears the mark (they show again,
// and are summarized again later).

const (
	summaryExtractor  = "episode-summary"
	maxSummaryMDBytes = 3 << 10 // below sharedmem.MaxMetadataBytes: inputs are dropped, oldest first
)

// scopeEpisodes lists t's live entries under episode/ (at most
// maxKnownFacts), session digests aside.
func (r *run) scopeEpisodes(ctx context.Context, t Scope) ([]*memoryv1.Entry, error) {
	var out []*memoryv1.Entry
	token := ""
	for len(out) < maxKnownFacts {
		entries, next, err := r.c.scopes.List(ctx, t, "episode/", token)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.GetDeleted() && !strings.HasPrefix(e.GetKey(), DigestPrefix) {
				out = append(out, e)
			}
		}
		if token = next; token == "" {
			break
		}
	}
	return out, nil
}

// EpisodeOf reads an episode entry (as summaries read their inputs).
func EpisodeOf(e *memoryv1.Entry) consolidate.Episode {
	md := e.GetMetadata()
	ep := consolidate.Episode{Key: e.GetKey(), Version: e.GetVersion(), Text: string(e.GetValue()), Session: SourceSession(md),
		User: md[SourceUserKey], At: e.GetUpdatedUnixNano(), Task: consolidate.TaskOf(md[MetaAttribute])}
	if ep.Task == "" {
		ep.Task = consolidate.TaskOf(strings.TrimPrefix(e.GetKey(), "episode/"))
	}
	ep.Said, _ = strconv.ParseInt(md[SaidKey], 10, 64)
	if strings.HasPrefix(e.GetKey(), consolidate.SummaryKeyPrefix) {
		ep.Summary, ep.Task = true, md[MetaTask]
		ep.Count, _ = strconv.Atoi(md[MetaEpisodes])
		ep.Worked, _ = strconv.Atoi(md[MetaWorked])
	}
	return ep
}

// summarizeEpisodes runs after the run wrote (or found) the episode under
// key in t: it finishes pending marks, then summarizes the episode with
// its similar older ones when there are enough. It returns the summary's
// key when it wrote one.
func (r *run) summarizeEpisodes(ctx context.Context, t Scope, key string) (string, error) {
	k := r.c.summaryAfter()
	if k == 0 {
		return "", nil
	}
	all, err := r.scopeEpisodes(ctx, t)
	if err != nil {
		return "", err
	}
	if all, err = r.settleSummaryMarks(ctx, t, all); err != nil {
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
	ep := EpisodeOf(cur)
	terms := consolidate.TaskTerms(ep.Task)
	var similar []consolidate.Episode
	var summary *consolidate.Episode
	for _, e := range all {
		if e.GetKey() == key || e.GetMetadata()[MetaConsolidated] != "" {
			continue
		}
		o := EpisodeOf(e)
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
	sum, md := SummaryOf(inputs)
	for len(inputs) > 2 && metadataBytes(md) > maxSummaryMDBytes {
		inputs = slices.Delete(inputs, len(inputs)-2, len(inputs)-1) // the oldest older one
		sum, md = SummaryOf(inputs)
	}
	cmd := CommandID(r.id, sum.Key, sum.Text, sum.Sources)
	md[MetaCommand] = cmd
	req := &memoryv1.PutEntryRequest{CommandId: cmd, Key: sum.Key, Value: []byte(sum.Text), ContentType: "text/plain; charset=utf-8",
		MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Importance: 0.7, Metadata: md, By: By,
		Tags: []string{"consolidated", "summary"}}
	if _, _, err := r.putOnce(ctx, t, req); err != nil {
		return "", err
	}
	for _, in := range inputs {
		if in.Key == sum.Key {
			continue // the summary's own earlier version
		}
		if err := r.markInto(ctx, t, in.Key, in.Version, sum.Key, cmd); err != nil {
			return "", err
		}
	}
	return sum.Key, nil
}

// SummaryOf is the summary of inputs and the metadata its entry carries
// (the layout a session or user erase reads).
func SummaryOf(inputs []consolidate.Episode) (consolidate.EpisodeSummary, map[string]string) {
	sum := consolidate.SummarizeEpisodes(inputs)
	md := map[string]string{
		MetaExtractor: summaryExtractor, MetaSummarizes: strings.Join(sum.Sources, ","),
		MetaEpisodes: strconv.Itoa(sum.Count), MetaWorked: strconv.Itoa(sum.Worked), MetaTask: sum.Task,
	}
	if sum.Latest.Session != "" {
		md[SourceSessionKey] = sum.Latest.Session
	}
	if sum.Latest.User != "" {
		md[SourceUserKey] = sum.Latest.User
	}
	if sum.Latest.Said != 0 { // when the latest episode was said
		md[SaidKey] = strconv.FormatInt(sum.Latest.Said, 10)
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

// markInto gives key (at version) a next version marked consolidated_into
// into; nothing when key moved on since, or is marked already.
func (r *run) markInto(ctx context.Context, t Scope, key string, version uint64, into, cmd string) error {
	cur, err := r.c.scopes.Get(ctx, t, key)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.GetDeleted() || cur.GetVersion() != version || cur.GetMetadata()[MetaConsolidated] != "" {
		return nil
	}
	return r.remark(ctx, t, cur, into, CommandID(cmd, key, "consolidated_into "+into, nil))
}

// settleSummaryMarks finishes what a crash left of a summary round: every
// live summary's sources still at the version it summarized are marked;
// an episode marked into a summary that is gone (erased) is unmarked. It
// returns the episodes as they are now.
func (r *run) settleSummaryMarks(ctx context.Context, t Scope, all []*memoryv1.Entry) ([]*memoryv1.Entry, error) {
	live := map[string]*memoryv1.Entry{}
	for _, e := range all {
		live[e.GetKey()] = e
	}
	changed := false
	for _, e := range all {
		md := e.GetMetadata()
		if into := md[MetaConsolidated]; strings.HasPrefix(into, consolidate.SummaryKeyPrefix) && live[into] == nil {
			if err := r.remark(ctx, t, e, "", CommandID("unmark", e.GetKey(), "gone "+into, []string{strconv.FormatUint(e.GetVersion(), 10)})); err != nil {
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
			if err := r.markInto(ctx, t, key, v, e.GetKey(), md[MetaCommand]); err != nil {
				return nil, err
			}
			changed = true
		}
	}
	if !changed {
		return all, nil
	}
	return r.scopeEpisodes(ctx, t)
}
