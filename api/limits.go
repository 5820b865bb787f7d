package api

import (
	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/tenancy"
)

// hold takes one of the caller's slots, then one of the node's (node, a
// semaphore), and returns what gives both back. When either is full it
// answers the request (429 naming the caller's limit, or 503 for the
// node's) and reports false.
func hold(c *call, caller *limits.Slots, node chan struct{}, what string) (release func(), ok bool) {
	release, err := limits.Take(c.who, caller, node, what)
	if err != nil {
		c.fail(err)
		return nil, false
	}
	return release, true
}

// take is hold for work that has no call to answer (a second search of an
// append): the error says why no slot was free.
func take(who *tenancy.Caller, caller *limits.Slots, node chan struct{}, what string) (release func(), err error) {
	return limits.Take(who, caller, node, what)
}
