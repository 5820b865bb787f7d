package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// corpusServeConcurrency bounds the requests one partition's server
// answers at a time; past it the subscription waits (NATS buffers the
// rest, up to its pending limits).
const corpusServeConcurrency = 32

// serveCorpus answers corpusSubject(c) (queue group corpusQueue) from
// local file f: each request in its own goroutine (at most
// corpusServeConcurrency), waiting first (bounded by the request's
// wait_ms, at most corpusWaitBound but for a command lookup) until f
// applied the caller's position, then read with readModel's code. Stop it
// with the subscription's Unsubscribe (or Drain); a request still being
// answered then ends within its bound, or at once when ctx ends.
func serveCorpus(ctx context.Context, nc *nats.Conn, c int, f corpusFile, logger *slog.Logger) (*nats.Subscription, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rm := readModel{p: f.p, s: f.s, logger: logger} // no query embedder: BM25 only
	slots := make(chan struct{}, corpusServeConcurrency)
	return nc.QueueSubscribe(corpusSubject(c), corpusQueue, func(m *nats.Msg) {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			defer func() { <-slots }()
			rep := answerCorpus(ctx, rm, c, f, m.Data)
			data, err := json.Marshal(rep)
			if err != nil {
				data, _ = json.Marshal(&corpusReply{Err: toCorpusErr(err)})
			}
			if err := m.Respond(data); err != nil {
				logger.Debug("corpus reply not sent", "partition", c, "err", err)
			}
		}()
	})
}

// answerCorpus answers one request.
func answerCorpus(ctx context.Context, rm readModel, c int, f corpusFile, data []byte) *corpusReply {
	var call corpusCall
	if err := json.Unmarshal(data, &call); err != nil {
		return &corpusReply{Err: toCorpusErr(&api.Error{Code: 400, Field: "body", Message: "not a corpus request: " + err.Error()})}
	}
	bound := max(min(time.Duration(call.WaitMS)*time.Millisecond, corpusWaitBound), time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := waitCorpus(wctx, f, c, call.Wait, bound); err != nil {
		return &corpusReply{Err: toCorpusErr(err)}
	}
	rep, err := readCorpus(wctx, rm, &call)
	if err != nil {
		return &corpusReply{Err: toCorpusErr(err)}
	}
	return rep
}

// readCorpus runs call's read on rm.
func readCorpus(ctx context.Context, rm readModel, call *corpusCall) (*corpusReply, error) {
	rep := new(corpusReply)
	var (
		err  error
		msgs func() ([][]byte, error)
	)
	one := func(m proto.Message, ok bool) func() ([][]byte, error) {
		rep.OK = ok
		return func() ([][]byte, error) {
			if !ok {
				return nil, nil
			}
			b, err := proto.Marshal(m)
			return [][]byte{b}, err
		}
	}
	switch call.Method {
	case mSession:
		e, ok, rerr := rm.Session(call.ID)
		msgs, err = one(e, ok), rerr
	case mRecall:
		ms, n, rerr := rm.Recall(call.ID, call.Offset, call.Limit)
		msgs, rep.N, err = func() ([][]byte, error) { return putMsgs(ms) }, n, rerr
	case mRecallSummaries:
		ms, n, rerr := rm.RecallSummaries(call.ID, call.Offset, call.Limit)
		msgs, rep.N, err = func() ([][]byte, error) { return putMsgs(ms) }, n, rerr
	case mSummaryAt:
		s, ok := rm.SummaryAt(call.ID, call.Key)
		msgs = one(s, ok)
	case mMessageAt:
		m, ok := rm.MessageAt(call.ID, call.Seq)
		msgs = one(m, ok)
	case mSearchUser:
		hits, rerr := rm.SearchUser(call.ID, call.Except, call.Query, call.Limit)
		msgs, err = func() ([][]byte, error) { return putMsgs(hits) }, rerr
	case mMessagesByID:
		ms, rerr := rm.MessagesByID(call.ID, call.IDs)
		msgs, err = func() ([][]byte, error) { return putMsgs(ms) }, rerr
	case mSearch:
		hits, rerr := rm.Search(ctx, call.ID, memoryv1.SearchScope(call.Scope), call.Query, call.Limit, call.Summaries)
		msgs, err = func() ([][]byte, error) { return putMsgs(hits) }, rerr
	case mListSessions:
		req := new(memoryv1.ListSessionsRequest)
		if err := proto.Unmarshal(call.Req, req); err != nil {
			return nil, &api.Error{Code: 400, Field: "req", Message: err.Error()}
		}
		es, next, rerr := rm.ListSessions(req)
		msgs, rep.Next, err = func() ([][]byte, error) { return putMsgs(es) }, next, rerr
	case mCountSessions:
		n, rerr := rm.CountSessions(call.ID, call.Kind, call.Limit)
		rep.I64, err = int64(n), rerr
	case mDataBytes:
		rep.I64, err = rm.DataBytes(call.ID)
	case mDataOwnedBy:
		rep.Strs, err = rm.DataOwnedBy(call.ID)
	case mSearchEntries:
		req := new(memoryv1.SearchEntriesRequest)
		if err := proto.Unmarshal(call.Req, req); err != nil {
			return nil, &api.Error{Code: 400, Field: "req", Message: err.Error()}
		}
		hits, rerr := rm.SearchEntries(call.Kind, call.ID, req)
		msgs, err = func() ([][]byte, error) { return putMsgs(hits) }, rerr
	case mTopEntries:
		es, rerr := rm.TopEntries(call.Kind, call.ID, call.Limit)
		msgs, err = func() ([][]byte, error) { return putMsgs(es) }, rerr
	case mLookupCommand:
		lctx, cancel := context.WithTimeout(ctx, max(time.Duration(call.WaitMS)*time.Millisecond, time.Millisecond))
		res, ok, rerr := commandIndex{p: rm.p, s: rm.s}.LookupCommand(lctx, call.Kind, call.ID, call.Key, call.Seq)
		cancel()
		msgs, err = one(res, ok), rerr
	case mEntriesPrefix:
		es, rerr := rm.EntriesWithPrefix(call.Kind, call.ID, call.Key, call.Limit)
		msgs, err = func() ([][]byte, error) { return putMsgs(es) }, rerr
	case mEntryText:
		rep.Text, rep.OK = rm.EntryText(call.Kind, call.Key, call.Seq)
	case mEntryKey:
		rep.Text, rep.OK = rm.EntryKey(call.Kind, call.Sum)
	case mEntriesWithMeta:
		rep.Refs, err = rm.EntriesWithMetadata(call.Key, call.Query)
	default:
		return nil, &api.Error{Code: 400, Field: "method", Message: fmt.Sprintf("unknown corpus read %q", call.Method)}
	}
	if err != nil {
		return nil, err
	}
	if msgs != nil {
		if rep.Msgs, err = msgs(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
