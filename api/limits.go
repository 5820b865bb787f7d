package api

import (
	"fmt"
	"sync"

	"github.com/agentmem/agentmem/tenancy"
)

// slots bounds what each caller holds at once (queries in flight, watch
// polls), one semaphore per principal. The number of principals is bounded
// by the tenants file (one more for the single-user caller), so the map is.
type slots struct {
	name string // the limit's name, as replies and metrics say it
	size func(tenancy.Limits) int

	mu  sync.Mutex
	sem map[string]chan struct{} // guarded by mu
}

func newSlots(name string, size func(tenancy.Limits) int) *slots {
	return &slots{name: name, size: size, sem: map[string]chan struct{}{}}
}

// acquire takes one of who's slots, or answers 429 naming the limit when
// they are all taken. release gives it back.
func (s *slots) acquire(who *tenancy.Caller) (release func(), err error) {
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
		return nil, &Error{Code: 429, Field: s.name, Message: fmt.Sprintf("%d in flight for this caller, the most it may hold; retry later", cap(ch))}
	}
}

// hold takes one of the caller's slots, then one of the node's (node, a
// semaphore), and returns what gives both back. When either is full it
// answers the request (429 naming the caller's limit, or 503 for the
// node's) and reports false.
func hold(c *call, caller *slots, node chan struct{}, what string) (release func(), ok bool) {
	release, err := take(c.who, caller, node, what)
	if err != nil {
		c.fail(err)
		return nil, false
	}
	return release, true
}

// take is hold for work that has no call to answer (a second search of an
// append): the error says why no slot was free.
func take(who *tenancy.Caller, caller *slots, node chan struct{}, what string) (release func(), err error) {
	mine, err := caller.acquire(who)
	if err != nil {
		return nil, err
	}
	select {
	case node <- struct{}{}:
		return func() { <-node; mine() }, nil
	default:
		mine()
		return nil, &Error{Code: 503, Message: "too many " + what + " in flight on this node; retry"}
	}
}
