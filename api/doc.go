// Package api serves the "memory" NATS micro service (so $SRV.PING, INFO and
// STATS work) and turns each request into a command for the session actors.
//
// Subjects: mem.v1.session.<id>.{create,append,context,get,kernel,state,status}.
// Bodies are protobuf messages from proto/memory/v1; a request with header
// "Content-Type: application/json" is read as JSON (internal/jsonbody: protojson
// after short enum names and the OpenAI message shape are rewritten, every
// error naming the field path as sent) and answered as protojson (proto
// field names, zero values included, 64-bit integers as strings). Errors
// carry the micro headers Nats-Service-Error and Nats-Service-Error-Code
// with HTTP-like codes (400, 403, 404, 409, 413, 503) and an ErrorDetail
// body naming the field. An unknown operation under a known prefix answers
// 404 naming the valid ones (ops.go).
//
// A handler never blocks its subscription: it validates and decodes, hands
// the command to the actor and returns; the actor replies when the command's
// events are stored (or refused).
package api
