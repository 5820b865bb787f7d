package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// Benchmarks run against the embedded server of natsembed.StartForTest: one
// replica, file storage, SyncAlways off (survives kill -9, not power loss),
// client on loopback.

// benchBatch is an encoded EventBatch of about 300 bytes.
func benchBatch(b *testing.B) []byte {
	b.Helper()
	c := NewCodec()
	packed, err := c.Pack([]proto.Message{&memoryv1.SummaryReplaced{
		SummaryId: "sum-0001",
		Text:      "The user asked for the Q3 revenue by region; the assistant ran the report tool and found EMEA up 12% and APAC flat; next step is to compare with Q2 figures.",
		Tokens:    41,
		Source:    "heuristic",
	}})
	if err != nil {
		b.Fatal(err)
	}
	data, err := EncodeBatch(&memoryv1.EventBatch{
		CommandId: "01J9Z3Y8X7W6V5T4S3R2Q1P0NM", AggregateKind: KindSession, AggregateId: "session-0001",
		Version: 42, TimeUnixNano: time.Now().UnixNano(), ActorId: "agent-0001",
		CausationId: "01J9Z3Y8X7W6V5T4S3R2Q1P0NK", CorrelationId: "01J9Z3Y8X7W6V5T4S3R2Q1P0NJ", Events: packed,
	})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkAppend(b *testing.B) {
	l, _ := newTestJetStreamLog(b)
	data := benchBatch(b)
	ctx := context.Background()
	subj := SessionSubject("bench")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var last uint64
	i := 0
	for b.Loop() {
		res, err := l.Append(ctx, subj, last, fmt.Sprint("cmd-", i), data)
		if err != nil {
			b.Fatal(err)
		}
		last = res.Seq
		i++
	}
}

func BenchmarkRawPublish(b *testing.B) {
	_, js := newTestJetStreamLog(b)
	data := benchBatch(b)
	ctx := context.Background()
	subj := SessionSubject("bench")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := js.Publish(ctx, subj, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad1000 is the cold activation of a 1,000-event aggregate, with
// another aggregate's messages interleaved in the stream.
func BenchmarkLoad1000(b *testing.B) {
	l, _ := newTestJetStreamLog(b)
	data := benchBatch(b)
	ctx := context.Background()
	subj, other := SessionSubject("cold"), SessionSubject("other")
	var last, lastOther uint64
	for i := range 1000 {
		res, err := l.Append(ctx, subj, last, fmt.Sprint("c-", i), data)
		if err != nil {
			b.Fatal(err)
		}
		last = res.Seq
		res, err = l.Append(ctx, other, lastOther, fmt.Sprint("o-", i), data)
		if err != nil {
			b.Fatal(err)
		}
		lastOther = res.Seq
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		got, err := l.Load(ctx, subj, 0, func(Record) error { n++; return nil })
		if err != nil || n != 1000 || got != last {
			b.Fatalf("Load = %d, %v, %d records", got, err, n)
		}
	}
}

func BenchmarkMemLogLoad1000(b *testing.B) {
	l := NewMemLog()
	ctx := context.Background()
	subj := SessionSubject("cold")
	var last uint64
	for i := range 1000 {
		res, err := l.Append(ctx, subj, last, fmt.Sprint(i), make([]byte, 300))
		if err != nil {
			b.Fatal(err)
		}
		last = res.Seq
	}
	for b.Loop() {
		if _, err := l.Load(ctx, subj, 0, func(Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
