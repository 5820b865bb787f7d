// Package limits bounds what each caller, and the node, hold at once:
// queries in flight, watch polls. A caller past its own bound is told so
// (429 naming the limit) before the node's bound is counted, so one
// caller's slow requests hold only that caller's slots.
package limits

import (
	"fmt"
	"sync"

	"github.com/agentmem/agentmem/api/wire"
	"github.com/agentmem/agentmem/tenancy"
)

// Slots bound what each caller holds at once (queries in flight, watch
// polls), one semaphore per principal. The number of principals is bounded
// by the tenants file (one more for the single-user caller), so the map is.
type Slots struct {
	name string // the limit's name, as replies and metrics say it
	size func(tenancy.Limits) int

	mu  sync.Mutex
	sem map[string]chan struct{} // guarded by mu
}

// NewSlots bounds each caller by size of its limits (name: the limit's
// name).
func NewSlots(name string, size func(tenancy.Limits) int) *Slots {
	return &Slots{name: name, size: size, sem: map[string]chan struct{}{}}
}

// acquire takes one of who's slots, or answers 429 naming the limit when
// they are all taken. release gives it back.
func (s *Slots) acquire(who *tenancy.Caller) (release func(), err error) {
	s.mu.Lock()
	ch, ok := s.sem[who.Principal]
	if !ok {
		ch = make(chan struct{}, max(s.size(who.Limits), 1))
		s.sem[who.Principal] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	default:
		return nil, &wire.Error{Code: 429, Field: s.name, Message: fmt.Sprintf("%d in flight for this caller, the most it may hold; retry later", cap(ch))}
	}
}

// Take takes one of who's slots, then one of the node's (node, a
// semaphore), and returns what gives both back; when either is full, the
// error says which (429 naming the caller's limit, 503 for the node's).
func Take(who *tenancy.Caller, caller *Slots, node chan struct{}, what string) (release func(), err error) {
	mine, err := caller.acquire(who)
	if err != nil {
		return nil, err
	}
	select {
	case node <- struct{}{}:
		return func() { <-node; mine() }, nil
	default:
		mine()
		return nil, &wire.Error{Code: 503, Message: "too many " + what + " in flight on this node; retry"}
	}
}
