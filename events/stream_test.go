package events

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamStreamDenies: the log stream refuses single-message deletes
// and purges (whole or one subject), even to a connection with every right.
func TestJetStreamStreamDenies(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := l.Append(ctx, SessionSubject("d"), 0, "c1", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge {
		t.Fatalf("stream deny_delete=%v deny_purge=%v, want both", cfg.DenyDelete, cfg.DenyPurge)
	}
	if err := st.DeleteMsg(ctx, res.Seq); err == nil {
		t.Error("a single message was deleted")
	}
	if err := st.Purge(ctx); err == nil {
		t.Error("the stream was purged")
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(SessionSubject("d"))); err == nil {
		t.Error("a subject was purged")
	}
	if last, err := l.LastSeq(ctx, SessionSubject("d")); err != nil || last != res.Seq {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, res.Seq)
	}
}

// oldStreamConfig is the stream as a build before deny_purge created it.
func oldStreamConfig() jetstream.StreamConfig {
	c := DefaultJetStreamConfig()
	c.DenyPurge = false
	return c.StreamConfig()
}

// TestJetStreamDenyPurgeOnOldStream: a stream created without deny_purge (a
// data dir of an earlier build) is updated in place: the server accepts
// turning deny_purge on, and the messages stay.
func TestJetStreamDenyPurgeOnOldStream(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, oldStreamConfig()); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, SessionSubject("old"), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatalf("NewJetStreamLog on the old stream: %v", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if !info.Config.DenyPurge || !info.Config.DenyDelete {
		t.Fatalf("after the update: deny_delete=%v deny_purge=%v", info.Config.DenyDelete, info.Config.DenyPurge)
	}
	if last, err := l.LastSeq(ctx, SessionSubject("old")); err != nil || last != ack.Sequence {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, ack.Sequence)
	}
}

// refusingJS is a JetStream that refuses, as some server versions do, to
// change deny_purge on an existing stream.
type refusingJS struct{ jetstream.JetStream }

func (r refusingJS) refuse(ctx context.Context, cfg jetstream.StreamConfig) error {
	st, err := r.JetStream.Stream(ctx, cfg.Name)
	if err != nil {
		return nil // no stream: a create
	}
	if st.CachedInfo().Config.DenyPurge != cfg.DenyPurge {
		return &jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "stream configuration update can not change deny purge"}
	}
	return nil
}

func (r refusingJS) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if err := r.refuse(ctx, cfg); err != nil {
		return nil, err
	}
	return r.JetStream.CreateOrUpdateStream(ctx, cfg)
}

func (r refusingJS) UpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if err := r.refuse(ctx, cfg); err != nil {
		return nil, err
	}
	return r.JetStream.UpdateStream(ctx, cfg)
}

// TestJetStreamDenyPurgeRefused: when the server refuses to turn deny_purge
// on for an existing stream, the log keeps the stream as it is (the other
// settings still updated) and warns, naming the setting.
func TestJetStreamDenyPurgeRefused(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	old := oldStreamConfig()
	old.Duplicates = time.Minute
	if _, err := js.CreateStream(ctx, old); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := DefaultJetStreamConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	l, err := NewJetStreamLog(ctx, refusingJS{js}, cfg)
	if err != nil {
		t.Fatalf("NewJetStreamLog with the update refused: %v", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	got := st.CachedInfo().Config
	if got.DenyPurge || !got.DenyDelete || got.Duplicates != cfg.DuplicateWindow {
		t.Fatalf("stream deny_purge=%v deny_delete=%v duplicates=%s; want the old deny_purge, the rest updated", got.DenyPurge, got.DenyDelete, got.Duplicates)
	}
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "setting=deny_purge") || !strings.Contains(s, "stream=MEM") {
		t.Fatalf("warning: %q", s)
	}
	if _, err := l.Append(ctx, SessionSubject("r"), 0, "c", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestJetStreamNoStream: with the stream deleted underneath it, every call
// of the log fails with ErrNoStream (an append also with ErrUnknownOutcome)
// and nothing recreates the stream.
func TestJetStreamNoStream(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subj := SessionSubject("gone")
	res, err := l.Append(ctx, subj, 0, "c1", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, StreamName); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, subj, res.Seq, "c2", []byte("y")); !errors.Is(err, ErrNoStream) || !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("Append = %v, want ErrNoStream and ErrUnknownOutcome", err)
	}
	if _, err := l.LastSeq(ctx, subj); !errors.Is(err, ErrNoStream) {
		t.Errorf("LastSeq = %v, want ErrNoStream", err)
	}
	if _, err := l.Load(ctx, subj, 0, func(Record) error { return nil }); !errors.Is(err, ErrNoStream) {
		t.Errorf("Load = %v, want ErrNoStream", err)
	}
	if _, err := js.Stream(ctx, StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after the calls: %v, want not found (nothing recreates it)", err)
	}
}
