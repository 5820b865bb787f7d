package api

import (
	"context"

	"github.com/nats-io/nats.go"
)

// Router places aggregates on the nodes of a cluster (package dispatch
// forwards each request to the node that serves its aggregate). Without
// one (Deps.Router nil) this node serves every aggregate.
type Router interface {
	// Serves reports whether this node serves aggregate id now.
	Serves(id string) bool
	// Forward sends m to the node that serves aggregate id and returns its
	// reply; local reports that this node serves it after all (it took the
	// partition while Forward waited for an owner).
	Forward(ctx context.Context, id string, m *nats.Msg) (reply *nats.Msg, local bool, err error)
}
