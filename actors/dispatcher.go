package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmem/agentmem/internal/gopool"
)

// mailboxThroughput is how many messages a mailbox handles before it
// yields its goroutine (protoactor's default).
const mailboxThroughput = 300

// mailboxIdle is how long a mailbox goroutine waits for another mailbox to
// run before it exits.
const mailboxIdle = 10 * time.Second

// dispatcher runs mailboxes on the directory's pool instead of a new
// goroutine each (protoactor's default): an actor's mailbox starts running
// whenever a message reaches it empty, once per request under a steady
// load, and a new goroutine would grow its stack again each time through
// the decide → append → apply pipeline.
type dispatcher struct{ pool *gopool.Pool }

var _ actor.Dispatcher = dispatcher{}

func (d dispatcher) Schedule(fn func()) { d.pool.Go(fn) }

func (dispatcher) Throughput() int { return mailboxThroughput }
