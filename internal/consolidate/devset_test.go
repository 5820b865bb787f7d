package consolidate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/swap"
)

// TestDevSet measures the extractor on a folder of two-speaker,
// multi-session conversations in the LoCoMo layout (speaker_a,
// speaker_b, session_N, session_N_date_time, events_session_N) named by
// AGENTMEM_DEVSET; it is skipped without one. Each speaker in turn is the
// user; each sitting is consolidated at its end with the facts known so
// far, like the node does. It prints every fact with its sentence (for
// reading: precision is judged by a person) to AGENTMEM_DEVSET_REPORT
// (default: the test log) and reports how many of the people's own event
// annotations of each sitting an entry of that sitting matches (a rough
// recall signal: an annotation is matched when it shares at least two
// content terms, and at least 40 % of its own, with the entry).
//
// No text of the conversations is kept in the repository; the figures
// are printed, not asserted.
func TestDevSet(t *testing.T) {
	dir := os.Getenv("AGENTMEM_DEVSET")
	if dir == "" {
		t.Skip("AGENTMEM_DEVSET names no folder of conversations")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations in %s: %v", dir, err)
	}
	sort.Strings(files)
	var out strings.Builder
	var tot devTotals
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		var a, bname string
		_ = json.Unmarshal(raw["speaker_a"], &a)
		_ = json.Unmarshal(raw["speaker_b"], &bname)
		for _, speaker := range []string{a, bname} {
			devConversation(t, filepath.Base(file), speaker, raw, &out, &tot)
		}
	}
	fmt.Fprintf(&out, "\n%d turns read, %d sittings; %d facts (%d retractions), %d digests\n", tot.turns, tot.sittings, tot.facts, tot.retracts, tot.digests)
	fmt.Fprintf(&out, "annotations %d: matched by a fact's value %d (%.1f %%), by a fact entry %d (%.1f %%), by the digest %d (%.1f %%), by either %d (%.1f %%)\n",
		tot.ann, tot.byValue, pct(tot.byValue, tot.ann), tot.byEntry, pct(tot.byEntry, tot.ann), tot.byDigest, pct(tot.byDigest, tot.ann), tot.byAny, pct(tot.byAny, tot.ann))
	if p := os.Getenv("AGENTMEM_DEVSET_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("report written to %s", p)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		t.Log(strings.Join(lines[max(0, len(lines)-2):], "\n"))
		return
	}
	t.Log(out.String())
}

type devTotals struct {
	turns, sittings, facts, retracts, digests int
	ann, byValue, byEntry, byDigest, byAny    int
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

type devTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
}

func devConversation(t *testing.T, file, speaker string, raw map[string]json.RawMessage, out *strings.Builder, tot *devTotals) {
	known := map[string]Fact{}
	var order []string
	first := strings.ToLower(strings.Fields(speaker)[0])
	for n := 1; ; n++ {
		js, ok := raw[fmt.Sprintf("session_%d", n)]
		if !ok {
			break
		}
		var turns []devTurn
		if err := json.Unmarshal(js, &turns); err != nil {
			t.Fatal(err)
		}
		var when string
		_ = json.Unmarshal(raw[fmt.Sprintf("session_%d_date_time", n)], &when)
		said := int64(0)
		if tm, err := time.Parse("3:04 pm on 2 January, 2006", when); err == nil {
			said = tm.UnixNano()
		}
		var msgs []Message
		for i, tr := range turns {
			msgs = append(msgs, Message{ID: tr.DiaID, Seq: uint64(i + 1), User: tr.Speaker == speaker, Text: tr.Text, Said: said})
			if tr.Speaker == speaker {
				tot.turns++
			}
		}
		tot.sittings++
		var ks []Fact
		for _, k := range order {
			ks = append(ks, known[k])
		}
		fs := Extract(msgs, ks)
		dg, hasDigest := SessionDigest(msgs, fs)
		if hasDigest {
			tot.digests++
		}
		fmt.Fprintf(out, "\n== %s %s session %d (%s)\n", file, speaker, n, when)
		for _, f := range fs {
			tot.facts++
			if f.Retract {
				tot.retracts++
			}
			fmt.Fprintf(out, "  %s = %q [%s%s%s]\n      %s\n", f.Key(), f.Value, f.Rule, ifs(f.Date != "", " "+f.Date), ifs(f.Replaces != "", " replaces "+f.Replaces), f.Text())
			if f.Retract {
				delete(known, f.Key())
				continue
			}
			if _, ok := known[f.Key()]; !ok {
				order = append(order, f.Key())
			}
			known[f.Key()] = f
		}
		if hasDigest {
			fmt.Fprintf(out, "  digest: %s\n", dg.Text)
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(raw[fmt.Sprintf("events_session_%d", n)], &ev); err != nil {
			continue
		}
		var anns []string
		_ = json.Unmarshal(ev[speaker], &anns)
		for _, a := range anns {
			tot.ann++
			at := devTerms(a, first)
			var v, e, d bool
			for _, f := range fs {
				v = v || devMatch(at, devTerms(f.Text()[:strings.Index(f.Text()+": \"", ": \"")], first))
				e = e || devMatch(at, devTerms(f.Text(), first))
			}
			d = hasDigest && devMatch(at, devTerms(dg.Text, first))
			mark := func(ok bool, n *int) string {
				if ok {
					*n++
					return "+"
				}
				return "-"
			}
			m := mark(v, &tot.byValue) + mark(e, &tot.byEntry) + mark(d, &tot.byDigest) + mark(e || d, &tot.byAny)
			fmt.Fprintf(out, "  annotation [value entry digest any %s]: %s\n", m, a)
		}
	}
}

func ifs(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// devTerms are the stemmed content terms of s, the speaker's name aside.
func devTerms(s, name string) map[string]bool {
	out := map[string]bool{}
	for _, w := range swap.Analyze(s) {
		if !swap.IsStopTerm(w) && w != name && len(w) > 1 {
			out[w] = true
		}
	}
	return out
}

func devMatch(ann, entry map[string]bool) bool {
	shared := 0
	for w := range ann {
		if entry[w] {
			shared++
		}
	}
	return shared >= 2 && float64(shared) >= 0.4*float64(len(ann))
}
