// Package node wires one agentmem node: an embedded nats-server with
// JetStream (or a connection to an external NATS), the event log and
// snapshot store, the session actors, the memory micro service and the
// Prometheus /metrics endpoint. cmd/node only maps flags onto Config.
//
// Shutdown order (Run returns when ctx ends): stop taking requests and wait
// for in-flight replies, passivate every actor (each writes a snapshot),
// close the NATS connection, stop the embedded server.
package node
