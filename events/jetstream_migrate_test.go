package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keptMsg is what a migration must keep of a message.
type keptMsg struct {
	subject, msgID string
	data           []byte
}

// writeMigrateLog appends n batches over a few subjects to a default (deny)
// log and returns them by sequence (index seq-1).
func writeMigrateLog(t *testing.T, js jetstream.JetStream, n int) []keptMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	var out []keptMsg
	for i := range n {
		subj := SessionSubject(fmt.Sprintf("s%d", i%3))
		id := fmt.Sprintf("session.s%d.c%d", i%3, i)
		data := []byte(fmt.Sprintf("batch %d", i))
		res, err := l.Append(ctx, subj, last[subj], id, data)
		if err != nil {
			t.Fatal(err)
		}
		if res.Seq != uint64(i+1) {
			t.Fatalf("append %d at seq %d", i, res.Seq)
		}
		last[subj] = res.Seq
		out = append(out, keptMsg{subject: subj, msgID: id, data: data})
	}
	return out
}

// checkMigrated checks the log holds want at the same sequences, allows
// deletes, is unmarked, the temporary stream is gone, and a node start
// (NewJetStreamLog with the default config) keeps it that way.
func checkMigrated(t *testing.T, js jetstream.JetStream, want []keptMsg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, StreamName+MigrateTempSuffix); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("temporary stream after the migration: %v", err)
	}
	l, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatalf("NewJetStreamLog on the migrated stream: %v", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if c := info.Config; c.DenyDelete || c.DenyPurge || c.Metadata[MigratingMetadataKey] != "" || c.Subjects[0] != SubjectPrefix+".>" {
		t.Fatalf("after a node start: deny_delete=%v deny_purge=%v metadata=%v subjects=%v", c.DenyDelete, c.DenyPurge, c.Metadata, c.Subjects)
	}
	if s := info.State; s.Msgs != uint64(len(want)) || (len(want) > 0 && (s.FirstSeq != 1 || s.LastSeq != uint64(len(want)))) {
		t.Fatalf("state %+v, want seq 1..%d", s, len(want))
	}
	for i, w := range want {
		m, err := st.GetMsg(ctx, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != w.subject || !bytes.Equal(m.Data, w.data) || m.Header.Get(jetstream.MsgIDHeader) != w.msgID {
			t.Fatalf("seq %d = %s %q id %q, want %s %q id %q", i+1, m.Subject, m.Data, m.Header.Get(jetstream.MsgIDHeader), w.subject, w.data, w.msgID)
		}
	}
	// Appends go on after the last sequence, the subject expectations hold.
	subj := want[0].subject
	lastSubj, err := l.LastSeq(ctx, subj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Append(ctx, subj, lastSubj, "after", []byte("after"))
	if err != nil || res.Seq != uint64(len(want)+1) {
		t.Fatalf("append after the migration: %+v, %v", res, err)
	}
	// And a message can now be deleted.
	if err := st.DeleteMsg(ctx, res.Seq); err != nil {
		t.Fatalf("delete a message of the migrated stream: %v", err)
	}
}

// TestMigrateAllowDelete: the migration keeps every message at its
// sequence (subject, data, message id), the new stream allows deletes, a
// node start does not turn the denies back on, and a second run has
// nothing to do.
func TestMigrateAllowDelete(t *testing.T) {
	js := newTestJetStream(t)
	want := writeMigrateLog(t, js, 40)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last = map[MigrateStep]uint64{}
	rep, err := MigrateAllowDelete(ctx, js, MigrateConfig{Progress: func(s MigrateStep, done, _ uint64) { last[s] = done }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 40 || !strings.HasPrefix(rep.Digest, "40:") || rep.AlreadyDone || rep.Resumed != "" || len(rep.Steps) != 6 {
		t.Fatalf("report %+v", rep)
	}
	if last[StepCopyOut] != 40 || last[StepVerifyOut] != 40 || last[StepCopyBack] != 40 || last[StepVerifyBack] != 40 {
		t.Fatalf("progress %v", last)
	}
	checkMigrated(t, js, want)
	rep, err = MigrateAllowDelete(ctx, js, MigrateConfig{})
	if err != nil || !rep.AlreadyDone {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
}

// errCrash is the simulated crash.
var errCrash = errors.New("crash")

// TestMigrateAllowDeleteResume: the migration cut at every step (and in
// the middle of each copy and comparison) is finished by the next run, with the same result as an
// uninterrupted one; a node start refuses the half-filled new stream, and
// never is the only copy deleted.
func TestMigrateAllowDeleteResume(t *testing.T) {
	const n = 30
	for _, cut := range []struct {
		step MigrateStep
		at   uint64
	}{
		{StepCopyOut, 0}, {StepCopyOut, n / 2}, {StepVerifyOut, n / 3}, {StepDeleteOld, 0},
		{StepCopyBack, 0}, {StepCopyBack, n / 2}, {StepVerifyBack, n - 1}, {StepDeleteTemp, 0},
	} {
		t.Run(fmt.Sprintf("%s@%d", strings.ReplaceAll(string(cut.step), " ", "_"), cut.at), func(t *testing.T) {
			js := newTestJetStream(t)
			want := writeMigrateLog(t, js, n)
			ctx, crash := context.WithCancelCause(context.Background())
			defer crash(nil)
			_, err := MigrateAllowDelete(ctx, js, MigrateConfig{Progress: func(s MigrateStep, done, _ uint64) {
				if s == cut.step && done == cut.at {
					crash(errCrash)
				}
			}})
			if err == nil {
				t.Fatal("the cut migration succeeded")
			}
			bg, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Never the only copy lost: the log or its verified copy holds
			// every message.
			src, _ := js.Stream(bg, StreamName)
			tmp, _ := js.Stream(bg, StreamName+MigrateTempSuffix)
			whole := func(s jetstream.Stream) bool { return s != nil && s.CachedInfo().State.Msgs == n }
			if !whole(src) && !whole(tmp) {
				t.Fatalf("after the cut neither %s nor its copy holds the %d messages", StreamName, n)
			}
			if src != nil && src.CachedInfo().Config.Metadata[MigratingMetadataKey] != "" {
				if _, err := NewJetStreamLog(bg, js, DefaultJetStreamConfig()); !errors.Is(err, ErrMigrating) {
					t.Fatalf("node start on the half-migrated stream: %v, want ErrMigrating", err)
				}
			}
			rep, err := MigrateAllowDelete(bg, js, MigrateConfig{})
			if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			if rep.Messages != n {
				t.Fatalf("rerun report %+v", rep)
			}
			checkMigrated(t, js, want)
		})
	}
}

// TestMigrateRefusesGap: a log that is not every sequence from 1 (a purged
// subject) is not migrated: copying would renumber it.
func TestMigrateRefusesGap(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.DenyPurge = false
	l, err := NewJetStreamLog(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a", "b", "a"} {
		if _, err := l.Append(ctx, SessionSubject(id), map[bool]uint64{true: 1}[i == 2], "", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := js.Stream(ctx, StreamName)
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(SessionSubject("b"))); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateAllowDelete(ctx, js, MigrateConfig{}); !errors.Is(err, ErrMigrateState) {
		t.Fatalf("migrate a log with a gap: %v, want ErrMigrateState", err)
	}
	if _, err := js.Stream(ctx, StreamName+MigrateTempSuffix); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("temporary stream: %v", err)
	}
}

// TestAllowDeleteNewStream: AllowDelete creates the stream without the
// denies; on an existing stream that denies deletes it keeps the denies and
// warns, naming the migration.
func TestAllowDeleteNewStream(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	if _, err := NewJetStreamLog(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(ctx, StreamName)
	if c := st.CachedInfo().Config; c.DenyDelete || c.DenyPurge {
		t.Fatalf("new stream with AllowDelete: deny_delete=%v deny_purge=%v", c.DenyDelete, c.DenyPurge)
	}

	js2 := newTestJetStream(t)
	if _, err := NewJetStreamLog(ctx, js2, DefaultJetStreamConfig()); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := NewJetStreamLog(ctx, js2, cfg); err != nil {
		t.Fatalf("AllowDelete on a denying stream: %v", err)
	}
	st, _ = js2.Stream(ctx, StreamName)
	if c := st.CachedInfo().Config; !c.DenyDelete || !c.DenyPurge {
		t.Fatalf("denying stream changed: deny_delete=%v deny_purge=%v", c.DenyDelete, c.DenyPurge)
	}
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "migrate-log") {
		t.Fatalf("warning: %q", s)
	}
}
