package inspector

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// statuses are the filter's choices, by their short name.
var statuses = []string{"created", "active", "paused", "terminated", "archived"}

func statusName(s memoryv1.SessionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SESSION_STATUS_"))
}

func parseStatus(s string) (memoryv1.SessionStatus, error) {
	if s == "" {
		return memoryv1.SessionStatus_SESSION_STATUS_UNSPECIFIED, nil
	}
	v, ok := memoryv1.SessionStatus_value["SESSION_STATUS_"+strings.ToUpper(s)]
	if !ok {
		return 0, badInput{"status", "want one of " + strings.Join(statuses, ", ")}
	}
	return memoryv1.SessionStatus(v), nil
}

type sessionRow struct {
	*memoryv1.SessionIndexEntry
	Status string
	// Usage is the budget use from the session itself (nil: unknown).
	Usage *memoryv1.Usage
}

type sessionsPage struct {
	Base
	User, Agent, Status string
	Sort                string // "" (by id) or "activity" (latest first)
	Statuses            []string
	Rows                []sessionRow
	Messages, Summaries uint64
	Next, PageToken     string
	// Scanned and Capped: a filtered or sorted list reads the sessions
	// (up to maxListScan) and says how many it read.
	Scanned int
	Capped  bool
}

// usageWorkers bounds the session reads of one list page.
const usageWorkers = 8

// maxListScan bounds the sessions a filtered or sorted list reads.
const maxListScan = 50000

func (in *Inspector) sessionsPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	q := r.URL.Query()
	p := sessionsPage{Base: base(v, ""), User: strings.TrimSpace(q.Get("user")), Agent: strings.TrimSpace(q.Get("agent")), Status: q.Get("status"),
		Sort: q.Get("sort"), Statuses: statuses, PageToken: q.Get("page")}
	p.Tab = "sessions"
	if p.Sort != "" && p.Sort != "activity" && p.Sort != "id" {
		return "", nil, badInput{"sort", `want "activity" (the latest first) or "id"`}
	}
	if p.Sort == "id" {
		p.Sort = ""
	}
	st, err := parseStatus(p.Status)
	if err != nil {
		return "", nil, err
	}
	var entries []*memoryv1.SessionIndexEntry
	if p.User != "" || p.Agent != "" || p.Sort != "" {
		if entries, err = in.scanSessions(ctx, v, &p, st); err != nil {
			return "", nil, err
		}
	} else {
		rep, err := v.c.ListSessions(ctx, &memoryv1.ListSessionsRequest{Status: st, Limit: uint32(min(in.cfg.PageSize, 100)), PageToken: p.PageToken})
		if err != nil {
			return "", nil, err
		}
		entries, p.Next = rep.GetSessions(), rep.GetNextPageToken()
	}
	p.Rows = make([]sessionRow, len(entries))
	for i, s := range entries {
		p.Rows[i] = sessionRow{SessionIndexEntry: s, Status: statusName(s.GetStatus())}
		p.Messages += s.GetMessages()
		p.Summaries += s.GetSummaries()
	}
	// The budget use is the session's own (its actor): read the page's
	// sessions a few at a time; one that does not answer shows "—".
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(usageWorkers, len(p.Rows)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if info, err := v.c.Get(ctx, p.Rows[i].GetSessionId()); err == nil {
					p.Rows[i].Usage = info.GetUsage()
				}
			}
		}()
	}
	for i := range p.Rows {
		next <- i
	}
	close(next)
	wg.Wait()
	return "sessions.html", p, nil
}

// scanSessions reads the sessions list (up to maxListScan, narrowed by
// status on the API's side) and keeps those whose user and agent start
// with the filters, ignoring case, both at once: the API filters by one
// exact id only. Sorted by last activity (latest first) when asked, else
// by id; the page is an offset ("o<N>") into the result.
func (in *Inspector) scanSessions(ctx context.Context, v *viewer, p *sessionsPage, st memoryv1.SessionStatus) ([]*memoryv1.SessionIndexEntry, error) {
	user, agent := strings.ToLower(p.User), strings.ToLower(p.Agent)
	var all []*memoryv1.SessionIndexEntry
	token := ""
	for {
		rep, err := v.c.ListSessions(ctx, &memoryv1.ListSessionsRequest{Status: st, Limit: 100, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, s := range rep.GetSessions() {
			p.Scanned++
			if strings.HasPrefix(strings.ToLower(s.GetUserId()), user) && strings.HasPrefix(strings.ToLower(s.GetAgentId()), agent) {
				all = append(all, s)
			}
		}
		token = rep.GetNextPageToken()
		if token == "" {
			break
		}
		if p.Scanned >= maxListScan {
			p.Capped = true
			break
		}
	}
	if p.Sort == "activity" {
		sort.SliceStable(all, func(i, j int) bool { return all[i].GetUpdatedUnixNano() > all[j].GetUpdatedUnixNano() })
	}
	off := 0
	if t := p.PageToken; t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "o"))
		if err != nil || !strings.HasPrefix(t, "o") || n < 0 {
			return nil, badInput{"page", "not a page of this list: start again from its first page"}
		}
		off = min(n, len(all))
	}
	end := min(off+in.cfg.PageSize, len(all))
	if end < len(all) {
		p.Next = "o" + strconv.Itoa(end)
	}
	return all[off:end], nil
}
