package events

import (
	"context"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestPartitionedLedgerInAggregateStream: with the log in six partitions
// the ledger records of a removal of one aggregate's messages go to that
// aggregate's stream (LedgerLogOf), whatever the removal id's hash names:
// the stream's ledger lists the removal and its spans are sequences of
// that stream, which RemoveSubject purges up to the record. The log in one
// stream is its own ledger log.
func TestPartitionedLedgerInAggregateStream(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	l := newTestPartitionedLog(t, js, cfg, testPartitions)
	subject := SessionSubject("s1")
	part, err := l.PartitionOf(subject)
	if err != nil {
		t.Fatal(err)
	}
	// A removal id whose own hash names another partition: the test
	// fails when the record follows the id.
	id := ""
	for _, c := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"} {
		if p, _ := l.PartitionOf(RemovalSubject(c)); p != part {
			id = c
			break
		}
	}
	if id == "" {
		t.Fatal("no removal id hashing to another partition")
	}
	var last uint64
	for i := range 3 {
		res, err := l.Append(ctx, subject, last, "m"+string(rune('a'+i)), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		last = res.Seq
	}
	seqs, err := SubjectSeqs(ctx, l, subject)
	if err != nil || len(seqs) != 3 {
		t.Fatalf("seqs %v %v", seqs, err)
	}
	ledger, err := LedgerLogOf(l, subject)
	if err != nil {
		t.Fatal(err)
	}
	codec := NewCodec()
	rm := &memoryv1.LogRemoval{Id: id, Subjects: []string{subject}, Removed: RemovalSpans(Spans(seqs)), Messages: 3}
	seq, err := AppendRemoval(ctx, ledger, codec, rm, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveSubject(ctx, subject, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := CompleteRemoval(ctx, ledger, codec, id, seq, time.Now()); err != nil {
		t.Fatal(err)
	}
	if left, err := SubjectSeqs(ctx, l, subject); err != nil || len(left) != 0 {
		t.Fatalf("after the removal %s holds %v (%v)", subject, left, err)
	}
	for i := range testPartitions {
		led, err := ReadLedger(ctx, l.Partition(i), 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == part && (len(led.Removals) != 1 || !led.Removals[0].Completed || !led.Removed.Covers(seqs[0], seqs[2])):
			t.Errorf("partition %d (the aggregate's) ledger: %+v", i, led.Removals)
		case i != part && len(led.Removals) != 0:
			t.Errorf("partition %d holds %d removals, want none", i, len(led.Removals))
		}
	}
	if rec, err := LoadRemoval(ctx, ledger, id); err != nil || rec.RemovalSeq != seq || rec.DoneSeq == 0 {
		t.Errorf("LoadRemoval from the ledger log: %+v %v", rec, err)
	}
	mem := NewMemLog()
	if got, err := LedgerLogOf(mem, subject); err != nil || got != Log(mem) {
		t.Errorf("LedgerLogOf a log in one stream: %v %v", got, err)
	}
}
