package api

import (
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Namespace operations: a scope's (user:<id>, project:<id>, agent:<id>, a
// session's scope) memories managed as a unit. export pages through its
// keys with their versions; import writes another export's entries (the
// same or another namespace), idempotently; archive tombstones old
// entries of a type keeping their values; restore brings back an archived
// or deleted entry. Each is its scope actor's command, so what they change
// is events a replay reproduces; none re-runs a policy on replay (the
// archive cutoff and the import's comparison are decided once and
// recorded as the versions they wrote).

// namespaceBody is what the actor is sent for body, a request of target t:
// an export asks for pages that fit one reply (JSON's base64 takes a third
// more than the values, so half the transport's message is the bound); an
// import without a command id gets one derived from its content and
// target, so the same import sent twice is stored once.
func (s *Service) namespaceBody(t scopeTarget, body proto.Message) any {
	switch r := body.(type) {
	case *memoryv1.ExportEntriesRequest:
		return &actors.ExportPage{Request: r, MaxBytes: int(min(s.cfg.MaxPayload/2, sharedmem.MaxExportPageBytes))}
	case *memoryv1.ImportEntriesRequest:
		if r.GetCommandId() == "" {
			r.CommandId = actors.ImportCommandID(string(t.kind)+":"+t.id, r)
		}
	}
	return body
}
