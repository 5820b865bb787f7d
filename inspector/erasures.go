package inspector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// maxErasures bounds the removals one erasures page lists (the newest).
const maxErasures = 1000

// errNoLedger: the inspector was built without a reader of the whole log.
var errNoLedger = errors.New("inspector: this node gives the inspector no reader of the log: the removal ledger cannot be shown")

// removalRow is one removal of the ledger, content-free as the ledger is:
// what was asked, by whom, why, when, how many messages.
type removalRow struct {
	ID, Target, Reason, By, Why, When string
	Messages                          uint64
	Completed                         bool
	// Items is the number of removals an erase request planned (0: a
	// removal of its own).
	Items int
	// Seq is the sequence of the removal's record in its stream;
	// Partition names the stream with the log in partitions ("p3").
	Seq       uint64
	Partition string
	// Of is the erase request whose plan this removal is an item of.
	Of string
	// Erased and Rewritten name the aggregates ("<kind>.<id>") whose
	// events went, or that were rewritten from a baseline.
	Erased, Rewritten []string
}

func rowOf(r *events.Removal) removalRow {
	return removalRow{ID: r.GetId(), Target: r.GetTarget(), Reason: reasonName(r.GetReason()), By: r.GetRequestedBy(), Why: r.GetWhy(),
		When: timeOf(r.GetAtUnixNano()), Messages: r.GetMessages(), Completed: r.Completed, Items: len(r.GetPlanned()), Seq: r.Seq,
		Erased: r.GetErased(), Rewritten: r.GetRewritten()}
}

// requestsOf maps the removal id of each item an erase request planned to
// the request's id.
func requestsOf(led *ledger) map[string]string {
	out := map[string]string{}
	for _, rm := range led.Removals {
		for _, item := range rm.GetPlanned() {
			out[events.PlannedRemovalID(rm.GetId(), item)] = rm.GetId()
		}
	}
	return out
}

func reasonName(r memoryv1.RemovalReason) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "REMOVAL_REASON_"))
}

// ledger is the node's removal ledger as the pages show it: with the log
// in K > 1 partitions, the K streams' ledgers merged in the order their
// records were stored (part: each removal's partition; a removal's Seq is
// its stream's).
type ledger struct {
	*events.Ledger
	part map[*events.Removal]int
}

// row is rowOf(rm), naming its partition when the log has several.
func (l *ledger) row(rm *events.Removal) removalRow {
	r := rowOf(rm)
	if p, ok := l.part[rm]; ok {
		r.Partition = "p" + strconv.Itoa(p)
	}
	return r
}

// readLedger reads the node's removal ledger: of each partition's stream
// when the reader has several (actors.LedgerStreams).
func (in *Inspector) readLedger(ctx context.Context) (*ledger, error) {
	if in.deps.Reader == nil {
		return nil, errNoLedger
	}
	ls, ok := in.deps.Reader.(actors.LedgerStreams)
	if !ok {
		led, err := events.ReadLedger(ctx, in.deps.Reader, 0)
		if err != nil {
			return nil, err
		}
		return &ledger{Ledger: led}, nil
	}
	out := &ledger{Ledger: &events.Ledger{}, part: map[*events.Removal]int{}}
	for i, r := range ls.LedgerStreams() {
		led, err := events.ReadLedger(ctx, r, 0)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", i, err)
		}
		for _, rm := range led.Removals {
			out.part[rm] = i
		}
		out.Removals = append(out.Removals, led.Removals...)
	}
	slices.SortStableFunc(out.Removals, func(a, b *events.Removal) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(out.part[a], out.part[b]), cmp.Compare(a.Seq, b.Seq))
	})
	return out, nil
}

type erasuresPage struct {
	Base
	Rows      []removalRow
	Reason    string
	Reasons   []string
	Total     int
	Truncated bool
}

var removalReasons = []string{"erase", "compact", "retention"}

// erasuresPage lists the removal ledger, newest first: every erase
// request, the removal of each aggregate it planned, compactions and
// retention. The inspector is served to admins only (loopback on the
// single-user node), who may read it.
func (in *Inspector) erasuresPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	p := erasuresPage{Base: base(v, ""), Reason: r.URL.Query().Get("reason"), Reasons: removalReasons}
	p.Tab = "erasures"
	if p.Reason != "" && !slices.Contains(removalReasons, p.Reason) {
		return "", nil, badInput{"reason", "want one of " + strings.Join(removalReasons, ", ")}
	}
	led, err := in.readLedger(ctx)
	if err != nil {
		return "", nil, err
	}
	of := requestsOf(led)
	for _, rm := range slices.Backward(led.Removals) {
		row := led.row(rm)
		row.Of = of[rm.GetId()]
		if p.Reason != "" && row.Reason != p.Reason {
			continue
		}
		p.Total++
		if len(p.Rows) < maxErasures {
			p.Rows = append(p.Rows, row)
		}
	}
	p.Truncated = p.Total > len(p.Rows)
	return "erasures.html", p, nil
}

type erasedPage struct {
	Base
	ID string
	// Removal is the removal of the session's events; Request the erase
	// request that planned it (nil when it was a removal of its own).
	Removal, Request *removalRow
}

// erasedSession finds in the ledger the removal of session id's events
// (nil: none, the session never existed or is not erased).
func (in *Inspector) erasedSession(ctx context.Context, id string) (*erasedPage, error) {
	led, err := in.readLedger(ctx)
	if err != nil {
		return nil, err
	}
	agg := events.KindSession + "." + id
	for _, rm := range slices.Backward(led.Removals) {
		if !slices.Contains(rm.GetErased(), agg) {
			continue
		}
		p := &erasedPage{ID: id}
		row := led.row(rm)
		p.Removal = &row
		if reqID := requestsOf(led)[rm.GetId()]; reqID != "" {
			for _, req := range led.Removals {
				if req.GetId() == reqID {
					rr := led.row(req)
					p.Request = &rr
				}
			}
		}
		return p, nil
	}
	return nil, nil
}
