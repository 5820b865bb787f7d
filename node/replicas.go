package node

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream API error codes of a replica count the servers cannot hold.
const (
	errCodeReplicasNotClustered = 10074 // replicas > 1 not supported in non-clustered mode
	errCodeNoSuitablePeers      = 10005 // no suitable peers for placement
	errCodeInsufficientRes      = 10023 // insufficient resources
)

// replicasError explains a stream the server refused because of --replicas;
// other errors pass unchanged.
func replicasError(replicas int, err error) error {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return err
	}
	switch api.ErrorCode {
	case errCodeReplicasNotClustered:
		return fmt.Errorf("node: --replicas %d needs a JetStream cluster of at least %d servers, and this NATS server is not clustered "+
			"(the embedded server never is): use --replicas 1, or --nats-url of a cluster: %w", replicas, replicas, err)
	case errCodeNoSuitablePeers, errCodeInsufficientRes:
		if replicas > 1 {
			return fmt.Errorf("node: --replicas %d: the NATS cluster cannot place %d replicas (fewer JetStream servers up, or without room, than replicas): %w",
				replicas, replicas, err)
		}
	}
	return err
}
