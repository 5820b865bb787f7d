package projections

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// fillScale is a filled message's score next to the last hit's: below
// every message the query matched.
const fillScale = 0.5

// fillMaxBytes bounds the stored bytes one fill reads: the context shows
// at most a trimmed head of each message (1,024 tokens), and a session of
// 128 KiB tool results must not make every append read megabytes.
const fillMaxBytes = 1 << 20

// fillUser appends to hits, up to limit, the user's conversation messages
// (user and assistant) that no hit holds, of sessions other than except:
// the newest session first, each session's newest message first, each
// scored fillScale times the last hit's score (1 with no hit), until
// fillMaxBytes of them are read. A user whose whole history fits in the
// limit gets all of it; a larger one its latest turns, where a returning
// user's new session picks up. The query matched none of them: BM25 alone
// would leave out "yep, still doing physio" for "what does Jo do for
// work?" although the room held the user's every turn.
func fillUser(tx *bolt.Tx, user, except string, hits []*memoryv1.SearchHit, limit int) ([]*memoryv1.SearchHit, error) {
	if user == "" || len(hits) >= limit {
		return hits, nil
	}
	score := 1.0
	if n := len(hits); n > 0 {
		score = hits[n-1].GetScore()
	}
	score *= fillScale
	type key struct {
		sid string
		seq uint64
	}
	have := make(map[key]bool, len(hits))
	for _, h := range hits {
		have[key{h.GetSessionId(), h.GetMessage().GetSeq()}] = true
	}
	p := prefix(user)
	sessions := tx.Bucket(bucketByUser).Cursor()
	msgs := tx.Bucket(bucketSwapMessages)
	// The last key of the user's prefix: seek past it, step back.
	k, _ := sessions.Seek(append(bytes.Clone(p), 0xff))
	if k == nil {
		k, _ = sessions.Last()
	} else {
		k, _ = sessions.Prev()
	}
	read := 0
	for ; k != nil && bytes.HasPrefix(k, p) && len(hits) < limit && read < fillMaxBytes; k, _ = sessions.Prev() {
		sid, err := parseSessionIndexKey(k)
		if err != nil {
			return nil, err
		}
		if sid == except {
			continue
		}
		sp := prefix(sid)
		c := msgs.Cursor()
		var mk, v []byte
		if mk, _ = c.Seek(append(bytes.Clone(sp), 0xff)); mk == nil {
			mk, v = c.Last()
		} else {
			mk, v = c.Prev()
		}
		for ; mk != nil && bytes.HasPrefix(mk, sp) && len(hits) < limit && read < fillMaxBytes; mk, v = c.Prev() {
			read += len(v)
			if role, content, err := messageRoleContent(v); err != nil {
				return nil, fmt.Errorf("projections: stored message of %s: %w", sid, err)
			} else if (role != memoryv1.Role_ROLE_USER && role != memoryv1.Role_ROLE_ASSISTANT) || !content {
				continue // a tool message or an empty one: not decoded
			}
			m := new(memoryv1.Message)
			if err := proto.Unmarshal(v, m); err != nil {
				return nil, fmt.Errorf("projections: stored message of %s: %w", sid, err)
			}
			if r := m.GetRole(); (r != memoryv1.Role_ROLE_USER && r != memoryv1.Role_ROLE_ASSISTANT) || m.GetContent() == "" || have[key{sid, m.GetSeq()}] {
				continue
			}
			hits = append(hits, &memoryv1.SearchHit{SessionId: sid, Message: m, Score: score, Kind: HitMessage})
		}
	}
	return hits, nil
}

// messageRoleField is the field number of Message.role.
var messageRoleField = (&memoryv1.Message{}).ProtoReflect().Descriptor().Fields().ByName("role").Number()

// messageRoleContent returns the role of an encoded Message and whether
// its content is not empty, without decoding the rest (the last
// occurrence of a field wins, as proto.Unmarshal): the fill skips tool
// results, the bulk of a history, without decoding them.
func messageRoleContent(v []byte) (role memoryv1.Role, content bool, err error) {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return 0, false, protowire.ParseError(n)
		}
		v = v[n:]
		switch {
		case num == messageRoleField && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return 0, false, protowire.ParseError(n)
			}
			role, v = memoryv1.Role(int32(x)), v[n:]
			continue
		case num == messageContentField && typ == protowire.BytesType:
			b, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return 0, false, protowire.ParseError(n)
			}
			content, v = len(b) > 0, v[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, v)
		if n < 0 {
			return 0, false, protowire.ParseError(n)
		}
		v = v[n:]
	}
	return role, content, nil
}
