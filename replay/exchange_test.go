package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/projections"
)

// TestExportImport: export a node's log, import it into an empty server,
// rebuild both: identical projection digests; the re-export holds the same
// subjects and batches in the same order.
func TestExportImport(t *testing.T) {
	f := nodeFixture(t)
	src := serve(t, f.dir)
	ctx := context.Background()

	var exp bytes.Buffer
	st, err := Export(ctx, ExportConfig{Conn: src}, &exp)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != uint64(f.batches) || st.Raw != 0 {
		t.Fatalf("exported %d messages (%d raw), want %d", st.Messages, st.Raw, f.batches)
	}
	t.Logf("export: %d messages, %d bytes of batches, %d bytes of JSON lines", st.Messages, st.Bytes, exp.Len())

	dst, _ := natsembed.StartForTest(t)
	dconn := Conn{NATSURL: dst.ClientURL()}
	ist, err := Import(ctx, ImportConfig{Conn: dconn}, bytes.NewReader(exp.Bytes()))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if ist.Messages != st.Messages || ist.Subjects != len(f.sessions)+f.scopes {
		t.Fatalf("imported %+v", ist)
	}

	dir := t.TempDir()
	a, b := filepath.Join(dir, "orig.db"), filepath.Join(dir, "imported.db")
	var out bytes.Buffer
	if _, err := Rebuild(ctx, RebuildConfig{Conn: src, Out: a}, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(ctx, RebuildConfig{Conn: dconn, Out: b}, &out); err != nil {
		t.Fatal(err)
	}
	da, _, err := digest(a)
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := digest(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := projections.VerifyDigests(da, db); len(diff) > 0 {
		t.Fatalf("digests differ after export/import: %v", diff)
	}

	var again bytes.Buffer
	if _, err := Export(ctx, ExportConfig{Conn: dconn}, &again); err != nil {
		t.Fatal(err)
	}
	orig, reimp := exportLines(t, exp.Bytes()), exportLines(t, again.Bytes())
	if len(orig) != len(reimp) {
		t.Fatalf("%d lines, re-export %d", len(orig), len(reimp))
	}
	for i := range orig {
		if orig[i].Subject != reimp[i].Subject || !bytes.Equal(orig[i].Batch, reimp[i].Batch) {
			t.Fatalf("line %d differs:\n%s %s\n%s %s", i, orig[i].Subject, orig[i].Batch, reimp[i].Subject, reimp[i].Batch)
		}
	}

	// A second import into the now non-empty stream is refused.
	_, err = Import(ctx, ImportConfig{Conn: dconn}, bytes.NewReader(exp.Bytes()))
	if !errors.Is(err, ErrStreamNotEmpty) || !strings.Contains(err.Error(), "empty stream") {
		t.Fatalf("import into a non-empty stream: %v", err)
	}
}

func exportLines(t testing.TB, data []byte) []ExportLine {
	t.Helper()
	var out []ExportLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, l)
	}
	return out
}

// TestExportImportCommandLine runs both through Run with files.
func TestExportImportCommandLine(t *testing.T) {
	f := nodeFixture(t)
	file := filepath.Join(t.TempDir(), "log.jsonl")
	var out, errOut bytes.Buffer
	ctx := context.Background()
	if err := Run(ctx, []string{"export", "--data-dir", f.dir, "--out", file}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	dst, _ := natsembed.StartForTest(t)
	if err := Run(ctx, []string{"import", "--nats-url", dst.ClientURL(), "--in", file}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "imported ") {
		t.Errorf("output %q", out.String())
	}
	err := Run(ctx, []string{"import", "--nats-url", dst.ClientURL(), "--in", file}, &out, &errOut)
	if !errors.Is(err, ErrStreamNotEmpty) || ExitCode(err) != 1 {
		t.Fatalf("second import: %v", err)
	}
}

func TestImportBadInput(t *testing.T) {
	dst, _ := natsembed.StartForTest(t)
	conn := Conn{NATSURL: dst.ClientURL()}
	ctx := context.Background()
	for name, in := range map[string]string{
		"not json":     "{nope\n",
		"out of order": `{"seq":5,"subject":"mem.ev.session.a","data":"CgF4"}` + "\n" + `{"seq":4,"subject":"mem.ev.session.a","data":"CgF4"}` + "\n",
		"bad subject":  `{"seq":1,"subject":"mem.ev.session.a.b","data":"CgF4"}` + "\n",
		"no batch":     `{"seq":1,"subject":"mem.ev.session.a"}` + "\n",
	} {
		if _, err := Import(ctx, ImportConfig{Conn: conn}, strings.NewReader(in)); !errors.Is(err, ErrBadExport) {
			t.Errorf("%s: %v, want ErrBadExport", name, err)
		}
	}
}
