package projections

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenCases are event logs whose read model is compared with
// testdata/<name>.golden (a Dump of every bucket).
var goldenCases = []struct {
	name  string
	build func(l *logBuilder)
}{
	{"messages", func(l *logBuilder) {
		l.create("s1", "u1", "a1")
		l.appendMsgs("s1", "What is our churn rate?", "Churn was 3.2% in March.")
		l.appendMsgs("s1", "And customer-id 42's error: 3706?")
	}},
	{"compression_archive", func(l *logBuilder) {
		l.create("s1", "u1", "")
		l.appendMsgs("s1", "first question", "first answer", "second question", "second answer")
		sum1 := &memoryv1.Summary{Id: "s1-sum1", FirstSeq: 1, LastSeq: 2, Text: "asked first, answered", Tokens: 5,
			Source: "extractive", MessageIds: []string{"s1-m1", "s1-m2"}, CoveredTokens: 8}
		l.add("s1", &memoryv1.L1Summarized{Summary: sum1})
		l.add("s1", l.msgs("s1", "third question"), &memoryv1.L1Evicted{Summary: sum1})
		sum2 := &memoryv1.Summary{Id: "s1-sum2", FirstSeq: 3, LastSeq: 4, Text: "second exchange", Tokens: 3,
			Source: "extractive", MessageIds: []string{"s1-m3", "s1-m4"}, CoveredTokens: 6}
		l.add("s1", &memoryv1.L1Evicted{Summary: sum2}, &memoryv1.L2Archived{Summaries: []*memoryv1.Summary{sum1, sum2}, Tokens: 8})
	}},
	{"two_users", func(l *logBuilder) {
		l.create("s1", "alice", "a1")
		l.create("s2", "bob", "a1")
		l.create("s3", "alice", "a2")
		l.other("mem.ev.unknown.a1") // not projected: only advances the checkpoint
		l.appendMsgs("s1", "deploy failed with timeout")
		l.appendMsgs("s2", "deploy succeeded")
		l.appendMsgs("s3", "timeout again, O'Brien says")
	}},
	{"speakers_and_days", func(l *logBuilder) {
		// Imported history: named speakers, said on 8 May 2023 (field
		// terms \x01speaker:… and \x01day:…), and a live message.
		l.create("s1", "u1", "")
		ev := l.msgs("s1", "I painted a lake sunrise", "Lovely! Mary-Anne O'Brien painted one too")
		ev.Messages[0].Name, ev.Messages[0].SaidUnixNano = "Melanie", 1_683_553_000_000_000_000
		ev.Messages[1].Name, ev.Messages[1].SaidUnixNano = "Mary-Anne O'Brien", 1_683_553_060_000_000_000
		l.add("s1", ev)
		l.appendMsgs("s1", "now")
	}},
	{"status_change", func(l *logBuilder) {
		l.create("s1", "u1", "")
		l.add("s1", &memoryv1.SessionStatusChanged{From: memoryv1.SessionStatus_SESSION_STATUS_CREATED, To: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE})
		l.appendMsgs("s1", "hello")
		l.add("s1", &memoryv1.KernelFactSet{Fact: &memoryv1.Fact{Key: "tz", Value: "UTC"}})
		l.add("s1", &memoryv1.SessionStatusChanged{From: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE, To: memoryv1.SessionStatus_SESSION_STATUS_PAUSED, Reason: "lunch"})
	}},
}

func dumpString(t *testing.T, s *Store) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Dump(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogBuilder(t)
			tc.build(l)

			// All records in one transaction...
			whole := openTestStore(t)
			mustApply(t, whole, l.recs)
			got := dumpString(t, whole)

			// ...and one record per transaction, each applied twice (the
			// second time is a redelivery after a crash): same file.
			single := openTestStore(t)
			for i := range l.recs {
				mustApply(t, single, l.recs[i:i+1])
				mustApply(t, single, l.recs[:i+1])
			}
			if s := dumpString(t, single); s != got {
				t.Fatalf("one record per batch differs from one batch:\n%s\nvs\n%s", s, got)
			}

			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("read model differs from %s (run with -update if intended):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func TestApplyBatchCheckpointAndQueries(t *testing.T) {
	l := newLogBuilder(t)
	l.create("s1", "u1", "a1")
	l.appendMsgs("s1", "one", "two", "three")
	l.appendMsgs("s1", "four", "five")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	if got := s.AppliedSeq(); got != 3 {
		t.Fatalf("AppliedSeq = %d, want 3", got)
	}

	msgs, total, err := s.Recall("s1", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if total != 5 || len(msgs) != 3 || msgs[0].GetContent() != "two" || msgs[2].GetContent() != "four" {
		t.Fatalf("Recall(1,3) = %v, %d", msgs, total)
	}
	if msgs, total, _ := s.Recall("nope", 0, 0); len(msgs) != 0 || total != 0 {
		t.Fatalf("Recall of unknown session = %v, %d", msgs, total)
	}
	if _, _, err := s.Recall("s1", 0, 51); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Recall limit 51: %v", err)
	}

	got, err := s.MessagesByID("s1", []string{"s1-m5", "s1-m1"})
	if err != nil || len(got) != 2 || got[0].GetContent() != "five" || got[1].GetContent() != "one" {
		t.Fatalf("MessagesByID = %v, %v", got, err)
	}
	_, err = s.MessagesByID("s1", []string{"s1-m1", "ghost"})
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.ID != "ghost" {
		t.Fatalf("MessagesByID ghost: %v", err)
	}

	e, ok, err := s.Session("s1")
	if err != nil || !ok || e.GetMessages() != 5 || e.GetLastSeq() != 3 || e.GetUserId() != "u1" {
		t.Fatalf("Session = %v, %v, %v", e, ok, err)
	}
	if _, ok, _ := s.Session("nope"); ok {
		t.Fatal("unknown session found")
	}

	// Reopen: the checkpoint survives and re-applying is a no-op.
	path := s.Path()
	d1, _ := s.Digest()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := s.Recall("s1", 0, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recall after Close: %v", err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.AppliedSeq() != 3 {
		t.Fatalf("reopened AppliedSeq = %d", s2.AppliedSeq())
	}
	mustApply(t, s2, l.recs)
	d2, _ := s2.Digest()
	if diff := VerifyDigests(d1, d2); diff != nil {
		t.Fatalf("re-applying changed the file: %v", diff)
	}
}

func TestApplyBatchRejects(t *testing.T) {
	cases := []struct {
		name  string
		build func(l *logBuilder)
		want  error
	}{
		{"unknown event type", func(l *logBuilder) {
			l.create("s1", "u1", "")
			l.add("s1", &memoryv1.SessionSnapshot{SessionId: "s1"})
		}, events.ErrUnknownEventType},
		{"no session", func(l *logBuilder) { l.appendMsgs("s1", "hi") }, ErrApply},
		{"created twice", func(l *logBuilder) { l.create("s1", "", ""); l.create("s1", "", "") }, ErrApply},
		{"message gap", func(l *logBuilder) {
			l.create("s1", "", "")
			l.msgSeq["s1"] = 3
			l.appendMsgs("s1", "hi")
		}, ErrApply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogBuilder(t)
			tc.build(l)
			s := openTestStore(t)
			err := s.ApplyBatch(l.recs)
			var ae *ApplyError
			if !errors.Is(err, tc.want) || !errors.As(err, &ae) || ae.Seq != l.seq {
				t.Fatalf("ApplyBatch = %v, want %v at seq %d", err, tc.want, l.seq)
			}
			if s.AppliedSeq() != 0 {
				t.Fatalf("nothing must be committed, checkpoint %d", s.AppliedSeq())
			}
			if e, ok, _ := s.Session("s1"); ok {
				t.Fatalf("partial effect committed: %v", e)
			}
		})
	}
}

func TestOpenSchemaVersionMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaSchemaVersion, u32(SchemaVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	if !errors.Is(err, ErrSchemaVersion) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", SchemaVersion+1)) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", SchemaVersion)) {
		t.Fatalf("Open = %v", err)
	}
}

func TestListSessions(t *testing.T) {
	l := newLogBuilder(t)
	for i, sid := range []string{"s1", "s2", "s3", "s4", "s5"} {
		user := "alice"
		if i%2 == 1 {
			user = "bob"
		}
		l.create(sid, user, "agentX")
	}
	l.add("s3", &memoryv1.SessionStatusChanged{From: memoryv1.SessionStatus_SESSION_STATUS_CREATED, To: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE})
	s := openTestStore(t)
	mustApply(t, s, l.recs)

	ids := func(es []*memoryv1.SessionIndexEntry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.GetSessionId())
		}
		return strings.Join(out, ",")
	}
	collect := func(req *memoryv1.ListSessionsRequest) string {
		var pages []string
		for {
			es, next, err := s.ListSessions(req)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, ids(es))
			if next == "" {
				return strings.Join(pages, "/")
			}
			req = proto.Clone(req).(*memoryv1.ListSessionsRequest)
			req.PageToken = next
		}
	}
	for _, tc := range []struct {
		req  *memoryv1.ListSessionsRequest
		want string
	}{
		{&memoryv1.ListSessionsRequest{}, "s1,s2,s3,s4,s5"},
		{&memoryv1.ListSessionsRequest{Limit: 2}, "s1,s2/s3,s4/s5"},
		{&memoryv1.ListSessionsRequest{UserId: "alice", Limit: 2}, "s1,s3/s5"},
		{&memoryv1.ListSessionsRequest{UserId: "bob"}, "s2,s4"},
		{&memoryv1.ListSessionsRequest{AgentId: "agentX", Limit: 4}, "s1,s2,s3,s4/s5"},
		{&memoryv1.ListSessionsRequest{UserId: "alice", Status: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE}, "s3"},
		{&memoryv1.ListSessionsRequest{UserId: "nobody"}, ""},
	} {
		if got := collect(tc.req); got != tc.want {
			t.Errorf("ListSessions(%v) = %q, want %q", tc.req, got, tc.want)
		}
	}
	for _, bad := range []*memoryv1.ListSessionsRequest{
		{Limit: 101},
		{UserId: "a", AgentId: "b"},
		{PageToken: "!!"},
		{UserId: "bob", PageToken: "czE"}, // a token of another listing
	} {
		if _, _, err := s.ListSessions(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ListSessions(%v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestArchivedSummaries(t *testing.T) {
	l := newLogBuilder(t)
	goldenCases[1].build(l)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	sums, err := s.ArchivedSummaries("s1")
	if err != nil || len(sums) != 2 || sums[0].GetId() != "s1-sum1" || sums[1].GetId() != "s1-sum2" {
		t.Fatalf("ArchivedSummaries = %v, %v", sums, err)
	}
	e, _, _ := s.Session("s1")
	if e.GetSummaries() != 3 || e.GetMessages() != 5 {
		t.Fatalf("counts: %v", e)
	}
}
