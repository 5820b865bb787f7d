package inspector

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/agentmem/agentmem/events"
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
	Statuses            []string
	Rows                []sessionRow
	Messages, Summaries uint64
	Next, PageToken     string
}

// usageWorkers bounds the session reads of one list page.
const usageWorkers = 8

func (in *Inspector) sessionsPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	q := r.URL.Query()
	p := sessionsPage{Base: base(v, ""), User: q.Get("user"), Agent: q.Get("agent"), Status: q.Get("status"),
		Statuses: statuses, PageToken: q.Get("page")}
	p.Tab = "sessions"
	for _, f := range []struct{ name, val string }{{"user", p.User}, {"agent", p.Agent}} {
		if f.val != "" {
			if err := events.ValidateID(f.name, f.val); err != nil {
				return "", nil, badInput{f.name, err.Error()}
			}
		}
	}
	st, err := parseStatus(p.Status)
	if err != nil {
		return "", nil, err
	}
	rep, err := v.c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: p.User, AgentId: p.Agent, Status: st,
		Limit: uint32(in.cfg.PageSize), PageToken: p.PageToken})
	if err != nil {
		return "", nil, err
	}
	p.Next = rep.GetNextPageToken()
	p.Rows = make([]sessionRow, len(rep.GetSessions()))
	for i, s := range rep.GetSessions() {
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
