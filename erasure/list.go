package erasure

import (
	"context"
	"fmt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// list reads from the read model what the plan of req needs (Plan). It
// first waits until the read model applied the log's end as it is now:
// what was stored before the request is listed (a user's sessions just
// created, a fact just extracted).
func (c *Coordinator) list(ctx context.Context, req Request) (Listing, error) {
	var l Listing
	t := req.Target
	if t.Kind != TargetSession && t.Kind != TargetUser {
		return l, nil
	}
	rm := c.deps.ReadModel
	if rm == nil {
		if t.Kind == TargetUser {
			return l, ErrNoReadModel
		}
		l.Sessions = []SessionListing{{ID: t.ID}}
		return l, nil
	}
	if err := c.projectedToEnd(ctx); err != nil {
		return l, err
	}
	own := req.reason() == memoryv1.RemovalReason_REMOVAL_REASON_RETENTION
	sessions := []string{t.ID}
	if t.Kind == TargetUser {
		var err error
		if sessions, err = sessionsOf(rm, t.ID); err != nil {
			return l, fmt.Errorf("%w: list the sessions of user %s: %w", ErrUnavailable, t.ID, err)
		}
	}
	for _, id := range sessions {
		s := SessionListing{ID: id}
		var err error
		if c.deps.Data != nil {
			if s.Data, err = rm.DataOwnedBy("session:" + id); err != nil {
				return l, fmt.Errorf("%w: list the large data of session %s: %w", ErrUnavailable, id, err)
			}
		}
		if !own {
			if s.Copies, err = copiesFrom(rm, SessionSources(id)); err != nil {
				return l, err
			}
		}
		l.Sessions = append(l.Sessions, s)
	}
	if t.Kind == TargetUser {
		var err error
		if l.Copies, err = copiesFrom(rm, UserSources(t.ID)); err != nil {
			return l, err
		}
	}
	return l, nil
}

// PartitionsWaiter is the ReadModel of a log in partitions (Deps.Streams):
// it waits until it applied, in each stream i, sequence ends[i].
type PartitionsWaiter interface {
	WaitForAll(ctx context.Context, ends []uint64) error
}

// projectedToEnd waits until the read model applied the log's last
// sequence as it is now (with the log in partitions: each stream's).
func (c *Coordinator) projectedToEnd(ctx context.Context) error {
	if len(c.deps.Streams) > 0 {
		w, ok := c.deps.ReadModel.(PartitionsWaiter)
		if !ok {
			return fmt.Errorf("%w: the read model (%T) cannot wait for the log in partitions", ErrUnavailable, c.deps.ReadModel)
		}
		ends := make([]uint64, len(c.deps.Streams))
		for i, st := range c.deps.Streams {
			b, err := st.Bounds(ctx)
			if err != nil {
				return fmt.Errorf("%w: read the end of log partition %d: %w", ErrUnavailable, i, err)
			}
			ends[i] = b.Last
		}
		if err := w.WaitForAll(ctx, ends); err != nil {
			return fmt.Errorf("%w: the read model has not applied the log partitions up to %v yet: %w", ErrUnavailable, ends, err)
		}
		return nil
	}
	b, err := c.deps.Reader.Bounds(ctx)
	if err != nil {
		return fmt.Errorf("%w: read the log's end: %w", ErrUnavailable, err)
	}
	if err := c.deps.ReadModel.WaitFor(ctx, b.Last); err != nil {
		return fmt.Errorf("%w: the read model has not applied the log up to %d yet: %w", ErrUnavailable, b.Last, err)
	}
	return nil
}

// sessionsOf lists the ids of user's sessions.
func sessionsOf(rm ReadModel, user string) ([]string, error) {
	var out []string
	req := &memoryv1.ListSessionsRequest{UserId: user, Limit: 100}
	for {
		page, next, err := rm.ListSessions(req)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			out = append(out, s.GetSessionId())
		}
		if next == "" {
			return out, nil
		}
		req.PageToken = next
	}
}

// copiesFrom lists the entries any version of which carries one of the
// metadata pairs sources.
func copiesFrom(rm ReadModel, sources []Source) ([]EntryRef, error) {
	var out []EntryRef
	for _, src := range sources {
		refs, err := rm.EntriesWithMetadata(src.Name, src.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: list the entries with %s = %s: %w", ErrUnavailable, src.Name, src.Value, err)
		}
		out = append(out, refs...)
	}
	return out, nil
}
