package inspector

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// dirPageSize is the scopes on one page of the directory; each is one
// list of its entries through the API.
const dirPageSize = 50

// dirSearchScopes bounds the scopes one directory search asks (one API
// search each).
const dirSearchScopes = 20

// dirPage is the scopes directory: the scopes the log holds events of,
// each shown once the API listed its entries for the viewer.
type dirPage struct {
	Base
	Kinds        []string
	Kind, Match  string
	Query        string
	Rows         []dirRow
	Total        int // scopes matching the filter
	Page, Pages  int
	Hits         []dirHit
	Searched     int // the scopes the search asked
	NoDirectory  bool
	Unreadable   int // rows the API refused the viewer
	HasQuery     bool
	SearchCapped bool
}

type dirRow struct {
	Kind, ID    string
	Live        int
	More        bool // more live entries than one list answers
	Last        string
	LastNs      int64
	Consolidate bool // the scope holds consolidation's bookkeeping keys
}

type dirHit struct {
	Kind, ID, Key, Type, Text string
	Score                     string
}

// scopeRef is a scope the log holds events of.
type scopeRef struct{ kind, id string }

// logKind is the log kind of scope kind (a session's scope has its own).
func logKind(kind string) string {
	if kind == "session" {
		return "session_scope"
	}
	return kind
}

// directoryPage lists the scopes: their names come from the log's
// subjects (events.SubjectLister: names and counts, no content), and each
// row's live entries and last change from the API's list of the scope on
// the viewer's connection, so a row is shown only when the API lets the
// viewer read the scope. q searches the first dirSearchScopes scopes of
// the filter with the API's scope search.
func (in *Inspector) directoryPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	q := r.URL.Query()
	p := dirPage{Base: base(v, ""), Kinds: scopeKinds, Kind: q.Get("kind"), Match: strings.TrimSpace(q.Get("match")), Query: strings.TrimSpace(q.Get("q")), Page: 1}
	p.Tab = "scopes"
	if p.Kind != "" && !slices.Contains(scopeKinds, p.Kind) {
		return "", nil, badInput{"kind", "want one of " + strings.Join(scopeKinds, ", ")}
	}
	if len(p.Query) > maxSearchQuery {
		return "", nil, badInput{"q", "longer than " + strconv.Itoa(maxSearchQuery) + " bytes"}
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return "", nil, badInput{"page", strconv.Quote(s) + " is not a page number (1 or more)"}
		}
		p.Page = n
	}
	refs, err := in.scopeRefs(ctx, p.Kind, p.Match)
	if errors.Is(err, errNoDirectory) {
		p.NoDirectory = true
		return "directory.html", p, nil
	}
	if err != nil {
		return "", nil, err
	}
	p.Total = len(refs)
	p.Pages = max(1, (len(refs)+dirPageSize-1)/dirPageSize)
	if p.Page > p.Pages {
		return "", nil, badInput{"page", "want 1.." + strconv.Itoa(p.Pages)}
	}
	for _, s := range refs[min(len(refs), (p.Page-1)*dirPageSize):min(len(refs), p.Page*dirPageSize)] {
		row, err := dirRowOf(ctx, v, s)
		if client.Code(err) == http.StatusForbidden {
			p.Unreadable++
			continue
		}
		if err != nil {
			return "", nil, err
		}
		p.Rows = append(p.Rows, row)
	}
	if p.Query != "" {
		p.HasQuery = true
		p.SearchCapped = len(refs) > dirSearchScopes
		for _, s := range refs[:min(len(refs), dirSearchScopes)] {
			rep, err := v.c.SearchEntries(ctx, client.Scope{Kind: s.kind, ID: s.id}, &memoryv1.SearchEntriesRequest{Query: p.Query, Limit: 5})
			if client.Code(err) == http.StatusForbidden {
				continue
			}
			if err != nil {
				return "", nil, err
			}
			p.Searched++
			for _, h := range rep.GetHits() {
				e := h.GetEntry()
				p.Hits = append(p.Hits, dirHit{Kind: s.kind, ID: s.id, Key: e.GetKey(), Type: memType(e.GetMemoryType()),
					Text: preview(valueText(e), 200), Score: strconv.FormatFloat(h.GetScore(), 'f', 2, 64)})
			}
		}
	}
	return "directory.html", p, nil
}

// errNoDirectory: the log cannot list its subjects.
var errNoDirectory = errors.New("inspector: the log cannot list its scopes")

// scopeRefs are the scopes of kind (every kind for "") whose id contains
// match, sorted by kind and id.
func (in *Inspector) scopeRefs(ctx context.Context, kind, match string) ([]scopeRef, error) {
	if in.deps.Subjects == nil {
		return nil, errNoDirectory
	}
	kinds := scopeKinds
	if kind != "" {
		kinds = []string{kind}
	}
	var out []scopeRef
	for _, k := range kinds {
		counts, err := in.deps.Subjects.SubjectCounts(ctx, events.ScopeSubject(logKind(k), "*"))
		if err != nil {
			return nil, err
		}
		for subj := range counts {
			_, id, err := events.ParseSubject(subj)
			if err != nil || (match != "" && !strings.Contains(strings.ToLower(id), strings.ToLower(match))) {
				continue
			}
			out = append(out, scopeRef{kind: k, id: id})
		}
	}
	slices.SortFunc(out, func(a, b scopeRef) int {
		if c := strings.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out, nil
}

// dirRowOf lists scope s's entries (one page of up to 1000, deleted ones
// too: a delete is a change) for its live count and last change.
func dirRowOf(ctx context.Context, v *viewer, s scopeRef) (dirRow, error) {
	row := dirRow{Kind: s.kind, ID: s.id}
	rep, err := v.c.ListEntries(ctx, client.Scope{Kind: s.kind, ID: s.id}, &memoryv1.ListEntriesRequest{Limit: 1000, IncludeDeleted: true})
	if err != nil {
		return row, err
	}
	row.More = rep.GetNextPageToken() != ""
	for _, e := range rep.GetEntries() {
		if !e.GetDeleted() {
			row.Live++
		}
		if isInternalKey(e.GetKey()) {
			row.Consolidate = true
		}
		row.LastNs = max(row.LastNs, e.GetUpdatedUnixNano())
	}
	row.Last = timeOf(row.LastNs)
	return row, nil
}
