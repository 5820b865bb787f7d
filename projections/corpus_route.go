package projections

import (
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// SessionListKey is the key ListSessions orders session e by for req (by
// agent: the agent, the creation time and the id; by user: the user's;
// else the id), and whose base64 (RawURLEncoding) is the page token of a
// page ending at e: pages gathered from several stores merge in this
// order, and continue from the token in each.
func SessionListKey(req *memoryv1.ListSessionsRequest, e *memoryv1.SessionIndexEntry) []byte {
	switch {
	case req.GetUserId() != "":
		return sessionIndexKey(req.GetUserId(), e.GetCreatedUnixNano(), e.GetSessionId())
	case req.GetAgentId() != "":
		return sessionIndexKey(req.GetAgentId(), e.GetCreatedUnixNano(), e.GetSessionId())
	}
	return []byte(e.GetSessionId())
}
