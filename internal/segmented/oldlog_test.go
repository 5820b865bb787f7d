package segmented

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TestReplayRollingLog replays a log the previous policy wrote (rolling
// summaries: L1Summarized over an earlier summary, L1Evicted without
// moved_summary_ids, L2Archived clearing all of L2) and checks the state
// equals, byte for byte, the snapshot that policy produced. Then the
// session goes on under the current policy from that state.
//
// testdata/rolling_v1.log.jsonl holds one EventBatch per line (protojson;
// correlation_id carries the stream sequence of the batch), and
// rolling_v1.snapshot.json the final snapshot, both written by the code
// before compression stopped re-summarizing summaries.
func TestReplayRollingLog(t *testing.T) {
	f, err := os.Open("testdata/rolling_v1.log.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	kinds := map[string]int{}
	for sc.Scan() {
		b := &memoryv1.EventBatch{}
		if err := protojson.Unmarshal(sc.Bytes(), b); err != nil {
			t.Fatal(err)
		}
		var evs []proto.Message
		for _, a := range b.Events {
			ev, err := a.UnmarshalNew()
			if err != nil {
				t.Fatal(err)
			}
			kinds[fmt.Sprintf("%T", ev)]++
			evs = append(evs, ev)
		}
		seq, err := strconv.ParseUint(b.CorrelationId, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(Meta{CommandID: b.CommandId, Version: b.Version, Seq: seq, TimeUnixNano: b.TimeUnixNano}, evs); err != nil {
			t.Fatalf("batch %d: %v", b.Version, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"*memoryv1.L1Summarized", "*memoryv1.L1Evicted", "*memoryv1.L2Archived"} {
		if kinds[k] == 0 {
			t.Fatalf("fixture has no %s: %v", k, kinds)
		}
	}
	raw, err := os.ReadFile("testdata/rolling_v1.snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	want := &memoryv1.SessionSnapshot{}
	if err := protojson.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	// The fixture predates last_append_first_seq, which replay now sets.
	got := proto.CloneOf(s.Snapshot())
	got.LastAppendFirstSeq = 0
	if got := marshal(t, got); !bytes.Equal(got, marshal(t, want)) {
		t.Fatalf("replayed state differs from the snapshot the old policy produced:\ngot  %v\nwant %v", s.Snapshot(), want)
	}
	checkInvariants(t, s)
	// The session goes on under the current policy.
	for i := range 30 {
		appendOK(t, s, user(fmt.Sprintf("Follow-up %d: did Bob approve refund %d?", i, i)),
			assistant(fmt.Sprintf("Bob approved refund %d on March %d. The ledger entry is LED-%d.", i, 1+i%28, 500+i)))
		checkInvariants(t, s)
	}
}
