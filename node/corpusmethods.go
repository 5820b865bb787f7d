package node

import (
	"context"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The reads of corpusReadModel routed to one partition: each in place on
// a local file (readModel's code) or asked of the owner, whose
// serveCorpus answers with the same readModel method (corpusserve.go).

// Method names of corpusCall.
const (
	mSession         = "session"
	mRecall          = "recall"
	mRecallSummaries = "recall_summaries"
	mSummaryAt       = "summary_at"
	mMessageAt       = "message_at"
	mSearchUser      = "search_user"
	mMessagesByID    = "messages_by_id"
	mSearch          = "search"
	mListSessions    = "list_sessions"
	mCountSessions   = "count_sessions"
	mDataBytes       = "data_bytes"
	mDataOwnedBy     = "data_owned_by"
	mSearchEntries   = "search_entries"
	mTopEntries      = "top_entries"
	mEntryText       = "entry_text"
	mEntryKey        = "entry_key"
	mEntriesWithMeta = "entries_with_metadata"
	mEntriesPrefix   = "entries_with_prefix"
	mLookupCommand   = "lookup_command"
)

// Session reads a session's index entry (ok false: unknown).
func (r *corpusReadModel) Session(id string) (e *memoryv1.SessionIndexEntry, ok bool, err error) {
	rt, err := r.sessionRoute(id)
	if err != nil {
		return nil, false, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mSession, ID: id},
		func(rm readModel) error { e, ok, err = rm.Session(id); return err },
		func(rep *corpusReply) error {
			e = new(memoryv1.SessionIndexEntry)
			has, err := getMsg(rep, e)
			if !has {
				e = nil
			}
			ok = rep.OK
			return err
		})
	return e, ok, err
}

// Recall pages a session's messages.
func (r *corpusReadModel) Recall(id string, offset, limit int) ([]*memoryv1.Message, uint64, error) {
	return pageSession(r, mRecall, id, offset, limit, readModel.Recall, newMessageProto)
}

// RecallSummaries pages a session's archived summaries.
func (r *corpusReadModel) RecallSummaries(id string, offset, limit int) ([]*memoryv1.Summary, uint64, error) {
	return pageSession(r, mRecallSummaries, id, offset, limit, readModel.RecallSummaries, func() *memoryv1.Summary { return new(memoryv1.Summary) })
}

// pageSession is Recall or RecallSummaries (read by read locally).
func pageSession[M proto.Message](r *corpusReadModel, method, id string, offset, limit int, read func(readModel, string, int, int) ([]M, uint64, error), newM func() M) (ms []M, n uint64, err error) {
	rt, err := r.sessionRoute(id)
	if err != nil {
		return nil, 0, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: method, ID: id, Offset: offset, Limit: limit},
		func(rm readModel) error { ms, n, err = read(rm, id, offset, limit); return err },
		func(rep *corpusReply) error { n = rep.N; ms, err = getMsgs(rep.Msgs, newM); return err })
	return ms, n, err
}

// SummaryAt reads an archived summary of a session (false: gone, or its
// owner did not answer, logged).
func (r *corpusReadModel) SummaryAt(id, summaryID string) (s *memoryv1.Summary, ok bool) {
	rt, err := r.sessionRoute(id)
	if err == nil {
		err = r.do(context.Background(), rt, corpusCall{Method: mSummaryAt, ID: id, Key: summaryID},
			func(rm readModel) error { s, ok = rm.SummaryAt(id, summaryID); return nil },
			func(rep *corpusReply) error {
				s = new(memoryv1.Summary)
				ok, err = getMsg(rep, s)
				return err
			})
	}
	if err != nil {
		r.logger.Warn("corpus read failed", "read", mSummaryAt, "session", id, "err", err)
		return nil, false
	}
	if !ok {
		s = nil
	}
	return s, ok
}

// MessageAt reads message seq of a session (false: gone, or its owner did
// not answer, logged).
func (r *corpusReadModel) MessageAt(id string, seq uint64) (m *memoryv1.Message, ok bool) {
	rt, err := r.sessionRoute(id)
	if err == nil {
		err = r.do(context.Background(), rt, corpusCall{Method: mMessageAt, ID: id, Seq: seq},
			func(rm readModel) error { m, ok = rm.MessageAt(id, seq); return nil },
			func(rep *corpusReply) error {
				m = new(memoryv1.Message)
				ok, err = getMsg(rep, m)
				return err
			})
	}
	if err != nil {
		r.logger.Warn("corpus read failed", "read", mMessageAt, "session", id, "err", err)
		return nil, false
	}
	if !ok {
		m = nil
	}
	return m, ok
}

// SearchUser searches a user's corpus (readModel.SearchUser).
func (r *corpusReadModel) SearchUser(user, except, q string, limit int) (hits []*memoryv1.SearchHit, err error) {
	err = r.do(context.Background(), r.corpusRoute(user), corpusCall{Method: mSearchUser, ID: user, Except: except, Query: q, Limit: limit},
		func(rm readModel) error { hits, err = rm.SearchUser(user, except, q, limit); return err },
		func(rep *corpusReply) error { hits, err = getMsgs(rep.Msgs, newSearchHit); return err })
	return hits, err
}

func newSearchHit() *memoryv1.SearchHit  { return new(memoryv1.SearchHit) }
func newMessageProto() *memoryv1.Message { return new(memoryv1.Message) }

// MessagesByID reads messages of a session's swap by id.
func (r *corpusReadModel) MessagesByID(id string, ids []string) (ms []*memoryv1.Message, err error) {
	rt, err := r.sessionRoute(id)
	if err != nil {
		return nil, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mMessagesByID, ID: id, IDs: ids},
		func(rm readModel) error { ms, err = rm.MessagesByID(id, ids); return err },
		func(rep *corpusReply) error { ms, err = getMsgs(rep.Msgs, newMessageProto); return err })
	return ms, err
}

// Search searches a session (or, by scope, its user's sessions). With
// split projections it ranks by BM25 alone: the query embedder is not
// used (an owner would have to embed, or the vector cross the hop).
func (r *corpusReadModel) Search(ctx context.Context, id string, scope memoryv1.SearchScope, q string, limit int, summaries bool) (hits []*memoryv1.SearchHit, err error) {
	rt, err := r.sessionRoute(id)
	if err != nil {
		return nil, err
	}
	err = r.do(ctx, rt, corpusCall{Method: mSearch, ID: id, Scope: int32(scope), Query: q, Limit: limit, Summaries: summaries},
		func(rm readModel) error { hits, err = rm.Search(ctx, id, scope, q, limit, summaries); return err },
		func(rep *corpusReply) error { hits, err = getMsgs(rep.Msgs, newSearchHit); return err })
	return hits, err
}

// DataBytes sums the sizes of owner's large data.
func (r *corpusReadModel) DataBytes(owner string) (n int64, err error) {
	rt, err := r.ownerRoute(owner)
	if err != nil {
		return 0, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mDataBytes, ID: owner},
		func(rm readModel) error { n, err = rm.DataBytes(owner); return err },
		func(rep *corpusReply) error { n = rep.I64; return nil })
	return n, err
}

// DataOwnedBy lists owner's large data ids.
func (r *corpusReadModel) DataOwnedBy(owner string) (ids []string, err error) {
	rt, err := r.ownerRoute(owner)
	if err != nil {
		return nil, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mDataOwnedBy, ID: owner},
		func(rm readModel) error { ids, err = rm.DataOwnedBy(owner); return err },
		func(rep *corpusReply) error { ids = rep.Strs; return nil })
	return ids, err
}

// SearchEntries ranks one scope's entries.
func (r *corpusReadModel) SearchEntries(aggKind, id string, req *memoryv1.SearchEntriesRequest) (hits []*memoryv1.EntryHit, err error) {
	rt, err := r.scopeRoute(aggKind, id)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mSearchEntries, Kind: aggKind, ID: id, Req: b},
		func(rm readModel) error { hits, err = rm.SearchEntries(aggKind, id, req); return err },
		func(rep *corpusReply) error {
			hits, err = getMsgs(rep.Msgs, func() *memoryv1.EntryHit { return new(memoryv1.EntryHit) })
			return err
		})
	return hits, err
}

// TopEntries returns a scope's entries by importance and recency.
func (r *corpusReadModel) TopEntries(aggKind, id string, limit int) (es []*memoryv1.Entry, err error) {
	rt, err := r.scopeRoute(aggKind, id)
	if err != nil {
		return nil, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mTopEntries, Kind: aggKind, ID: id, Limit: limit},
		func(rm readModel) error { es, err = rm.TopEntries(aggKind, id, limit); return err },
		func(rep *corpusReply) error {
			es, err = getMsgs(rep.Msgs, func() *memoryv1.Entry { return new(memoryv1.Entry) })
			return err
		})
	return es, err
}

// EntryText reads an entry version's text (false: gone, or its owner did
// not answer, logged).
func (r *corpusReadModel) EntryText(scope, key string, version uint64) (text string, ok bool) {
	rt, err := r.scopeNameRoute(scope)
	if err == nil {
		err = r.do(context.Background(), rt, corpusCall{Method: mEntryText, Kind: scope, Key: key, Seq: version},
			func(rm readModel) error { text, ok = rm.EntryText(scope, key, version); return nil },
			func(rep *corpusReply) error { text, ok = rep.Text, rep.OK; return nil })
	}
	if err != nil {
		r.logger.Warn("corpus read failed", "read", mEntryText, "scope", scope, "err", err)
		return "", false
	}
	return text, ok
}

// EntryKey reads the key a memory item names by digest (false: unknown,
// or its owner did not answer, logged).
func (r *corpusReadModel) EntryKey(scope string, sum []byte) (key string, ok bool) {
	rt, err := r.scopeNameRoute(scope)
	if err == nil {
		err = r.do(context.Background(), rt, corpusCall{Method: mEntryKey, Kind: scope, Sum: sum},
			func(rm readModel) error { key, ok = rm.EntryKey(scope, sum); return nil },
			func(rep *corpusReply) error { key, ok = rep.Text, rep.OK; return nil })
	}
	if err != nil {
		r.logger.Warn("corpus read failed", "read", mEntryKey, "scope", scope, "err", err)
		return "", false
	}
	return key, ok
}

// LookupCommand finds a command of aggregate kind/id in the command index,
// which every partition file keeps whole: it is read from a local file
// (ready or catching up), once that file covered the aggregate's own log
// partition up to covered, so that an actor's retried command is told
// without waiting for the partition of its corpus.
//
// A node without a file yet (just started) asks partition 0's owner: any
// file answers, once it covered the aggregate's log partition up to
// covered (the caller's K from the aggregate's token is not known here,
// so the wait names it as the owner's files count them).
func (r *corpusReadModel) LookupCommand(ctx context.Context, kind, id, key string, covered uint64) (*memoryv1.CommandResult, bool, error) {
	if f, ok := r.local.Any(); ok {
		return commandIndex{p: f.p, s: f.s}.LookupCommand(ctx, kind, id, key, covered)
	}
	var (
		res   *memoryv1.CommandResult
		found bool
	)
	call := corpusCall{Method: mLookupCommand, Kind: kind, ID: id, Key: key, Seq: covered, Wait: []uint64{}}
	err := r.do(ctx, route{part: 0}, call,
		func(readModel) error { return errNoCorpusFile }, // no local file: never called
		func(rep *corpusReply) error {
			res = new(memoryv1.CommandResult)
			has, err := getMsg(rep, res)
			if !has {
				res = nil
			}
			found = rep.OK
			return err
		})
	return res, found, err
}

// EntriesWithPrefix lists a scope's live entries whose key starts with
// prefix (a pattern library's), from the scope's partition.
func (r *corpusReadModel) EntriesWithPrefix(aggKind, id, prefix string, limit int) (es []*memoryv1.Entry, err error) {
	rt, err := r.scopeRoute(aggKind, id)
	if err != nil {
		return nil, err
	}
	err = r.do(context.Background(), rt, corpusCall{Method: mEntriesPrefix, Kind: aggKind, ID: id, Key: prefix, Limit: limit},
		func(rm readModel) error { es, err = rm.EntriesWithPrefix(aggKind, id, prefix, limit); return err },
		func(rep *corpusReply) error {
			es, err = getMsgs(rep.Msgs, func() *memoryv1.Entry { return new(memoryv1.Entry) })
			return err
		})
	return es, err
}
