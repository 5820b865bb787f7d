package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Messages of an export file are imported through the session API, as a
// client would append them: each exported session becomes a session of
// the target user (the same id when the target is the namespace the file
// came from, else one derived from it and the target), and its messages
// are appended in order with their ids, roles, contents, tool calls and
// times (said_unix_nano: when they were said). The import is idempotent
// by position: a session already holding the first n of the file's
// messages gets the rest; one holding other messages is refused. Each
// append's command id is derived from its session, position and content,
// so a retried batch is stored once.

// appendBatch bounds one append of an import: its messages and their
// content bytes.
const (
	appendBatchMessages = 64
	appendBatchBytes    = 256 << 10
)

// MessagesImport is what a messages import did (or, dry, would do).
type MessagesImport struct {
	// Sessions of the file; Created: those created in the target.
	Sessions, Created int
	// Appended messages, and Present ones the target sessions held.
	Appended, Present int
}

// ImportedSessionID is the id the import gives session src of a file
// exported from fileScope when imported into the user namespace target:
// src itself into the same namespace; else src-<user>, or a digest of
// both when that is too long for an id.
func ImportedSessionID(fileScope, src string, target client.Scope) string {
	if fileScope == target.String() {
		return src
	}
	if id := src + "-" + target.ID; len(id) <= 128 {
		return id
	}
	sum := sha256.Sum256([]byte(fileScope + "\x00" + src + "\x00" + target.String()))
	return "imported-" + hex.EncodeToString(sum[:16])
}

// NamespaceImportMessages imports the sessions' messages of a file
// exported from fileScope into the user namespace target.
func NamespaceImportMessages(ctx context.Context, c *client.Client, fileScope string, target client.Scope, sessions []NamespaceSessionMsgs, dryRun bool) (MessagesImport, error) {
	var out MessagesImport
	if len(sessions) == 0 {
		return out, nil
	}
	if target.Kind != "user" {
		return out, fmt.Errorf("%w: the file holds the messages of %d sessions: they import into a user:<id> namespace only (or give --skip-messages)", ErrUsage, len(sessions))
	}
	for i, s := range sessions {
		msgs := make([]*memoryv1.Message, len(s.Messages))
		for j, raw := range s.Messages {
			msgs[j] = &memoryv1.Message{}
			if err := protojson.Unmarshal(raw, msgs[j]); err != nil {
				return out, fmt.Errorf("%w: file: sessions[%d].messages[%d]: %v", ErrUsage, i, j, err)
			}
		}
		id := ImportedSessionID(fileScope, s.SessionID, target)
		created, present, err := importSession(ctx, c, id, target.ID, msgs, dryRun)
		if err != nil {
			return out, fmt.Errorf("replay: import session %s as %s: %w", s.SessionID, id, err)
		}
		out.Sessions++
		out.Appended += len(msgs) - present
		out.Present += present
		if created {
			out.Created++
		}
	}
	return out, nil
}

// importSession brings session id of user to hold msgs: it creates the
// session when there is none, reads the messages it holds, checks they are
// msgs' first ones, and appends the rest. It returns whether it created
// the session and how many of msgs it held.
func importSession(ctx context.Context, c *client.Client, id, user string, msgs []*memoryv1.Message, dryRun bool) (created bool, present int, err error) {
	info, err := c.Get(ctx, id)
	switch {
	case client.Code(err) == 404:
		created = true
		if !dryRun {
			if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
				return false, 0, err
			}
		}
	case err != nil:
		return false, 0, err
	case info.GetUserId() != user:
		return false, 0, fmt.Errorf("the session exists and is not user %s's", user)
	default:
		// The session's messages as of its last event (the recall pages
		// are a projection, behind the log by its lag).
		have, err := sessionMessages(ctx, c, id, info.GetSeq())
		if err != nil {
			return false, 0, err
		}
		for i, m := range have {
			if i >= len(msgs) || !sameMessage(m, msgs[i]) {
				return false, 0, fmt.Errorf("the session holds other messages than the file's (message %d differs): not imported", i)
			}
		}
		present = len(have)
	}
	if dryRun {
		return created, present, nil
	}
	for start := present; start < len(msgs); {
		var batch []*memoryv1.MessageInput
		size := 0
		for end := start; end < len(msgs) && len(batch) < appendBatchMessages; end++ {
			in := messageInput(msgs[end])
			if n := proto.Size(in); len(batch) == 0 || size+n <= appendBatchBytes {
				batch, size = append(batch, in), size+n
				continue
			}
			break
		}
		if _, err := c.Append(ctx, id, &memoryv1.AppendRequest{CommandId: appendCommandID(id, start, batch), Messages: batch}); err != nil {
			return created, present, fmt.Errorf("append messages %d..%d: %w", start, start+len(batch)-1, err)
		}
		start += len(batch)
	}
	return created, present, nil
}

// sessionMessages reads every message of session id from its recall
// pages, once the node's projection applied minSeq.
func sessionMessages(ctx context.Context, c *client.Client, id string, minSeq uint64) ([]*memoryv1.Message, error) {
	var out []*memoryv1.Message
	for off := uint32(0); ; {
		r, err := c.Recall(ctx, id, &memoryv1.RecallRequest{Offset: off, Limit: 50, MinSeq: minSeq})
		if err != nil {
			return nil, err
		}
		out = append(out, r.GetMessages()...)
		off += uint32(len(r.GetMessages()))
		if len(r.GetMessages()) == 0 || uint64(off) >= r.GetTotal() {
			return out, nil
		}
	}
}

// messageInput is m appended again: its id unless the node assigned it
// (m<seq> ids are the node's to give), its time as when it was said. A
// large-data reference is not carried: the content holds its reference
// text, and the data stays its owner's.
func messageInput(m *memoryv1.Message) *memoryv1.MessageInput {
	said := m.GetSaidUnixNano()
	if said == 0 {
		said = m.GetCreatedUnixNano()
	}
	id := m.GetId()
	if assignedID(id) {
		id = ""
	}
	return &memoryv1.MessageInput{Id: id, Role: m.GetRole(), Content: m.GetContent(), Name: m.GetName(),
		ToolCalls: m.GetToolCalls(), ToolCallId: m.GetToolCallId(), SaidUnixNano: max(said, 0)}
}

// assignedID reports whether id has the form of a node-assigned id (m<seq>).
func assignedID(id string) bool {
	if len(id) < 2 || id[0] != 'm' {
		return false
	}
	_, err := strconv.ParseUint(id[1:], 10, 64)
	return err == nil
}

// sameMessage reports whether a (held by a session) is b (the file's):
// role, content, name, tool call and results.
func sameMessage(a, b *memoryv1.Message) bool {
	return a.GetRole() == b.GetRole() && a.GetContent() == b.GetContent() && a.GetName() == b.GetName() &&
		a.GetToolCallId() == b.GetToolCallId() && slices.EqualFunc(a.GetToolCalls(), b.GetToolCalls(), func(x, y *memoryv1.ToolCall) bool { return proto.Equal(x, y) })
}

// appendCommandID is the command id of the append of batch at position
// start of session id: the same batch sent again is stored once.
func appendCommandID(id string, start int, batch []*memoryv1.MessageInput) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", id, start)
	for _, m := range batch {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		fmt.Fprintf(h, "%d\x00", len(b))
		h.Write(b)
	}
	return "nsimport-" + hex.EncodeToString(h.Sum(nil)[:16])
}
