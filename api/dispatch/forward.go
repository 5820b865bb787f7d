package dispatch

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/tenancy"
)

// aggregateOf returns the aggregate id a request subject addresses
// (subject.Subject.Aggregate). Malformed subjects are answered where they
// are received.
func aggregateOf(s string) (string, bool) {
	p, err := subject.Parse(s)
	if err != nil {
		return "", false
	}
	return p.Aggregate()
}

// forward serves r on the aggregate's owner and relays its reply (timed as
// op from start). It runs beside the subscription, counted in flight like
// any request.
func (d *Dispatcher) forward(r *api.Request, id, op string, start time.Time, serve func()) {
	a := d.Answer(r, op, start)
	if !a.Begin() {
		return
	}
	m := &nats.Msg{Subject: r.Subject, Data: r.Data, Header: r.Header}
	if r.Caller != nil && d.Tenants() != nil {
		// A caller this node verified itself (an HTTP request): the owner
		// checks it again by its principal's identity, which travels on the
		// nodes' own subjects only.
		info, known := d.Tenants().ForwardInfo(r.Caller)
		if !known {
			a.Fail(&api.Error{Code: 403, Field: "identity", Message: "the caller is no principal of this node"})
			d.Done()
			return
		}
		m.Header = nats.Header{}
		for k, v := range r.Header {
			m.Header[k] = v
		}
		m.Header.Set(tenancy.RequestInfoHeader, info)
	}
	go func() {
		defer d.Done()
		ctx, cancel := context.WithTimeout(d.Context(), d.ForwardTimeout())
		defer cancel()
		reply, local, err := d.Router().Forward(ctx, id, m)
		switch {
		case local:
			serve()
		case err != nil:
			// A timeout is an unknown outcome, as for any request: retry
			// with the same command id.
			d.Metrics().Forwards.WithLabelValues("error").Inc()
			a.Fail(&api.Error{Code: 503, Message: "forwarding to the node that serves " + id + ": " + err.Error()})
		default:
			d.Metrics().Forwards.WithLabelValues("ok").Inc()
			a.Relay(reply.Data, reply.Header)
		}
	}()
}

// ServeForwarded serves a request another node forwarded here (its
// transport checked the reply subject): the caller is identified from the
// headers the forwarding node copied. If this node no longer serves the
// aggregate (it handed it over while the request was on its way) the
// request goes on to the next owner, up to maxHops nodes, then answers
// 503: retry. It is timed where it arrived, not here.
func (d *Dispatcher) ServeForwarded(r *api.Request) {
	name, _ := d.find(r.Subject)
	if name == "" { // a node forwards only the operations it found
		d.Answer(r, "", time.Time{}).Fail(&api.Error{Code: 404, Field: "operation", Message: "no endpoint for " + r.Subject})
		return
	}
	if id, ok := aggregateOf(r.Subject); ok && d.Router() != nil && !d.Router().Serves(id) {
		hops, _ := strconv.Atoi(r.Header.Get(hopsHeader))
		if hops+1 >= maxHops {
			d.Answer(r, "", time.Time{}).Fail(&api.Error{Code: 503,
				Message: id + " moved between nodes while the request was forwarded; retry"})
			return
		}
		if r.Header == nil {
			r.Header = nats.Header{}
		}
		r.Header.Set(hopsHeader, strconv.Itoa(hops+1))
		d.forward(r, id, "", time.Time{}, func() { d.serve(name, r, "", time.Time{}) })
		return
	}
	d.serve(name, r, "", time.Time{})
}

// hopsHeader counts the nodes a forwarded request went on from; a request
// goes through maxHops nodes at most (placement changing under it).
const (
	hopsHeader = "Agentmem-Hops"
	maxHops    = 4
)
