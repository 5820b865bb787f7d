package membench

import (
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// archiveMirror projects an agentmem session's own log into a projection
// file, as the node's projector does, so that the question mode offers the
// session's archived L2 summaries as the node does: found by
// Store.SearchSummaries in that session's summary corpus. (The recall
// searcher's session is another one, with its own compression.)
type archiveMirror struct {
	store   *projections.Store
	codec   *events.Codec
	seq     uint64
	pending []projections.Decoded
}

func openArchiveMirror(path string) (*archiveMirror, error) {
	store, err := projections.Open(path)
	if err != nil {
		return nil, err
	}
	return &archiveMirror{store: store, codec: events.NewCodec()}, nil
}

// record queues the batch of evs (command cmd, session version v) as the
// log record the projector would read.
func (a *archiveMirror) record(cmd string, v uint64, now int64, evs []proto.Message) error {
	a.seq++
	d, err := decodedRecord(a.codec, a.seq, cmd, v, now, evs)
	if err != nil {
		return err
	}
	a.pending = append(a.pending, d)
	return nil
}

// search returns the session's archived summaries that match q, best first,
// with their scores (projected first).
func (a *archiveMirror) search(q string, limit int) ([]*memoryv1.Summary, []float64, error) {
	if len(a.pending) > 0 {
		if err := a.store.ApplyBatch(a.pending); err != nil {
			return nil, nil, err
		}
		a.pending = a.pending[:0]
	}
	hits, err := a.store.SearchSummaries(benchSession, q, limit)
	if err != nil {
		return nil, nil, err
	}
	sums, scores := make([]*memoryv1.Summary, len(hits)), make([]float64, len(hits))
	for i, h := range hits {
		sums[i], scores[i] = h.GetSummary(), h.GetScore()
	}
	return sums, scores, nil
}

func (a *archiveMirror) Close() error { return a.store.Close() }

// withArchive starts mirroring m's log to a projection at path (its
// creation first): from then on its candidates offer archived summaries.
func (m *agentmemMemory) withArchive(path string) error {
	a, err := openArchiveMirror(path)
	if err != nil {
		return err
	}
	if err := a.record("create", 1, m.env.NowUnixNano, m.created); err != nil {
		_ = a.Close()
		return err
	}
	m.archive = a
	return nil
}

// decodedRecord is the log record of a session batch of evs as a
// projection reads it (encoded and decoded through the codec).
func decodedRecord(codec *events.Codec, seq uint64, cmd string, v uint64, now int64, evs []proto.Message) (projections.Decoded, error) {
	anys, err := codec.Pack(evs)
	if err != nil {
		return projections.Decoded{}, err
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId: cmd, AggregateKind: events.KindSession, AggregateId: benchSession, Version: v,
		TimeUnixNano: now, Events: anys,
	})
	if err != nil {
		return projections.Decoded{}, err
	}
	batch, err := events.DecodeBatch(data)
	if err != nil {
		return projections.Decoded{}, err
	}
	decoded, err := codec.Unpack(batch)
	if err != nil {
		return projections.Decoded{}, err
	}
	return projections.Decoded{Seq: seq, Subject: events.SessionSubject(benchSession), Batch: batch, Events: decoded}, nil
}

// hydrate fills in reply's references as the node reads them from its
// projection: the session's own recalled messages from the messages it
// stored, its recalled archived summaries from the mirror.
func (m *agentmemMemory) hydrate(reply *memoryv1.ContextReply) *memoryv1.ContextReply {
	src := segmented.Sources{Message: func(session string, seq uint64) (*memoryv1.Message, bool) {
		msg, ok := m.bySeq[seq]
		return msg, ok && session == reply.GetSessionId()
	}}
	if m.archive != nil {
		src.Summary = m.archive.store.SummaryAt
	}
	return segmented.Hydrate(reply, src)
}
