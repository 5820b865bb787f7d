package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/micro"
)

// route is one registered endpoint: its subject's tokens, its guarded
// handler and the handler itself (served once the caller is known).
type route struct {
	tokens []string
	h      micro.HandlerFunc
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

// addOtherOps registers the catch-alls of the prefixes that have routes.
//
// A catch-all subscribes in the service's queue group, like every endpoint,
// and its subject also matches the valid operations. NATS picks one member
// of a queue group per message across all the group's subscriptions whose
// subjects match (not one per subscription), so each request is handled
// exactly once: by its own endpoint, or by the catch-all, which then hands
// it to the route it matches. (Endpoint statistics count the latter under
// the catch-all.)
func (s *Service) addOtherOps(routes []route) error {
	routes = slices.Clone(routes) // fixed from here on: the handlers only read it
	for _, o := range otherOps {
		pat := route{tokens: strings.Split(o.subject, ".")}
		var ops []string
		for _, r := range routes {
			if len(r.tokens) == len(pat.tokens) && pat.matches(r.tokens) && r.tokens[len(r.tokens)-1] != "*" {
				ops = append(ops, r.tokens[len(r.tokens)-1])
			}
		}
		if len(ops) == 0 {
			continue
		}
		slices.Sort(ops)
		ops = slices.Compact(ops)
		unknown := s.guard(func(c *call) {
			st := strings.Split(c.r.Subject(), ".")
			c.fail(&Error{Code: 404, Field: "operation", Message: fmt.Sprintf("unknown operation %q; %s.{%s}",
				st[len(st)-1], o.shape, strings.Join(ops, ","))})
		})
		h := func(r micro.Request) {
			st := strings.Split(r.Subject(), ".")
			for _, rt := range routes {
				if rt.matches(st) {
					rt.h(r)
					return
				}
			}
			unknown(r)
		}
		err := s.svc.AddEndpoint(o.name, micro.HandlerFunc(h), micro.WithEndpointSubject(o.subject),
			micro.WithEndpointPendingLimits(s.cfg.MaxPending, 256<<20))
		if err != nil {
			return fmt.Errorf("api: add endpoint %s: %w", o.name, err)
		}
	}
	return nil
}
