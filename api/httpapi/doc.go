// Package httpapi serves the memory service's operations over HTTP with
// JSON: POST /v1/<the NATS subject after mem.v1, / for .> answers exactly
// as a JSON request on that subject over NATS (the same body, reply and
// ErrorDetail, its code the HTTP status), a watch is also a stream of
// Server-Sent Events, and GET /v1/openapi.json is the OpenAPI 3.1 document
// of the operations served, generated from the operation table
// (api/operations.go), their proto messages and the field rules of
// contract.go.
//
// It is an adapter: it verifies the caller (loopback only on the
// single-user node; a bearer token of the tenants file otherwise), checks
// the browser Origin (and answers CORS for the origins allowed), reads the
// body, and hands the request to the dispatcher (dispatch.Dispatcher.Do,
// as the NATS adapter hands its requests to the same dispatcher) with the
// caller as a value. Every other check is the service's, as for a NATS
// request.
package httpapi
