package sharedmem

import (
	"errors"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

const t0 = int64(1_700_000_000_000_000_000)

func env(now int64) Env { return Env{NowUnixNano: now} }

func marshal(t tb, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip returns the events as a replay would read them from the log.
func roundTrip(t tb, evs []proto.Message) []proto.Message {
	t.Helper()
	out := make([]proto.Message, len(evs))
	for i, ev := range evs {
		n := ev.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(marshal(t, ev), n); err != nil {
			t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

func apply(t tb, s *State, cmd string, evs []proto.Message) {
	t.Helper()
	if err := s.Apply(Meta{CommandID: cmd, Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
		t.Fatal(err)
	}
}

func mustPut(t tb, s *State, req *memoryv1.PutEntryRequest, now int64) []proto.Message {
	t.Helper()
	evs, err := s.DecidePut(req, "tester", env(now))
	if err != nil {
		t.Fatalf("put %q: %v", req.Key, err)
	}
	apply(t, s, req.CommandId, evs)
	return evs
}

func code(err error) int {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func wantCode(t *testing.T, err error, want int, field string) {
	t.Helper()
	var r *Rejection
	if !errors.As(err, &r) || r.Code != want || (field != "" && r.Field != field) {
		t.Fatalf("got %v, want %d on %q", err, want, field)
	}
}

func i64(v int64) *int64 { return &v }

// lastEntry is the Entry of a batch's last event.
func lastEntry(evs []proto.Message) *memoryv1.Entry {
	return evs[len(evs)-1].(*memoryv1.EntryChanged).Entry
}

func toMessages(xs []any) []proto.Message {
	out := make([]proto.Message, len(xs))
	for i, x := range xs {
		out[i] = x.(proto.Message)
	}
	return out
}
