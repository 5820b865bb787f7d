package membench

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite" // SQLite with FTS5, pure Go: the search baseline

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Searcher ranks the conversation's messages for a query. The benchmark
// adds the conversation one append at a time and, at each checkpoint, asks
// every question of the checkpoint as a query over what was added so far.
type Searcher interface {
	Name() string
	// Add indexes one append request's messages.
	Add(msgs []convgen.Message) error
	// Search returns the indexes of the best k messages, best first.
	Search(query string, k int) ([]int, error)
	Close() error
}

// projectionSearcher is agentmem's search as the node runs it: a session
// model decides every append (as the session actor does), its events go
// through the codec as a log record would, the projection applies them to
// a bbolt file (projections.Store.ApplyBatch, as the projector does) and
// queries run through Store.Search in SESSION scope.
type projectionSearcher struct {
	store   *projections.Store
	st      *segmented.State
	env     segmented.Env
	codec   *events.Codec
	seq     uint64
	pending []projections.Decoded
}

var _ Searcher = (*projectionSearcher)(nil)

const benchSession = "membench"

func newProjectionSearcher(dir string, conv *convgen.Conversation, tok segmented.Tokenizer) (*projectionSearcher, error) {
	store, err := projections.Open(filepath.Join(dir, "projection.db"))
	if err != nil {
		return nil, err
	}
	p := &projectionSearcher{store: store, st: segmented.New(), codec: events.NewCodec(),
		env: segmented.Env{NowUnixNano: conv.Config.StartUnixNano, Tokenizer: tok}}
	evs, err := p.st.DecideCreate(&memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, UserId: "bench-user"}, benchSession, p.env)
	if err == nil {
		err = p.record("create", evs)
	}
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return p, nil
}

func (p *projectionSearcher) Name() string { return "agentmem BM25 (projections Store.Search)" }

// record applies evs to the model and queues them as the log record the
// projector would read.
func (p *projectionSearcher) record(cmd string, evs []proto.Message) error {
	v := p.st.Version() + 1
	p.seq++
	if err := p.st.Apply(segmented.Meta{CommandID: cmd, Version: v, Seq: p.seq, TimeUnixNano: p.env.NowUnixNano}, evs); err != nil {
		return err
	}
	d, err := decodedRecord(p.codec, p.seq, cmd, v, p.env.NowUnixNano, evs)
	if err != nil {
		return err
	}
	p.pending = append(p.pending, d)
	return nil
}

func (p *projectionSearcher) Add(msgs []convgen.Message) error {
	req := &memoryv1.AppendRequest{CommandId: fmt.Sprintf("a%d", msgs[0].Index)}
	for i := range msgs {
		req.Messages = append(req.Messages, msgs[i].Input())
	}
	p.env.NowUnixNano = msgs[0].UnixNano
	evs, err := p.st.DecideAppend(req, p.env)
	if err != nil {
		return fmt.Errorf("membench: search session: append of message %d: %w", msgs[0].Index, err)
	}
	return p.record(req.CommandId, evs)
}

// Flush applies the queued records to the projection, as the node's
// projector has by the time the node searches (Search flushes first).
func (p *projectionSearcher) Flush() error {
	if len(p.pending) > 0 {
		if err := p.store.ApplyBatch(p.pending); err != nil {
			return err
		}
		p.pending = p.pending[:0]
	}
	return nil
}

func (p *projectionSearcher) Search(query string, k int) ([]int, error) {
	out, _, err := p.SearchScored(query, k)
	return out, err
}

// SearchScored is Search with each hit's score.
func (p *projectionSearcher) SearchScored(query string, k int) ([]int, []float64, error) {
	if err := p.Flush(); err != nil {
		return nil, nil, err
	}
	hits, err := p.store.Search(benchSession, memoryv1.SearchScope_SEARCH_SCOPE_SESSION, query, k)
	if err != nil {
		return nil, nil, err
	}
	out := make([]int, 0, len(hits))
	scores := make([]float64, 0, len(hits))
	for _, h := range hits {
		out = append(out, convgen.ParseMessageID(h.GetMessage().GetId()))
		scores = append(scores, h.GetScore())
	}
	return out, scores, nil
}

func (p *projectionSearcher) Close() error { return p.store.Close() }

// fts5Searcher is the baseline: SQLite FTS5 (modernc.org/sqlite, in
// memory) over the same messages' content, tokenize = 'porter unicode61',
// ranked by bm25() (k1 = 1.2, b = 0.75, as agentmem's). The query is every
// word of the question as a quoted term, joined by OR: a bag of words like
// agentmem's query (FTS5's default would AND the words).
type fts5Searcher struct {
	db      *sql.DB
	pending []convgen.Message
}

var _ Searcher = (*fts5Searcher)(nil)

func newFTS5Searcher() (*fts5Searcher, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection: ":memory:" is per connection
	if _, err := db.Exec(`CREATE VIRTUAL TABLE turns USING fts5(content, tokenize = 'porter unicode61')`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("membench: sqlite fts5: %w", err)
	}
	return &fts5Searcher{db: db}, nil
}

func (f *fts5Searcher) Name() string { return "SQLite FTS5 bm25()" }

// Add queues the messages; Search inserts the queue in one transaction.
func (f *fts5Searcher) Add(msgs []convgen.Message) error {
	for i := range msgs {
		// Messages without text (a tool call alone) are no document in
		// agentmem's index either.
		if strings.TrimSpace(msgs[i].Content) != "" {
			f.pending = append(f.pending, msgs[i])
		}
	}
	return nil
}

func (f *fts5Searcher) flush() error {
	if len(f.pending) == 0 {
		return nil
	}
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.Prepare(`INSERT INTO turns(rowid, content) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer func() { _ = stmt.Close() }()
	for _, m := range f.pending {
		if _, err := stmt.Exec(m.Index+1, m.Content); err != nil {
			return err
		}
	}
	f.pending = f.pending[:0]
	return tx.Commit()
}

// fts5Query quotes every word of q (letters and digits) and ORs them.
func fts5Query(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	return strings.Join(words, " OR ")
}

func (f *fts5Searcher) Search(query string, k int) ([]int, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	q := fts5Query(query)
	if q == "" {
		return nil, nil
	}
	rows, err := f.db.Query(`SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns), rowid LIMIT ?`, q, k)
	if err != nil {
		return nil, fmt.Errorf("membench: fts5 query %q: %w", q, err)
	}
	defer func() { _ = rows.Close() }()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id-1)
	}
	return out, rows.Err()
}

func (f *fts5Searcher) Close() error { return f.db.Close() }
