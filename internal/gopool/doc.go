// Package gopool runs functions on goroutines it keeps for reuse.
//
// A goroutine starts with a small stack and grows it by copying as its
// calls deepen. Code that starts a goroutine per message (protoactor's
// default dispatcher runs an actor's mailbox on a new goroutine whenever it
// fills after being empty) pays that growth again for every message. A
// Pool hands each function to an idle goroutine of its own when one waits,
// whose stack has already grown, and starts a new one otherwise; an idle
// goroutine exits after the pool's idle time or when the pool stops.
package gopool
