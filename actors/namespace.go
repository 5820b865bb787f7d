package actors

import (
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// ExportPage asks a scope actor for a page of its keys with their
// histories (sharedmem.State.Export); MaxBytes bounds the page's values so
// the reply fits the transport's messages (0: sharedmem.MaxExportPageBytes).
type ExportPage struct {
	Request  *memoryv1.ExportEntriesRequest
	MaxBytes int
}

// handleNamespace serves the namespace operations (archive, restore,
// export, import); ok is false for any other body.
func (a *scopeActor) handleNamespace(who *tenancy.Caller, body any) (reply proto.Message, ok bool, err error) {
	switch req := body.(type) {
	case *ExportPage:
		keys, next, truncated, err := a.st().Export(req.Request, req.MaxBytes)
		if err != nil {
			return nil, true, err
		}
		return &memoryv1.ExportEntriesReply{Scope: string(a.kind) + ":" + a.id, Keys: keys, NextPageToken: next, TruncatedKeys: truncated}, true, nil
	case *memoryv1.ArchiveEntriesRequest:
		reply, err := a.archive(req)
		return reply, true, err
	case *memoryv1.RestoreEntryRequest:
		// A restore brings a stored value back: it counts like a put of it.
		if n, ok := a.st().RestoreLen(req.GetKey(), req.GetVersion()); ok {
			if err := a.checkQuota(who, req.GetBy(), req.GetKey(), n, a.dir.deps.Now().UnixNano()); err != nil {
				return nil, true, err
			}
		}
		reply, err := a.write(req.GetCommandId(), req.GetKey(), func() ([]proto.Message, error) {
			return a.st().DecideRestore(req, req.GetBy(), a.writeEnv(who))
		})
		return reply, true, err
	case *memoryv1.ImportEntriesRequest:
		reply, err := a.importEntries(who, req)
		return reply, true, err
	}
	return nil, false, nil
}

// archive serves an ArchiveEntriesRequest: the keys decided are reported,
// and stored unless it is a dry run.
func (a *scopeActor) archive(req *memoryv1.ArchiveEntriesRequest) (proto.Message, error) {
	out := &memoryv1.ArchiveEntriesReply{DryRun: req.GetDryRun()}
	if req.GetDryRun() {
		_, keys, more, err := a.st().DecideArchive(req, req.GetBy(), a.env())
		out.Keys, out.More = keys, more
		return out, err
	}
	res, err := a.mutate(req.GetCommandId(), func() ([]proto.Message, error) {
		evs, keys, more, err := a.st().DecideArchive(req, req.GetBy(), a.env())
		out.Keys, out.More = keys, more
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	a.schedule()
	out.Result = res
	return out, nil
}

// importEntries serves an ImportEntriesRequest. A dry run, and the retry
// of an import already applied, report what the import would change now.
func (a *scopeActor) importEntries(who *tenancy.Caller, req *memoryv1.ImportEntriesRequest) (proto.Message, error) {
	out := &memoryv1.ImportEntriesReply{DryRun: req.GetDryRun()}
	decide := func() ([]proto.Message, error) {
		evs, changes, err := a.st().DecideImport(req, req.GetBy(), a.writeEnv(who))
		if err == nil {
			err = a.importQuota(who, req.GetBy(), evs)
		}
		out.Changes = changes
		return evs, err
	}
	if req.GetDryRun() {
		_, err := decide()
		return tally(out), err
	}
	res, err := a.mutate(req.GetCommandId(), decide)
	if err != nil {
		return nil, err
	}
	if res.GetDuplicate() {
		if _, err := decide(); err != nil {
			return nil, err
		}
	}
	a.schedule()
	out.Result = res
	return tally(out), nil
}

// importQuota refuses an import by who whose versions would take what by
// holds in the scope past who's limits, as checkQuota does for one put:
// each key left live by the import counts as a put of its value (keys are
// distinct, so the changes add up).
func (a *scopeActor) importQuota(who *tenancy.Caller, by string, evs []proto.Message) error {
	if who == nil || who.Admin() {
		return nil
	}
	st, l, now := a.st(), who.Limits, a.dir.deps.Now().UnixNano()
	final := map[string]*memoryv1.Entry{}
	for _, ev := range evs {
		if e := ev.(*memoryv1.EntryChanged).GetEntry(); e != nil {
			final[e.GetKey()] = e
		}
	}
	had := st.WriterUsage(by)
	after := had
	for key, e := range final {
		if e.GetDeleted() {
			continue
		}
		u := st.WriterUsageAfter(by, key, len(e.GetValue()), now)
		after.Entries += u.Entries - had.Entries
		after.Bytes += u.Bytes - had.Bytes
	}
	switch {
	case after.Entries > had.Entries && after.Entries > l.MaxEntriesPerScope:
		return &sharedmem.Rejection{Code: 413, Field: "max_entries_per_scope",
			Reason: fmt.Sprintf("the import would make this writer hold %d live entries in the scope, past its limit of %d", after.Entries, l.MaxEntriesPerScope)}
	case after.Bytes > had.Bytes && after.Bytes > l.MaxBytesPerScope:
		return &sharedmem.Rejection{Code: 413, Field: "max_bytes_per_scope",
			Reason: fmt.Sprintf("the import would make this writer hold %d bytes of live values in the scope, past its limit of %d", after.Bytes, l.MaxBytesPerScope)}
	}
	return nil
}

// tally counts out's changes and the versions they write.
func tally(out *memoryv1.ImportEntriesReply) *memoryv1.ImportEntriesReply {
	out.Changed, out.Unchanged, out.Versions = 0, 0, 0
	for _, c := range out.GetChanges() {
		out.Versions += c.GetVersions()
		switch c.GetAction() {
		case sharedmem.ImportUnchanged, sharedmem.ImportSkip:
			out.Unchanged++
		default:
			out.Changed++
		}
	}
	return out
}

// ImportCommandID is the command id derived for an import of req into
// scope (kind:id) that names none: the same content into the same scope
// gives the same id, so the same import sent twice is stored once (a dry
// run and its real run differ: dry_run is part of the content).
func ImportCommandID(scope string, req *memoryv1.ImportEntriesRequest) string {
	r := proto.CloneOf(req)
	r.Keys = append([]*memoryv1.KeyHistory{{Key: scope}}, r.Keys...)
	return "import-" + hex.EncodeToString(CommandDigest(r))
}
