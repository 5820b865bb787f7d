package replay

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestStats(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	var out bytes.Buffer
	rep, err := Stats(context.Background(), StatsConfig{Conn: Conn{DataDir: dir}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	var log *StreamStat
	for i := range rep.Streams {
		if rep.Streams[i].Name == "MEM" {
			log = &rep.Streams[i]
		}
	}
	if log == nil || log.Messages != uint64(f.batches) || log.LastSeq != f.lastSeq || log.Bytes == 0 {
		t.Fatalf("log stream %+v, want %d messages up to seq %d", log, f.batches, f.lastSeq)
	}
	if len(rep.Streams) < 2 {
		t.Errorf("streams %+v: the snapshot bucket's stream is missing", rep.Streams)
	}
	if rep.Aggregates["session"] != len(f.sessions) {
		t.Errorf("aggregates %v, want %d sessions", rep.Aggregates, len(f.sessions))
	}
	p := rep.Projection
	if p == nil || !p.Exists || p.AppliedSeq != f.lastSeq || p.Lag != 0 || p.Bytes == 0 {
		t.Errorf("projection %+v", p)
	}
	if rep.DataDirBytes <= 0 {
		t.Errorf("data dir size %d", rep.DataDirBytes)
	}
	for _, want := range []string{"MEM (log)", "session: 6", "lag 0", "data dir:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
