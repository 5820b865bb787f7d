package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
)

// migratedDataDir is a copy of the node fixture's data dir with the log
// moved to six partitions (no node started on it).
func migratedDataDir(t *testing.T) (string, *fixture) {
	t.Helper()
	f := nodeFixture(t)
	dir := copyFixture(t)
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, io.Discard); err != nil {
		t.Fatalf("migrate-log --partitions 6: %v\n%s", err, out.String())
	}
	return dir, f
}

// migratedSeqs maps each sequence of the one stream to the one its message
// got in its partition (events.MigrateSourceSeqHeader).
func migratedSeqs(t *testing.T, url string, k int) map[uint64]uint64 {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := map[uint64]uint64{}
	for i := range k {
		s, err := js.Stream(ctx, events.PartitionStream(events.StreamName, i, k))
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatalf("partition %d seq %d: %v", i, seq, err)
			}
			old, err := strconv.ParseUint(m.Header.Get(events.MigrateSourceSeqHeader), 10, 64)
			if err != nil {
				t.Fatalf("partition %d seq %d: %s %q", i, seq, events.MigrateSourceSeqHeader, m.Header.Get(events.MigrateSourceSeqHeader))
			}
			out[old] = seq
		}
	}
	return out
}

// TestInspectPartitions: with the log moved to six partitions, inspect
// reads each session from its partition's stream (K from the streams'
// metadata): at every recorded point (its batch's sequence in the
// partition now) and at the latest, the context is the one the node of
// one stream returned then (its stream sequence aside).
func TestInspectPartitions(t *testing.T) {
	dir, f := migratedDataDir(t)
	conn := serve(t, dir)
	seqs := migratedSeqs(t, conn.NATSURL, 6)
	checked := 0
	for _, id := range f.sessions {
		pts := f.points[id]
		for i, pt := range pts {
			at, ok := seqs[pt.seq]
			if !ok {
				t.Fatalf("session %s point %d: seq %d not migrated", id, i, pt.seq)
			}
			cx, snap := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id, AtSeq: at})
			if !proto.Equal(withoutSeq(cx), withoutSeq(pt.context)) {
				t.Fatalf("session %s at seq %d (was %d): context differs\nreplayed: %v\nlive:     %v", id, at, pt.seq, cx, pt.context)
			}
			if snap.GetLastSeq() != at {
				t.Fatalf("session %s at seq %d: snapshot last seq %d", id, at, snap.GetLastSeq())
			}
			checked++
		}
		cx, _ := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id})
		if !proto.Equal(withoutSeq(cx), withoutSeq(pts[len(pts)-1].context)) {
			t.Fatalf("session %s latest: context differs", id)
		}
	}
	// The command line, K read from the streams.
	var out bytes.Buffer
	id := f.sessions[0]
	if err := Run(context.Background(), []string{"inspect", "session", id, "--nats-url", conn.NATSURL}, &out, io.Discard); err != nil {
		t.Fatalf("inspect session %s: %v", id, err)
	}
	if want := fmt.Sprintf("session %s (latest)", id); !strings.Contains(out.String(), want) {
		t.Fatalf("inspect text lacks %q:\n%s", want, out.String())
	}
	t.Logf("%d points equal", checked)
}

// TestStatsPartitions: stats of a log in six partitions (K from the
// streams' metadata) lists the six streams as the log's, counts the
// aggregates across them as the one stream did, and reports the
// projection's six checkpoints and no lag.
func TestStatsPartitions(t *testing.T) {
	dir, f := partitionedDataDir(t)
	var out bytes.Buffer
	rep, err := Stats(context.Background(), StatsConfig{Conn: Conn{DataDir: dir}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if len(rep.LogStreams) != 6 || rep.LogStreams[5] != "MEM_P5" {
		t.Fatalf("log streams %v", rep.LogStreams)
	}
	if rep.Aggregates["session"] != len(f.sessions) || rep.Aggregates["(invalid)"] != 0 {
		t.Errorf("aggregates %v, want %d sessions", rep.Aggregates, len(f.sessions))
	}
	p := rep.Projection
	if p == nil || !p.Exists || len(p.AppliedSeqs) != 6 || p.Lag != 0 || p.OtherLayout != 0 {
		t.Fatalf("projection %+v", p)
	}
	for _, want := range []string{"MEM_P0 (log)", "MEM_P5 (log)", "session: 6", "applied p0:", "lag 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
