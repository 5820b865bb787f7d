package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// bySubject is an export's batches grouped by subject, in order: what
// every layout keeps (sequences and partitions aside).
func bySubject(t *testing.T, export []byte) (map[string][]string, []int) {
	t.Helper()
	out := map[string][]string{}
	var parts []int
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, maxExportLine)
	for sc.Scan() {
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		p := -1
		if l.Partition != nil {
			p = *l.Partition
		}
		if len(parts) == 0 || parts[len(parts)-1] != p {
			parts = append(parts, p)
		}
		out[l.Subject] = append(out[l.Subject], string(l.Batch)+string(l.Data))
	}
	return out, parts
}

func sameGroups(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestExportImportPartitions: a node's log moved to six partitions
// exports partition by partition (lines naming their partition) holding
// every aggregate's batches in order; the export imports into six empty
// partitions and into one stream, and each exports the same aggregates
// again.
func TestExportImportPartitions(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	ctx := context.Background()
	var before bytes.Buffer
	if _, err := Export(ctx, ExportConfig{Conn: Conn{DataDir: dir}}, &before); err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, &progress); err != nil {
		t.Fatalf("migrate-log: %v\n%s", err, out.String())
	}
	var six bytes.Buffer
	if err := Run(ctx, []string{"export", "--data-dir", dir, "--partitions", "6"}, &six, &progress); err != nil {
		t.Fatalf("export --partitions 6: %v", err)
	}
	// Without --partitions the number is read from the streams; another
	// number than theirs is refused.
	var read bytes.Buffer
	if err := Run(ctx, []string{"export", "--data-dir", dir}, &read, &progress); err != nil || !bytes.Equal(read.Bytes(), six.Bytes()) {
		t.Fatalf("export without --partitions: %v (%d bytes, %d with --partitions 6)", err, read.Len(), six.Len())
	}
	if err := Run(ctx, []string{"export", "--data-dir", dir, "--partitions", "4"}, io.Discard, &progress); !errors.Is(err, ErrUsage) {
		t.Fatalf("export --partitions 4 of a log in six: %v, want ErrUsage", err)
	}
	want, _ := bySubject(t, before.Bytes())
	got, parts := bySubject(t, six.Bytes())
	if !sameGroups(want, got) {
		t.Fatalf("the export of six partitions differs from the one stream's (%d vs %d subjects)", len(got), len(want))
	}
	if !slices.Equal(parts, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("partitions in the export: %v, want 0..5 in order", parts)
	}
	if n := strings.Count(six.String(), "\n"); uint64(n) != f.lastSeq {
		t.Fatalf("%d lines, want %d", n, f.lastSeq)
	}

	for _, k := range []int{6, 1} {
		dst, _ := natsembed.StartForTest(t)
		conn := Conn{NATSURL: dst.ClientURL()}
		st, err := Import(ctx, ImportConfig{Conn: conn, Partitions: k}, bytes.NewReader(six.Bytes()))
		if err != nil {
			t.Fatalf("import into %d: %v", k, err)
		}
		if st.Messages != f.lastSeq {
			t.Fatalf("import into %d: %d messages, want %d", k, st.Messages, f.lastSeq)
		}
		var again bytes.Buffer
		if _, err := Export(ctx, ExportConfig{Conn: conn, Partitions: k}, &again); err != nil {
			t.Fatal(err)
		}
		if g, _ := bySubject(t, again.Bytes()); !sameGroups(want, g) {
			t.Fatalf("imported into %d and exported again: the aggregates differ", k)
		}
		if k == 6 {
			if _, err := Import(ctx, ImportConfig{Conn: conn, Partitions: 6}, bytes.NewReader(six.Bytes())); err == nil {
				t.Fatal("import into partitions that hold messages")
			}
		}
	}
}
