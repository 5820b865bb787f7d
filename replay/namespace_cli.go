package replay

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// namespaceUsage is the namespace command's part of Usage.
const namespaceUsage = `  namespace list|export|import|archive|restore <kind:id> ... --nats-url URL
        ONLINE, through a running node's API (its access checks apply: the
        namespace's owner or an admin; put user:password in the URL or give
        --nats-creds). A namespace is user:<id>, agent:<id>, project:<id>,
        session:<id> (a session's scope), ...
        list <ns> [--type episodic|semantic|procedural] [--older-than-days N]
            [--archived] [--deleted] [--prefix P]: key, version, type, state, updated
        export <ns> [--out FILE|-] [--prefix P] [--messages [--min-seq N]]: a JSON file of
            the keys with every kept version and metadata (archived and
            deleted ones included); --messages adds the messages of a user's
            sessions. At most 200 keys and 4 MiB a page.
        import <ns> [--in FILE|-] [--dry-run] [--skip-messages]: write the
            file's entries into <ns>, the same or another namespace: each
            key's versions in order, with their metadata (archived ones stay
            archived; a key deleted in the export is skipped), after those
            the key's history there already ends with; then the file's
            sessions' messages, appended in order to sessions of user <ns>
            (the same ids into the namespace exported, else <id>-<user>)
            after those a session already holds; running it again changes
            nothing; --dry-run reports what would change. Files above
            256 MiB are refused.
        archive <ns> --older-than-days N [--type T] [--prefix P] [--dry-run]:
            archive live entries of type T (default episodic) last updated N
            days ago or more: out of reads, search and contexts, restorable.
        restore <ns> <key> [--version N]: bring back an archived or deleted
            entry (its archived value, its newest live version, or version N).
`

// runNamespace runs "replay namespace <sub> <ns> ...": fs holds the
// connection flags, parse parses args with them.
func runNamespace(ctx context.Context, fs *flag.FlagSet, parse func() ([]string, error), conn *Conn, stdout, stderr io.Writer) error {
	var (
		typ, prefix, out, in string
		olderDays, version   uint64
		minSeq               uint64
		archived, deleted    bool
		dryRun, messages     bool
		skipMessages         bool
	)
	fs.StringVar(&typ, "type", "", "memory type: episodic, semantic or procedural")
	fs.StringVar(&prefix, "prefix", "", "only keys with this prefix")
	fs.StringVar(&out, "out", "-", "file to write, - for stdout")
	fs.StringVar(&in, "in", "-", "file to read, - for stdin")
	fs.Uint64Var(&olderDays, "older-than-days", 0, "entries last updated at least this many days ago")
	fs.Uint64Var(&version, "version", 0, "the version a restore brings back")
	fs.BoolVar(&archived, "archived", false, "list only archived entries")
	fs.BoolVar(&deleted, "deleted", false, "list deleted entries too")
	fs.BoolVar(&dryRun, "dry-run", false, "report what would change without changing it")
	fs.BoolVar(&messages, "messages", false, "export the messages of a user's sessions too")
	fs.BoolVar(&skipMessages, "skip-messages", false, "import the entries only, not the file's sessions' messages")
	fs.Uint64Var(&minSeq, "min-seq", 0, "with --messages: read the sessions once the node applied this log sequence (a writer's last acknowledged write)")
	pos, err := parse()
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return fmt.Errorf("%w: namespace list|export|import|archive|restore <kind:id> ..., got %q", ErrUsage, strings.Join(pos, " "))
	}
	sub := pos[0]
	scope, err := ParseNamespace(pos[1])
	if err != nil {
		return err
	}
	if want := map[string]int{"restore": 3}[sub]; want == 0 && len(pos) != 2 || want != 0 && len(pos) != want {
		return fmt.Errorf("%w: namespace %s: unexpected arguments %q", ErrUsage, sub, strings.Join(pos[2:], " "))
	}
	mt, err := memoryType(typ)
	if err != nil {
		return err
	}
	c, closeAPI, err := dialAPI(*conn)
	if err != nil {
		return err
	}
	defer closeAPI()
	switch sub {
	case "list":
		return namespaceList(ctx, c, scope, &memoryv1.ListEntriesRequest{Prefix: prefix, MemoryType: mt, Archived: archived,
			IncludeDeleted: deleted, OlderThanSeconds: int64(olderDays) * 24 * 3600, Limit: 1000}, stdout)
	case "export":
		w, done, err := openOut(out, stdout)
		if err != nil {
			return err
		}
		n, err := NamespaceExport(ctx, c, scope, prefix, messages, minSeq, w)
		if err = done(err); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "exported %d keys of %s\n", n, scope)
		return nil
	case "import":
		var r io.Reader = os.Stdin
		if in != "-" {
			f, err := os.Open(in)
			if err != nil {
				return fmt.Errorf("replay: namespace import: %w", err)
			}
			defer f.Close()
			r = f
		}
		f, keys, err := ReadNamespaceFile(r)
		if err != nil {
			return err
		}
		if skipMessages {
			f.Sessions = nil
		}
		if len(f.Sessions) > 0 && scope.Kind != "user" {
			return fmt.Errorf("%w: the file holds the messages of %d sessions: they import into a user:<id> namespace only (or give --skip-messages)", ErrUsage, len(f.Sessions))
		}
		rep, err := NamespaceImport(ctx, c, scope, keys, dryRun)
		if err != nil {
			return err
		}
		for _, ch := range rep.GetChanges() {
			fmt.Fprintf(stdout, "%-9s %s%s%s\n", ch.GetAction(), ch.GetKey(), map[bool]string{true: fmt.Sprintf(" (%d versions)", ch.GetVersions())}[ch.GetVersions() > 1],
				map[bool]string{true: " (" + ch.GetReason() + ")"}[ch.GetReason() != ""])
		}
		verb := "imported"
		if dryRun {
			verb = "dry run: would import"
		}
		fmt.Fprintf(stdout, "%s %s into %s: %d changed, %d unchanged or skipped; %d versions\n", verb, f.Scope, scope, rep.GetChanged(), rep.GetUnchanged(), rep.GetVersions())
		if len(f.Sessions) == 0 {
			return nil
		}
		mi, err := NamespaceImportMessages(ctx, c, f.Scope, scope, f.Sessions, dryRun)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s messages: %d sessions (%d new), %d messages appended, %d already there\n", verb, mi.Sessions, mi.Created, mi.Appended, mi.Present)
		return nil
	case "archive":
		keys, more, err := NamespaceArchive(ctx, c, scope, &memoryv1.ArchiveEntriesRequest{MemoryType: mt, OlderThanDays: uint32(min(olderDays, 1<<31)), Prefix: prefix, DryRun: dryRun})
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintln(stdout, k)
		}
		verb := "archived"
		if dryRun {
			verb = "dry run: would archive"
		}
		fmt.Fprintf(stdout, "%s %d entries of %s%s\n", verb, len(keys), scope, map[bool]string{true: " (and more after these)"}[more])
		return nil
	case "restore":
		rep, err := c.Restore(ctx, scope, &memoryv1.RestoreEntryRequest{Key: pos[2], Version: version})
		if err != nil {
			return fmt.Errorf("replay: restore %s %s: %w", scope, pos[2], err)
		}
		fmt.Fprintf(stdout, "restored %s as version %d (from version %d)\n", pos[2], rep.GetEntry().GetVersion(), rep.GetEntry().GetRestoredFrom())
		return nil
	}
	return fmt.Errorf("%w: namespace %q: want list, export, import, archive or restore", ErrUsage, sub)
}

// namespaceList prints every page of a list.
func namespaceList(ctx context.Context, c *client.Client, scope client.Scope, req *memoryv1.ListEntriesRequest, w io.Writer) error {
	for {
		rep, err := c.ListEntries(ctx, scope, req)
		if err != nil {
			return fmt.Errorf("replay: list %s: %w", scope, err)
		}
		for _, e := range rep.GetEntries() {
			state := "live"
			switch {
			case e.GetChange() == memoryv1.ChangeKind_CHANGE_KIND_ARCHIVE && e.GetDeleted():
				state = "archived"
			case e.GetDeleted():
				state = "deleted"
			}
			fmt.Fprintf(w, "%s\tv%d\t%s\t%s\t%s\n", e.GetKey(), e.GetVersion(), lowerType(e.GetMemoryType()), state,
				timeOf(e.GetUpdatedUnixNano()))
		}
		if req.PageToken = rep.GetNextPageToken(); req.PageToken == "" {
			return nil
		}
	}
}

func memoryType(s string) (memoryv1.MemoryType, error) {
	if s == "" {
		return memoryv1.MemoryType_MEMORY_TYPE_UNSPECIFIED, nil
	}
	v, ok := memoryv1.MemoryType_value["MEMORY_TYPE_"+strings.ToUpper(s)]
	if !ok {
		return 0, fmt.Errorf("%w: --type %q: want episodic, semantic or procedural", ErrUsage, s)
	}
	return memoryv1.MemoryType(v), nil
}

func lowerType(t memoryv1.MemoryType) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "MEMORY_TYPE_"))
}

func timeOf(unixNano int64) string { return time.Unix(0, unixNano).UTC().Format(time.RFC3339) }
