package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/micro"
)

// route is one registered endpoint: its subject's tokens, its guarded
// handler and the handler itself (served once the caller is known).
type route struct {
	name   string // the endpoint's name (session_append)
	tokens []string
	h      func(request)
	serve  func(*call)
}

// matches reports whether subject tokens st match the route's subject
// (with NATS wildcards: * one token, > the rest).
func (r route) matches(st []string) bool {
	for i, t := range r.tokens {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || (t != "*" && t != st[i]) {
			return false
		}
	}
	return len(st) == len(r.tokens)
}

// otherOps are the catch-all endpoints: every operation under a known
// prefix, so a typo in an operation (mem.v1.session.s1.apend) answers 404
// naming the valid ones instead of "no responders", which looks like the
// service is down.
var otherOps = []struct{ name, subject, shape string }{
	{"session_other", "mem.v1.session.*.*", "mem.v1.session.<id>"},
	{"sessions_other", "mem.v1.sessions.*", "mem.v1.sessions"},
	{"agent_other", "mem.v1.agent.*.*", "mem.v1.agent.<id>"},
	{"scope_other", "mem.v1.scope.*.*.*", "mem.v1.scope.<kind>.<id>"},
	{"data_other", "mem.v1.data.*", "mem.v1.data"},
}

// addOtherOps registers the catch-alls of the prefixes that have routes and
// returns the table that finds the route of a subject (for forwarded
// requests).
//
// A catch-all subscribes in the service's queue group, like every endpoint,
// and its subject also matches the valid operations. NATS picks one member
// of a queue group per message across all the group's subscriptions whose
// subjects match (not one per subscription), so each request is handled
// exactly once: by its own endpoint, or by the catch-all, which then hands
// it to the route of its operation. (Endpoint statistics count the latter
// under the catch-all.)
func (s *Service) addOtherOps(routes []route) (routeTable, error) {
	var t routeTable
	under := make([]bool, len(routes)) // routes[i] is under a catch-all
	for _, o := range otherOps {
		pat := route{tokens: strings.Split(o.subject, ".")}
		n := len(pat.tokens)
		byOp := map[string]route{}
		for i, r := range routes {
			if !overlaps(r.tokens, pat.tokens) {
				continue
			}
			// The catch-all finds a route by the subject's last token
			// alone: every route it can receive must differ from its
			// pattern only there, by a literal operation.
			op := r.tokens[len(r.tokens)-1]
			if len(r.tokens) != n || !slices.Equal(r.tokens[:n-1], pat.tokens[:n-1]) || op == "*" || op == ">" {
				return routeTable{}, fmt.Errorf("api: route %s overlaps the catch-all %s beyond its operation",
					strings.Join(r.tokens, "."), o.subject)
			}
			under[i] = true
			if _, dup := byOp[op]; !dup { // the first registered serves, as NATS would pick either
				byOp[op] = r
			}
		}
		if len(byOp) == 0 {
			continue
		}
		ops := slices.Sorted(maps.Keys(byOp))
		other := opRoutes{pattern: pat, byOp: byOp}
		t.other = append(t.other, other)
		unknown := s.timed("unknown", s.guard(func(c *call) {
			subject := c.r.Subject()
			c.fail(&Error{Code: 404, Field: "operation", Message: fmt.Sprintf("unknown operation %q; %s.{%s}",
				subject[strings.LastIndexByte(subject, '.')+1:], o.shape, strings.Join(ops, ","))})
		}))
		h := func(r request) {
			if rt, ok := other.find(r.Subject()); ok {
				rt.h(r)
				return
			}
			unknown(r)
		}
		t.other[len(t.other)-1].unknown = unknown
		err := s.svc.AddEndpoint(o.name, natsHandler(h), micro.WithEndpointSubject(o.subject),
			micro.WithEndpointPendingLimits(s.cfg.MaxPending, 256<<20))
		if err != nil {
			return routeTable{}, fmt.Errorf("api: add endpoint %s: %w", o.name, err)
		}
	}
	for i, r := range routes {
		if !under[i] {
			t.rest = append(t.rest, r)
		}
	}
	return t, nil
}

// overlaps reports whether some subject matches both a and pattern (which
// has no > wildcard).
func overlaps(a, pattern []string) bool {
	for i, t := range a {
		if t == ">" {
			return len(pattern) > i
		}
		if i >= len(pattern) || (t != "*" && pattern[i] != "*" && t != pattern[i]) {
			return false
		}
	}
	return len(a) == len(pattern)
}

// opRoutes are the routes under one catch-all, by operation (the last
// subject token; the other tokens are the catch-all's own).
type opRoutes struct {
	pattern route
	byOp    map[string]route
	// unknown answers an operation the pattern matches and no route serves
	// (404 naming the valid ones).
	unknown func(request)
}

// find returns the route of subject, a subject the catch-all's pattern
// matches.
func (o opRoutes) find(subject string) (route, bool) {
	r, ok := o.byOp[subject[strings.LastIndexByte(subject, '.')+1:]]
	return r, ok
}

// routeTable finds the route that serves a subject (fixed once built).
type routeTable struct {
	other []opRoutes // the routes under each registered catch-all
	rest  []route    // the routes under none, in registration order
}

// find returns the route that serves subject: the one of its operation when
// a catch-all's pattern matches it (no other route can: addOtherOps checks
// that), else the first of the others that matches.
func (t routeTable) find(subject string) (route, bool) {
	st := strings.Split(subject, ".")
	for _, o := range t.other {
		if o.pattern.matches(st) {
			return o.find(subject)
		}
	}
	for _, r := range t.rest {
		if r.matches(st) {
			return r, true
		}
	}
	return route{}, false
}
