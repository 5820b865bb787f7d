// Package placement decides which node of a cluster serves each aggregate
// (session, agent, shared scope), with NATS itself as the record: no
// consensus code of our own.
//
// The id space is cut into a fixed number of partitions (Partition: FNV-1a
// of the aggregate id, modulo Config.Partitions). Ownership of a partition
// is a lease: the key p.<n> of a replicated JetStream KV bucket (Bucket,
// default MEM_PLACEMENT, at the log's replica count) whose value is the
// owner's node id. The bucket's MaxAge is the lease TTL: the owner rewrites
// its keys (compare-and-set on the revision it holds) every TTL/3; a key
// the owner stops rewriting ages out, the server writes a delete marker
// (LimitMarkerTTL, nats-server ≥ 2.11; older servers are polled), and the
// next owner creates it again.
//
// Who should own a partition is computed by every node alike: rendezvous
// hashing (highest FNV-1a of node id and partition) over the live nodes —
// the nodes whose heartbeat key n.<id> (JSON NodeInfo, rewritten every
// TTL/3) is present. So a joining node takes about 1/N of the partitions,
// and a leaving or dead node's partitions spread over the others.
//
// Safety. A node serves a partition only while its lease is valid by its
// own clock: from the moment before the write that created or refreshed
// the key, TTL minus a margin. The key on the server lives TTL from when
// the server stored that write, so a node stops believing in a lease
// before any other node can create the key again. A node that was paused
// past its lease (a stop-the-world pause, SIGSTOP) sees the lease expired
// when it resumes and forwards instead; a write already past that check
// meets the log's expected-last-subject-sequence fence: a conflict and a
// reload, never a fork.
//
// Handover. Release (a joining node is now the better owner) and Leave
// (SIGTERM) mark the partition releasing, so new requests wait for the next
// owner; call OnRelease (the node passivates the partition's actors:
// queued commands finish, a snapshot is written) and then delete the key,
// which the next owner sees through its watch and creates at once.
package placement
