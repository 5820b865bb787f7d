package inspector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var scopeKinds = []string{"global", "user", "agent", "session", "project", "app", "workflow", "swarm", "debate", "agent_type"}

type scopesPage struct {
	Base
	Kind, ID, Key string
	Kinds         []string
	Entries       []entryRow
	Next          string
	Versions      []versionRow
	Listed        bool
	// Internal are the entries of consolidation's bookkeeping keys
	// (internal.go), shown apart from the facts (Entries), collapsed.
	Internal []entryRow
	// Conflicts are the values consolidation filed for review, each
	// settleable from the page when CanWrite.
	Conflicts []conflictRow
	// CanWrite and CanErase say which admin forms the page offers (the
	// viewer's right by the API's rules); CSRF is the forms' token.
	CanWrite, CanErase bool
	CSRF               string
	// Query searches the scope (the API's scope search): Hits.
	Query    string
	Hits     []dirHit
	Searched bool
	// AtVersion is the version the "version" parameter asks for; Outside
	// says why it cannot be shown (compacted away: the API's 404 text).
	AtVersion uint64
	Outside   string
	// Oldest is the oldest version the history keeps (versions before
	// it are outside the time-travel window).
	Oldest uint64
}

type entryRow struct {
	Key, Type, By, Updated string
	Version                uint64
	Deleted                bool
	Size                   uint32
	Preview                string
	Consol                 *consolInfo
}

type versionRow struct {
	Version                uint64
	Change, By, When, Type string
	Deleted                bool
	RestoredFrom           uint64
	Value                  string
	Diff                   []diffLine
	Consol                 *consolInfo
	Current                bool
}

// scopesPage lists a scope's entries (current versions) through the API,
// and one key's versions with who wrote each and a diff from the one
// before.
func (in *Inspector) scopesPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	q := r.URL.Query()
	p := scopesPage{Base: base(v, ""), Kind: q.Get("kind"), ID: q.Get("id"), Key: q.Get("key"), Kinds: scopeKinds}
	p.Tab = "scopes"
	if p.Kind == "global" {
		p.ID = "global"
	}
	if p.Kind == "" || p.ID == "" {
		return in.directoryPage(ctx, r, v) // no scope named: the directory
	}
	if !slices.Contains(scopeKinds, p.Kind) {
		return "", nil, badInput{"kind", "want one of " + strings.Join(scopeKinds, ", ")}
	}
	if err := events.ValidateID("id", p.ID); err != nil {
		return "", nil, badInput{"id", err.Error()}
	}
	sc := client.Scope{Kind: p.Kind, ID: p.ID}
	rep, err := v.c.ListEntries(ctx, sc, &memoryv1.ListEntriesRequest{Limit: 200, IncludeDeleted: true, PageToken: q.Get("page")})
	if err != nil {
		return "", nil, err
	}
	p.Listed, p.Next = true, rep.GetNextPageToken()
	p.CanWrite, p.CanErase, p.CSRF = v.mayWrite(p.Kind, p.ID), v.mayErase(p.Kind, p.ID), in.csrfToken(v)
	for _, e := range rep.GetEntries() {
		rows := &p.Entries
		if isInternalKey(e.GetKey()) {
			rows = &p.Internal
		}
		*rows = append(*rows, entryRow{Key: e.GetKey(), Type: memType(e.GetMemoryType()), By: e.GetUpdatedBy(),
			Updated: timeOf(e.GetUpdatedUnixNano()), Version: e.GetVersion(), Deleted: e.GetDeleted(), Size: e.GetSize(),
			Preview: preview(valueText(e), 120), Consol: consolOf(e)})
	}
	conflicts, err := v.c.Conflicts(ctx, sc) // the same API, so the same access check
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == http.StatusNotFound && ce.Field == "operation" {
		err = nil // a kind without review (the agent's scope): none
	}
	if err != nil {
		return "", nil, err
	}
	for _, c := range conflicts {
		p.Conflicts = append(p.Conflicts, conflictOf(c))
	}
	if err := searchScope(ctx, v, sc, q.Get("q"), &p); err != nil {
		return "", nil, err
	}
	if p.Key != "" {
		if s := q.Get("version"); s != "" {
			if p.AtVersion, err = strconv.ParseUint(s, 10, 64); err != nil || p.AtVersion == 0 {
				return "", nil, badInput{"version", fmt.Sprintf("%q is not a version (a whole number > 0)", s)}
			}
			var ce *client.Error
			if _, err := v.c.GetEntry(ctx, sc, p.Key, p.AtVersion); errors.As(err, &ce) && ce.Code == http.StatusNotFound {
				p.Outside = ce.Message // compacted away, or never written: the API says which
			} else if err != nil {
				return "", nil, err
			}
		}
		hist, err := v.c.History(ctx, sc, p.Key)
		if err != nil {
			return "", nil, err
		}
		if len(hist) > 0 {
			p.Oldest = hist[0].GetVersion()
		}
		prev := ""
		for _, e := range hist {
			val := valueText(e)
			p.Versions = append(p.Versions, versionRow{Version: e.GetVersion(), Change: changeName(e.GetChange()),
				By: e.GetUpdatedBy(), When: timeOf(e.GetUpdatedUnixNano()), Type: memType(e.GetMemoryType()),
				Deleted: e.GetDeleted(), RestoredFrom: e.GetRestoredFrom(), Value: val, Diff: diffLines(prev, val), Consol: consolOf(e),
				Current: e.GetVersion() == p.AtVersion})
			if !e.GetDeleted() {
				prev = val
			}
		}
		slices.Reverse(p.Versions) // newest first
	}
	return "scopes.html", p, nil
}

func memType(t memoryv1.MemoryType) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "MEMORY_TYPE_"))
}

func changeName(c memoryv1.ChangeKind) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "CHANGE_KIND_"))
}

// valueText is an entry's value as text (the client returns original
// bytes); a value that is not UTF-8 text shows by its size.
func valueText(e *memoryv1.Entry) string {
	v := e.GetValue()
	if e.GetCompressed() {
		if d, err := sharedmem.DecodeValue(e); err == nil {
			v = d
		}
	}
	if !isText(v) {
		return "(binary, " + itoa(len(v)) + " bytes)"
	}
	return string(v)
}

// searchScope runs the API's search of scope sc for query (none for an
// empty one) into p.Hits.
func searchScope(ctx context.Context, v *viewer, sc client.Scope, query string, p *scopesPage) error {
	p.Query = strings.TrimSpace(query)
	if p.Query == "" {
		return nil
	}
	if len(p.Query) > maxSearchQuery {
		return badInput{"q", "longer than " + strconv.Itoa(maxSearchQuery) + " bytes"}
	}
	rep, err := v.c.SearchEntries(ctx, sc, &memoryv1.SearchEntriesRequest{Query: p.Query, Limit: 20})
	if err != nil {
		return err
	}
	p.Searched = true
	for _, h := range rep.GetHits() {
		e := h.GetEntry()
		p.Hits = append(p.Hits, dirHit{Kind: sc.Kind, ID: sc.ID, Key: e.GetKey(), Type: memType(e.GetMemoryType()),
			Text: preview(valueText(e), 200), Score: strconv.FormatFloat(h.GetScore(), 'f', 2, 64)})
	}
	return nil
}
