package projections

import (
	bolt "go.etcd.io/bbolt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// DatumCorpus is the corpus of a large datum of any corpus whose storing
// a partial store applied (ok false: it knows of none). A store of the
// whole log keeps no routes: ok is false.
func (s *Store) DatumCorpus(id string) (corpus string, ok bool, err error) {
	if s.corpus == nil {
		return "", false, nil
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCorpusRoutes).Get([]byte(routeDatum + id))
		corpus, ok = string(v), v != nil
		return nil
	})
	return corpus, ok, err
}

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
