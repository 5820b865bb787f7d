package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// TestLoadReadsTheLastAppendOnACluster: on a three-server cluster, a
// subject's messages read right after an append (what an erase lists
// before it records its removal and purges the subject up to it) end with
// that append, wherever the read's consumer lives: on a replica that has
// not stored it yet, the read left it out (3 to 9 in 300 here), and the
// erase then purged a message its removal did not list.
func TestLoadReadsTheLastAppendOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers")
	}
	_, urls := startCluster(t)
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.DefaultJetStreamConfig()
	cfg.Replicas = 3
	var l *events.JetStreamLog
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if l, err = events.NewJetStreamLog(context.Background(), js, cfg); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const appends = 300
	var short []string
	for i := range appends {
		subj := fmt.Sprintf("mem.ev.session.s%d", i%7)
		last, err := l.LastSeq(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(ctx, subj, last, fmt.Sprint("m", i), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		seqs, err := events.SubjectSeqs(ctx, l, subj)
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) == 0 || seqs[len(seqs)-1] != res.Seq {
			short = append(short, fmt.Sprintf("%s read %v, appended %d", subj, seqs[max(0, len(seqs)-3):], res.Seq))
		}
	}
	if len(short) > 0 {
		t.Fatalf("%d reads of %d left the last append out: %s", len(short), appends, strings.Join(short, "; "))
	}
}
