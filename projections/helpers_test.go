package projections

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var testCodec = events.NewCodec()

// baseTime is the fixed clock of generated batches (golden files are stable).
const baseTime = int64(1_700_000_000_000_000_000)

// logBuilder produces the batches of a log, assigning stream sequences and
// per-session versions and message sequences as the actors would.
type logBuilder struct {
	t       testing.TB
	seq     uint64
	version map[string]uint64
	msgSeq  map[string]uint64
	recs    []Decoded
	// batchTime gives each message its batch's time (as the actors do),
	// not baseTime plus its sequence in the session.
	batchTime bool
}

func newLogBuilder(t testing.TB) *logBuilder {
	return &logBuilder{t: t, version: map[string]uint64{}, msgSeq: map[string]uint64{}}
}

// batch builds the EventBatch of session sid holding evs.
func (l *logBuilder) batch(sid string, evs ...proto.Message) *memoryv1.EventBatch {
	l.t.Helper()
	anys, err := testCodec.Pack(evs)
	if err != nil {
		l.t.Fatal(err)
	}
	l.version[sid]++
	v := l.version[sid]
	return &memoryv1.EventBatch{
		CommandId:     fmt.Sprintf("%s-c%d", sid, v),
		AggregateKind: events.KindSession,
		AggregateId:   sid,
		Version:       v,
		TimeUnixNano:  baseTime + int64(l.seq+1)*int64(time.Second),
		SchemaVersion: events.SchemaVersion,
		Events:        anys,
	}
}

// add appends a record of session sid with evs to the log.
func (l *logBuilder) add(sid string, evs ...proto.Message) *memoryv1.EventBatch {
	l.t.Helper()
	b := l.batch(sid, evs...)
	l.seq++
	unpacked, err := testCodec.Unpack(b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.recs = append(l.recs, Decoded{Seq: l.seq, Subject: events.SessionSubject(sid), Batch: b, Events: unpacked})
	return b
}

// other appends a record of a subject the store does not project.
func (l *logBuilder) other(subject string) {
	l.seq++
	l.recs = append(l.recs, Decoded{Seq: l.seq, Subject: subject})
}

func (l *logBuilder) create(sid, user, agent string) *memoryv1.EventBatch {
	return l.add(sid, &memoryv1.SessionCreated{SessionId: sid, UserId: user, AgentId: agent, App: "app"})
}

// msgs returns a MessagesAppended of texts with the session's next sequences.
func (l *logBuilder) msgs(sid string, texts ...string) *memoryv1.MessagesAppended {
	e := &memoryv1.MessagesAppended{}
	for i, text := range texts {
		l.msgSeq[sid]++
		n := l.msgSeq[sid]
		created := baseTime + int64(n)
		if l.batchTime {
			created = baseTime + int64(l.seq+1)*int64(time.Second) // the next batch's (batch)
		}
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		e.Messages = append(e.Messages, &memoryv1.Message{
			Id: fmt.Sprintf("%s-m%d", sid, n), Seq: n, Role: role, Content: text,
			Tokens: uint32(len(text)/4 + 1), Turn: uint32(n+1) / 2, CreatedUnixNano: created,
		})
	}
	return e
}

func (l *logBuilder) appendMsgs(sid string, texts ...string) *memoryv1.EventBatch {
	return l.add(sid, l.msgs(sid, texts...))
}

func openTestStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "proj.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustApply(t testing.TB, s *Store, recs []Decoded) {
	t.Helper()
	if err := s.ApplyBatch(recs); err != nil {
		t.Fatal(err)
	}
}

// testJS starts an embedded server and creates the log stream.
func testJS(t testing.TB) (jetstream.JetStream, *events.JetStreamLog) {
	t.Helper()
	return testJSWith(t, events.DefaultJetStreamConfig())
}

// testJSWith is testJS with the log stream created from cfg (tests that
// damage the log need one without deny_purge).
func testJSWith(t testing.TB, cfg events.JetStreamConfig) (jetstream.JetStream, *events.JetStreamLog) {
	t.Helper()
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := events.NewJetStreamLog(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return js, log
}

// publish appends the records' batches to the log (expected last subject
// sequence tracked per subject) and returns the last stream sequence.
func publish(t testing.TB, log *events.JetStreamLog, recs []Decoded) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lastBySubj := map[string]uint64{}
	var last uint64
	for _, r := range recs {
		if r.Batch == nil {
			continue
		}
		data, err := events.EncodeBatch(r.Batch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, r.Subject, lastBySubj[r.Subject], r.Batch.CommandId, data)
		if err != nil {
			t.Fatal(err)
		}
		lastBySubj[r.Subject] = res.Seq
		last = res.Seq
	}
	return last
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readerOf is the log stream of js as the readers see it (opened, not
// created).
func readerOf(t testing.TB, js jetstream.JetStream) events.StreamReader {
	t.Helper()
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	return l
}
