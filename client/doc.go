// Package client is the Go client for agent workers: typed wrappers over the
// memory service's NATS request/reply API (protobuf bodies).
//
// Every mutating call carries a command id. When a request's CommandId is
// empty the client sets a fresh one in the request itself, so calling again
// with the same request value after a timeout is an idempotent retry: a
// timeout means the outcome is unknown, not that the write failed. A retry
// that finds the command stored answers its original reply (for Append the
// message ids and tokens), marked duplicate; a different request under a
// command id already used is refused with 409 (Code(err) == 409).
package client
