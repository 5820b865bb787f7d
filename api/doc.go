// Package api is the memory service's operations, whatever carries them:
// each declared once in the operation table (operations.go) with the
// messages it reads and answers and who may call it (access.go), and its
// handler. A transport (natsapi, httpapi) hands a Request to the
// dispatcher (package dispatch), which finds the operation, the node and
// the caller and calls Service.Run: the declared access is checked there,
// then the handler runs.
//
// A handler never blocks its transport: it validates and decodes, hands
// the command to the actor (or a query to a bounded goroutine) and
// returns; the answer is written when the command's events are stored (or
// refused).
package api
