package api

import (
	"github.com/agentmem/agentmem/api/limits"
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
