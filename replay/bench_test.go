package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// benchCopies is how many renamed copies of the fixture's log (6 sessions,
// 111 batches) the benchmark imports.
const benchCopies = 100

// BenchmarkImportRebuild imports benchCopies renamed copies of the
// fixture's log into a fresh embedded server (file storage, default sync),
// then rebuilds the projection from it, reporting both rates.
func BenchmarkImportRebuild(b *testing.B) {
	f := nodeFixture(b)
	conn := serve(b, f.dir)
	ctx := context.Background()
	var exp bytes.Buffer
	if _, err := Export(ctx, ExportConfig{Conn: conn}, &exp); err != nil {
		b.Fatal(err)
	}
	big := replicate(b, exp.Bytes(), f.sessions, benchCopies)

	dst, _ := natsembed.StartForTest(b)
	dconn := Conn{NATSURL: dst.ClientURL()}
	t0 := time.Now()
	ist, err := Import(ctx, ImportConfig{Conn: dconn}, bytes.NewReader(big))
	if err != nil {
		b.Fatal(err)
	}
	imp := time.Since(t0)

	out := filepath.Join(b.TempDir(), "p.db")
	var events uint64
	var total time.Duration
	for b.Loop() {
		var w bytes.Buffer
		st, err := Rebuild(ctx, RebuildConfig{Conn: dconn, Out: out}, &w)
		if err != nil {
			b.Fatal(err)
		}
		events += st.Events
		total += st.Duration
	}
	b.ReportMetric(float64(events)/total.Seconds(), "rebuild-events/s")
	b.ReportMetric(float64(ist.Messages), "events")
	b.ReportMetric(float64(ist.Messages)/imp.Seconds(), "import-msgs/s")
}

// replicate makes n copies of an export with every session renamed
// (s0 -> s0_c7), renumbering seq.
func replicate(tb testing.TB, exp []byte, sessions []string, n int) []byte {
	lines := exportLines(tb, exp)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	seq := uint64(0)
	for c := range n {
		for _, l := range lines {
			raw, _ := json.Marshal(l)
			text := string(raw)
			for _, id := range sessions {
				nid := fmt.Sprintf("%s_c%d", id, c)
				text = strings.ReplaceAll(text, `"`+id+`"`, `"`+nid+`"`)
				text = strings.ReplaceAll(text, `mem.ev.session.`+id+`"`, `mem.ev.session.`+nid+`"`)
			}
			var nl ExportLine
			if err := json.Unmarshal([]byte(text), &nl); err != nil {
				tb.Fatal(err)
			}
			seq++
			nl.Seq = seq
			if err := enc.Encode(&nl); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return out.Bytes()
}
