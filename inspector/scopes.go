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
	// Conflicts are the values consolidation filed for review (read-only:
	// the page has no settle button).
	Conflicts []conflictRow
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
	if p.Kind == "" {
		return "scopes.html", p, nil
	}
	if !slices.Contains(scopeKinds, p.Kind) {
		return "", nil, badInput{"kind", "want one of " + strings.Join(scopeKinds, ", ")}
	}
	if p.Kind == "global" {
		p.ID = "global"
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
	for _, e := range rep.GetEntries() {
		p.Entries = append(p.Entries, entryRow{Key: e.GetKey(), Type: memType(e.GetMemoryType()), By: e.GetUpdatedBy(),
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
