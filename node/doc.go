// Package node wires one agentmem node: an embedded nats-server with
// JetStream (or a connection to an external NATS), the event log and
// snapshot store, the session actors, the memory micro service and the
// Prometheus /metrics endpoint. cmd/node only maps flags onto Config.
//
// One owner per data dir: Start first takes an exclusive lock on the data
// dir (internal/dirlock, <data-dir>/LOCK) when it embeds NATS or runs the
// projector, and fails at once, naming the holder, if another process has
// it. The kernel releases it if the process dies.
//
// Shutdown order (Run returns when ctx ends): stop taking requests and wait
// for in-flight replies, passivate every actor (each writes a snapshot),
// close the NATS connection, stop the embedded server, release the data dir.
package node
