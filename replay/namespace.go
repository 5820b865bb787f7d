package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The namespace commands work online: they are API calls of a running
// node (through the client package), so the node's access checks, its
// actors' commands and their events are the only path; nothing here
// writes the log itself.

// NamespaceFormat names the layout of a namespace export file.
const NamespaceFormat = "agentmem-namespace/1"

// MaxNamespaceFileBytes bounds the file an import reads (it is parsed
// whole).
const MaxNamespaceFileBytes = 256 << 20

// importBatchBytes bounds the values of one import request, well under
// a NATS message (1 MiB on a default server, the node's 8 MiB embedded).
const importBatchBytes = 512 << 10

// NamespaceFile is an export file: the namespace's keys with their kept
// versions (protojson KeyHistory), and with --messages the messages of
// the user's sessions (protojson Message), which import appends to
// sessions of the target user (NamespaceImportMessages).
type NamespaceFile struct {
	Format        string                 `json:"format"`
	Scope         string                 `json:"scope"`
	ExportedAt    string                 `json:"exported_at"`
	Keys          []json.RawMessage      `json:"keys"`
	TruncatedKeys []string               `json:"truncated_keys,omitempty"`
	Sessions      []NamespaceSessionMsgs `json:"sessions,omitempty"`
}

// NamespaceSessionMsgs is one session's messages in an export file.
type NamespaceSessionMsgs struct {
	SessionID string            `json:"session_id"`
	Messages  []json.RawMessage `json:"messages"`
}

// ParseNamespace parses kind:id (user:alice, agent:a1, project:p1,
// session:s1, global).
func ParseNamespace(s string) (client.Scope, error) {
	if s == "global" {
		return client.Global(), nil
	}
	kind, id, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return client.Scope{}, fmt.Errorf("%w: namespace %q: want kind:id (user:alice, agent:a1, project:p1, session:s1) or global", ErrUsage, s)
	}
	if _, err := sharedmem.ScopeID(sharedmem.Kind(kind), id); err != nil {
		return client.Scope{}, fmt.Errorf("%w: namespace %q: %v", ErrUsage, s, err)
	}
	return client.Scope{Kind: kind, ID: id}, nil
}

// dialAPI connects to the running node's NATS (conn.NATSURL; a user and
// password go in the URL, or conn.NATSCreds).
func dialAPI(conn Conn) (*client.Client, func(), error) {
	if conn.NATSURL == "" {
		return nil, nil, fmt.Errorf("%w: namespace commands talk to a running node: give --nats-url", ErrUsage)
	}
	opts := []nats.Option{nats.Name("agentmem-replay")}
	if conn.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(conn.NATSCreds))
	}
	nc, err := nats.Connect(conn.NATSURL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: connect %s: %w", conn.NATSURL, err)
	}
	return client.New(nc), nc.Close, nil
}

// NamespaceExport writes scope's keys (with prefix) as a NamespaceFile to
// w; with messages, and scope a user's, the messages of the user's
// sessions too. It returns the keys written.
func NamespaceExport(ctx context.Context, c *client.Client, scope client.Scope, prefix string, messages bool, minSeq uint64, w io.Writer) (int, error) {
	f := NamespaceFile{Format: NamespaceFormat, Scope: scope.String(), ExportedAt: time.Now().UTC().Format(time.RFC3339)}
	err := c.Export(ctx, scope, prefix, func(p *memoryv1.ExportEntriesReply) error {
		for _, kh := range p.GetKeys() {
			b, err := protojson.Marshal(kh)
			if err != nil {
				return err
			}
			f.Keys = append(f.Keys, b)
		}
		f.TruncatedKeys = append(f.TruncatedKeys, p.GetTruncatedKeys()...)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("replay: export %s: %w", scope, err)
	}
	if messages {
		if scope.Kind != "user" {
			return 0, fmt.Errorf("%w: --messages exports a user's sessions: the namespace must be user:<id>", ErrUsage)
		}
		if f.Sessions, err = userMessages(ctx, c, scope.ID, minSeq); err != nil {
			return 0, fmt.Errorf("replay: export %s messages: %w", scope, err)
		}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", " ")
	if err := enc.Encode(&f); err != nil {
		return 0, err
	}
	return len(f.Keys), bw.Flush()
}

// userMessages reads every message of user's sessions (the sessions index,
// then each session's recall pages), once the node's projection applied
// log sequence minSeq (0: what it applied): the index and the pages are
// read models, behind the log by the projector's lag.
func userMessages(ctx context.Context, c *client.Client, user string, minSeq uint64) ([]NamespaceSessionMsgs, error) {
	var out []NamespaceSessionMsgs
	token := ""
	for {
		page, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: user, Limit: 100, PageToken: token, MinSeq: minSeq})
		if err != nil {
			return nil, err
		}
		for _, s := range page.GetSessions() {
			sm := NamespaceSessionMsgs{SessionID: s.GetSessionId()}
			msgs, err := sessionMessages(ctx, c, s.GetSessionId(), minSeq)
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				b, err := protojson.Marshal(m)
				if err != nil {
					return nil, err
				}
				sm.Messages = append(sm.Messages, b)
			}
			out = append(out, sm)
		}
		if token = page.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

// ReadNamespaceFile reads an export file (at most MaxNamespaceFileBytes)
// and returns its keys.
func ReadNamespaceFile(r io.Reader) (*NamespaceFile, []*memoryv1.KeyHistory, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxNamespaceFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("replay: read: %w", err)
	}
	if len(data) > MaxNamespaceFileBytes {
		return nil, nil, fmt.Errorf("%w: file: larger than %d bytes: export by --prefix into smaller files", ErrUsage, MaxNamespaceFileBytes)
	}
	f := &NamespaceFile{}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, nil, fmt.Errorf("%w: file: not a namespace export: %v", ErrUsage, err)
	}
	if f.Format != NamespaceFormat {
		return nil, nil, fmt.Errorf("%w: file: format %q, want %q", ErrUsage, f.Format, NamespaceFormat)
	}
	keys := make([]*memoryv1.KeyHistory, 0, len(f.Keys))
	for i, raw := range f.Keys {
		kh := &memoryv1.KeyHistory{}
		if err := protojson.Unmarshal(raw, kh); err != nil {
			return nil, nil, fmt.Errorf("%w: file: keys[%d]: %v", ErrUsage, i, err)
		}
		keys = append(keys, kh)
	}
	return f, keys, nil
}

// NamespaceImport imports keys into scope in requests of at most
// sharedmem.MaxImportKeys keys and importBatchBytes of values (a key's
// whole history goes in one request, alone when it is larger): the node
// writes each key's exported versions in order, after those the key's
// history there already ends with. Each request's command id is derived by
// the node from its content, so running the same import again changes
// nothing. It returns the summed reply (changes in order).
func NamespaceImport(ctx context.Context, c *client.Client, scope client.Scope, keys []*memoryv1.KeyHistory, dryRun bool) (*memoryv1.ImportEntriesReply, error) {
	total := &memoryv1.ImportEntriesReply{DryRun: dryRun}
	send := func(batch []*memoryv1.KeyHistory) error {
		rep, err := c.Import(ctx, scope, &memoryv1.ImportEntriesRequest{Keys: batch, DryRun: dryRun})
		if err != nil {
			return fmt.Errorf("replay: import into %s (keys %s..%s): %w", scope, batch[0].GetKey(), batch[len(batch)-1].GetKey(), err)
		}
		total.Changes = append(total.Changes, rep.GetChanges()...)
		total.Changed += rep.GetChanged()
		total.Unchanged += rep.GetUnchanged()
		total.Versions += rep.GetVersions()
		return nil
	}
	var batch []*memoryv1.KeyHistory
	size := 0
	for _, kh := range keys {
		if len(kh.GetVersions()) == 0 {
			continue
		}
		n := proto.Size(kh)
		if len(batch) > 0 && (len(batch) == sharedmem.MaxImportKeys || size+n > importBatchBytes) {
			if err := send(batch); err != nil {
				return nil, err
			}
			batch, size = nil, 0
		}
		batch, size = append(batch, kh), size+n
	}
	if len(batch) > 0 {
		if err := send(batch); err != nil {
			return nil, err
		}
	}
	return total, nil
}

// NamespaceArchive archives scope's entries as req says, call after call
// while the node reports more (a dry run asks once: it archives nothing,
// so the next call would report the same keys). It returns the keys.
func NamespaceArchive(ctx context.Context, c *client.Client, scope client.Scope, req *memoryv1.ArchiveEntriesRequest) ([]string, bool, error) {
	var keys []string
	for {
		r := proto.CloneOf(req)
		rep, err := c.Archive(ctx, scope, r)
		if err != nil {
			return nil, false, fmt.Errorf("replay: archive %s: %w", scope, err)
		}
		keys = append(keys, rep.GetKeys()...)
		if !rep.GetMore() || req.GetDryRun() {
			return keys, rep.GetMore(), nil
		}
	}
}
