package projections

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Query limits: 0 means the default.
const (
	DefaultRecallLimit = 20
	MaxRecallLimit     = 50
	DefaultListLimit   = 50
	MaxListLimit       = 100
)

// resolveLimit returns limit, or def for 0; a limit outside 1..maxLimit is
// an *ArgumentError.
func resolveLimit(limit, def, maxLimit int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > maxLimit:
		return 0, &ArgumentError{Field: "limit", Reason: fmt.Sprintf("%d not in 1..%d", limit, maxLimit)}
	}
	return limit, nil
}

func beU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func getSession(tx *bolt.Tx, id string) (*memoryv1.SessionIndexEntry, error) {
	v := tx.Bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	e := new(memoryv1.SessionIndexEntry)
	if err := proto.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("projections: stored session %q: %w", id, err)
	}
	return e, nil
}

func getMessage(b *bolt.Bucket, sessionID string, seq uint64) (*memoryv1.Message, error) {
	v := b.Get(swapMessageKey(sessionID, seq))
	if v == nil {
		return nil, nil
	}
	m := new(memoryv1.Message)
	if err := proto.Unmarshal(v, m); err != nil {
		return nil, fmt.Errorf("projections: stored message %s/%d: %w", sessionID, seq, err)
	}
	return m, nil
}

// MessageAt returns message seq of session sessionID (ok false: the
// projection does not hold it, e.g. erased, or on a failed read).
func (s *Store) MessageAt(sessionID string, seq uint64) (*memoryv1.Message, bool) {
	var m *memoryv1.Message
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		m, err = getMessage(tx.Bucket(bucketSwapMessages), sessionID, seq)
		return err
	})
	return m, err == nil && m != nil
}

// Recall returns the messages of a session from swap, oldest first: at most
// limit (1..50, 0 means 20) after skipping offset, and the session's total.
// An unknown session has no messages (total 0).
func (s *Store) Recall(sessionID string, offset, limit int) ([]*memoryv1.Message, uint64, error) {
	if offset < 0 {
		return nil, 0, &ArgumentError{Field: "offset", Reason: "must be >= 0"}
	}
	limit, err := resolveLimit(limit, DefaultRecallLimit, MaxRecallLimit)
	if err != nil {
		return nil, 0, err
	}
	var (
		msgs  = []*memoryv1.Message{}
		total uint64
	)
	err = s.view(func(tx *bolt.Tx) error {
		e, err := getSession(tx, sessionID)
		if err != nil || e == nil {
			return err
		}
		total = e.GetMessages()
		p := prefix(sessionID)
		c := tx.Bucket(bucketSwapMessages).Cursor()
		// Message sequences are 1..total without holes (ApplyBatch checks it).
		for k, v := c.Seek(swapMessageKey(sessionID, uint64(offset)+1)); k != nil && bytes.HasPrefix(k, p) && len(msgs) < limit; k, v = c.Next() {
			m := new(memoryv1.Message)
			if err := proto.Unmarshal(v, m); err != nil {
				return fmt.Errorf("projections: stored message %q: %w", k, err)
			}
			msgs = append(msgs, m)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return msgs, total, nil
}

// MessagesByID returns the messages of a session with the given ids, in the
// order of ids. An id the swap does not hold is a *NotFoundError naming it.
func (s *Store) MessagesByID(sessionID string, ids []string) ([]*memoryv1.Message, error) {
	out := make([]*memoryv1.Message, 0, len(ids))
	err := s.view(func(tx *bolt.Tx) error {
		bIDs, bMsgs := tx.Bucket(bucketSwapIDs), tx.Bucket(bucketSwapMessages)
		for _, id := range ids {
			v := bIDs.Get(swapIDKey(sessionID, id))
			if len(v) != 8 {
				return &NotFoundError{ID: id}
			}
			m, err := getMessage(bMsgs, sessionID, beU64(v))
			if err != nil {
				return err
			}
			if m == nil {
				return &NotFoundError{ID: id}
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ArchivedSummaries returns the L2 summaries the session archived to swap,
// in message order (by the last message they cover).
func (s *Store) ArchivedSummaries(sessionID string) ([]*memoryv1.Summary, error) {
	out := []*memoryv1.Summary{}
	err := s.view(func(tx *bolt.Tx) error {
		p := prefix(sessionID)
		c := tx.Bucket(bucketSwapSummaries).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			sum := new(memoryv1.Summary)
			if err := proto.Unmarshal(v, sum); err != nil {
				return fmt.Errorf("projections: stored summary %q: %w", k, err)
			}
			out = append(out, sum)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Session returns the index entry of a session, false if the projection does
// not know it (yet).
func (s *Store) Session(id string) (*memoryv1.SessionIndexEntry, bool, error) {
	var e *memoryv1.SessionIndexEntry
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		e, err = getSession(tx, id)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return e, e != nil, nil
}

// ListSessions lists sessions of a user (by creation time), of an agent (by
// creation time) or all of them (by session id), optionally only those in
// one status. limit is 1..100, 0 means 50. nextPageToken is empty on the
// last page; it is opaque (base64url of the last key read) and valid for the
// same filters only.
func (s *Store) ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error) {
	limit, err := resolveLimit(int(req.GetLimit()), DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, "", err
	}
	if req.GetUserId() != "" && req.GetAgentId() != "" {
		return nil, "", &ArgumentError{Field: "agent_id", Reason: "at most one of user_id and agent_id may be set"}
	}
	bucket, p := bucketSessions, []byte(nil)
	switch {
	case req.GetUserId() != "":
		bucket, p = bucketByUser, prefix(req.GetUserId())
	case req.GetAgentId() != "":
		bucket, p = bucketByAgent, prefix(req.GetAgentId())
	}
	var after []byte
	if tok := req.GetPageToken(); tok != "" {
		after, err = base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !bytes.HasPrefix(after, p) || len(after) == len(p) {
			return nil, "", &ArgumentError{Field: "page_token", Reason: "not a token of this listing"}
		}
	}
	status := req.GetStatus()
	out := []*memoryv1.SessionIndexEntry{}
	var next string
	err = s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		var k, v []byte
		if after != nil {
			k, v = c.Seek(after)
			if bytes.Equal(k, after) {
				k, v = c.Next()
			}
		} else {
			k, v = c.Seek(p)
		}
		for ; k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(out) == limit {
				next = base64.RawURLEncoding.EncodeToString(after)
				return nil
			}
			var e *memoryv1.SessionIndexEntry
			if bytes.Equal(bucket, bucketSessions) {
				e = new(memoryv1.SessionIndexEntry)
				if err := proto.Unmarshal(v, e); err != nil {
					return fmt.Errorf("projections: stored session %q: %w", k, err)
				}
			} else {
				id, err := parseSessionIndexKey(k)
				if err != nil {
					return err
				}
				if e, err = getSession(tx, id); err != nil {
					return err
				}
				if e == nil {
					return fmt.Errorf("projections: index key %q names a missing session", k)
				}
			}
			after = append(after[:0:0], k...)
			if status != memoryv1.SessionStatus_SESSION_STATUS_UNSPECIFIED && e.GetStatus() != status {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Digest returns, for every bucket but meta, the SHA-256 (hex) of its
// key/value pairs in key order (each key and value length-prefixed;
// document ids by rank, digest.go).
//
// The meta bucket (schema version, checkpoint) is excluded on purpose: two
// files holding the same read model compare equal whatever batch sizes
// built them and however far their checkpoints went past records with no
// effect (non-session subjects). Compare AppliedSeq separately if needed.
func (s *Store) Digest() (map[string]string, error) {
	out := make(map[string]string, len(allBuckets))
	err := s.view(func(tx *bolt.Tx) error {
		// A projection of partitions ranks documents by owner (digest.go).
		canonical := s.LogPartitions() > 1
		ranks := make(map[string]map[uint64]uint64)
		if canonical {
			for _, b := range [][]byte{bucketBM25Docs, bucketEntryDocs} {
				r, err := ownerRanks(tx, b)
				if err != nil {
					return err
				}
				ranks[string(b)] = r
			}
		}
		rankOf := func(bucket []byte) map[uint64]uint64 {
			if r, ok := ranks[string(bucket)]; ok {
				return r
			}
			r := docRanks(tx.Bucket(bucket))
			ranks[string(bucket)] = r
			return r
		}
		for _, name := range allBuckets {
			if slices.ContainsFunc(notDigested, func(b []byte) bool { return bytes.Equal(b, name) }) {
				continue
			}
			sum, err := digestBucket(tx, string(name), rankOf, canonical)
			if err != nil {
				return err
			}
			out[string(name)] = hex.EncodeToString(sum)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CountSessions counts the sessions of agentID (or, with agentID empty, of
// userID), stopping at limit: quotas ask "at least limit?" without scanning
// further.
func (s *Store) CountSessions(userID, agentID string, limit int) (int, error) {
	bucket, p := bucketByUser, prefix(userID)
	if agentID != "" {
		bucket, p = bucketByAgent, prefix(agentID)
	}
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && n < limit; k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}
