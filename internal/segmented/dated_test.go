package segmented

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/convgen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// TestDatedHistoryCarriesItsDays: imported history (said_unix_nano) shows
// the turn that starts each day with its day, wherever the context shows it
// verbatim, and counts the mark in its tokens (so the budget holds); so
// does the first turn after a cut (compression); the other turns of that
// day are shown as written, and a summary of dated
// turns names the days it covers; a turn without said_unix_nano is shown
// as it was written.
func TestDatedHistoryCarriesItsDays(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 900, ReservedOutputTokens: 100})
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	for i := range 60 {
		at := day.Add(time.Duration(i/10) * 24 * time.Hour)
		u := user(fmt.Sprintf("On this day I planted %d tulips in the east bed.", i))
		u.SaidUnixNano = at.UnixNano()
		a := assistant(fmt.Sprintf("Noted: %d tulips.", i))
		a.SaidUnixNano = at.Add(time.Minute).UnixNano()
		appendOK(t, s, u, a)
		checkInvariants(t, s)
	}
	appendOK(t, s, user("And today?"))
	cx := s.Context()
	var sawL1, sawSummary bool
	prevVerbatim := false
	for _, m := range cx.GetMessages() {
		wasVerbatim := prevVerbatim
		prevVerbatim = m.GetLayer() == LayerL1 && m.GetRole() != memoryv1.Role_ROLE_SYSTEM
		switch {
		case m.GetLayer() == LayerL1 && m.GetRole() != memoryv1.Role_ROLE_SYSTEM:
			if m.GetContent() == "And today?" {
				continue
			}
			sawL1 = true
			body, marked := strings.CutPrefix(m.GetContent(), DayMark(day.UnixNano())[:9])
			if marked {
				body = body[len("08] "):]
			}
			var n int
			_, err := fmt.Sscanf(body, "On this day I planted %d", &n)
			// A day's first turn is marked; so may be the first turn
			// after a cut (the head of L1, the turn after a summary),
			// when what precedes it does not show its day.
			if starts := err == nil && n%10 == 0; starts && !marked || marked && !starts && wasVerbatim {
				t.Errorf("turn %q: day mark %v (a day's first turn %v, after a cut %v)", m.GetContent(), marked, starts, !wasVerbatim)
			}
		case strings.Contains(m.GetContent(), "Summary of message"):
			sawSummary = true
			if !strings.Contains(m.GetContent(), "(said 2023-05-") {
				t.Errorf("summary of dated turns without their days: %q", m.GetContent())
			}
		}
	}
	checkEveryTurnDated(t, s)
	if !sawL1 || !sawSummary {
		t.Fatalf("setup: the context shows no dated L1 turn (%v) or no summary (%v)", sawL1, sawSummary)
	}
	if cx.GetUsage().GetUsed() > cx.GetUsage().GetBudget() {
		t.Fatalf("used %d > budget %d", cx.GetUsage().GetUsed(), cx.GetUsage().GetBudget())
	}
}

// dayRE finds the days the context prints: a message's day mark, or the
// days a summary names.
var dayRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)

// checkEveryTurnDated fails when a verbatim message of the context (in
// render order) is neither marked with its day nor preceded by text whose
// last printed day is its day; and when the usage is not the sum of the
// rendered messages' tokens, or exceeds the budget. It returns the
// verbatim dated messages it checked.
func checkEveryTurnDated(t *testing.T, s *State) int {
	t.Helper()
	cx := s.Context()
	said := map[string]bool{} // the ids of messages said at a given time
	for _, e := range s.snap.GetL1() {
		if m := e.GetMessage(); m.GetSaidUnixNano() != 0 {
			said[m.GetId()] = true
		}
	}
	for _, m := range s.Promoted() {
		said[m.GetId()] = m.GetSaidUnixNano() != 0
	}
	last, n := "", 0
	var sum uint32
	for _, m := range cx.GetMessages() {
		sum += m.GetTokens()
		verbatim := (m.GetLayer() == LayerL1 || m.GetLayer() == LayerPromoted) && m.GetRole() != memoryv1.Role_ROLE_SYSTEM
		if verbatim && said[m.GetId()] {
			n++
			day := time.Unix(0, m.GetSaidUnixNano()).UTC().Format(time.DateOnly)
			if !strings.HasPrefix(m.GetContent(), "["+day+"] ") && last != day {
				t.Errorf("%s message %s said %s shows no day (the last day printed before it: %q): %q",
					m.GetLayer(), m.GetId(), day, last, m.GetContent())
			}
		}
		if ds := dayRE.FindAllString(m.GetContent(), -1); len(ds) > 0 {
			last = ds[len(ds)-1]
		}
	}
	if u := cx.GetUsage(); u.GetUsed() != sum || u.GetUsed() > u.GetBudget() {
		t.Errorf("usage %d, rendered messages' tokens %d, budget %d", u.GetUsed(), sum, u.GetBudget())
	}
	return n
}

// TestDatedHeadAfterCompression: when compression takes the head of L1
// (to L2, or summarized in place), the first verbatim turn left is
// usually not its day's first; the context shows its day all the same,
// and counts the mark in the budget.
func TestDatedHeadAfterCompression(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 700, ReservedOutputTokens: 100})
	day := time.Date(2023, 5, 8, 9, 0, 0, 0, time.UTC)
	compressions := uint64(0)
	var said []*memoryv1.Message
	for i := range 90 {
		at := day.Add(time.Duration(i/15)*24*time.Hour + time.Duration(i%15)*time.Minute)
		u := user(fmt.Sprintf("Turn %d: I moved the %d roses to the west bed.", i, i))
		u.SaidUnixNano = at.UnixNano()
		for _, ev := range appendOK(t, s, u) {
			if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
				said = append(said, ma.GetMessages()...)
			}
		}
		checkInvariants(t, s)
		if c := s.Info().GetCompressions(); c != compressions {
			compressions = c
			checkEveryTurnDated(t, s)
		}
	}
	if compressions == 0 {
		t.Fatal("setup: no compression")
	}
	if n := checkEveryTurnDated(t, s); n == 0 {
		t.Fatal("setup: no dated verbatim turn in the context")
	}
	// A promoted copy of an old turn (not its day's first) shows its day
	// too, and so does the L1 turn after it.
	evs, err := s.DecidePromote([]*memoryv1.Message{said[20]}, testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "promote", evs)
	checkInvariants(t, s)
	if n := checkEveryTurnDated(t, s); n == 0 {
		t.Fatal("setup: no dated verbatim turn in the context")
	}
	if len(s.Promoted()) != 1 {
		t.Fatalf("setup: %d promoted messages, want 1", len(s.Promoted()))
	}
}

// TestDayMarkTokensBound: DayMarkTokens bounds what a day mark adds to a
// message's tokens, whatever the day and however the content starts.
func TestDayMarkTokensBound(t *testing.T) {
	tok := testEnv(t).Tokenizer
	starts := []string{"", "hi", " hi", "\nhi", "On this day", "[x]", "]]", "  \n\n", "123", "-05", "'s",
		"😀 ok", "\t\tx", "! wow", "A", "2023", ". end", "``` code", "—dash", "(paren", "] ", "\r\n", "日本語"}
	for d := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2200; d = d.Add(5 * 24 * time.Hour) {
		for _, c := range starts {
			if k := tok.Count(DayMark(d.UnixNano())+c) - tok.Count(c); k > DayMarkTokens || k < 0 {
				t.Fatalf("day mark of %s before %q adds %d tokens, bound %d", d.Format(time.DateOnly), c, k, DayMarkTokens)
			}
		}
	}
}

// TestDatedUnderThePlan: with the context assembler on (a recalled
// section before L1, older L1 entries hidden or chosen), every verbatim
// turn the context shows still shows its day, and the usage is the sum of
// the rendered messages' tokens, within the budget.
func TestDatedUnderThePlan(t *testing.T) {
	conv, err := convgen.Generate(convgen.Config{Seed: 5, Sittings: 4, MessagesPerSitting: 120, CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []uint32{3000, 6000} {
		s := mustCreate(t, &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: budget, ReservedOutputTokens: 500, UserId: "u1",
			Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 30, MemoryPct: 20}})
		checked, hidden := 0, 0
		talkUnderThePlan(t, s, budget, func([]proto.Message) {
			if a := s.Assembled(); a.GetPlanned() && (len(a.GetL1Seqs()) > 0 || a.GetTailSeq() > s.snap.GetL1()[0].GetMessage().GetSeq()) {
				hidden++
			}
			checked += checkEveryTurnDated(t, s)
			if t.Failed() {
				t.Fatalf("budget %d, version %d", budget, s.Version())
			}
		})
		if checked == 0 || hidden == 0 {
			t.Fatalf("budget %d: setup: %d dated turns checked, %d plans hiding L1 entries", budget, checked, hidden)
		}
	}
}

// talkUnderThePlan appends a dated generated conversation to s with the
// assembler's candidates offered at each user message (another user's
// conversation and s's own stored turns), calling each after every
// applied append with its events.
func talkUnderThePlan(t *testing.T, s *State, budget uint32, each func([]proto.Message)) {
	t.Helper()
	conv, err := convgen.Generate(convgen.Config{Seed: 5, Sittings: 4, MessagesPerSitting: 120, CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	other, err := convgen.Generate(convgen.Config{Seed: 6, Sittings: 2, MessagesPerSitting: 100, CheckpointsPerSitting: 1, StartUnixNano: 1_700_000_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	rng := rand.New(rand.NewPCG(uint64(budget), 3))
	var stored []*memoryv1.Message
	for i, a := range conv.Appends {
		req := appendRequest(conv, a)
		var c *Candidates
		if req.Messages[0].Role == memoryv1.Role_ROLE_USER {
			c = digestCandidates(rng, stored, other)
			offer(s, c)
		}
		evs, err := s.DecideAppendWith(req, c, env)
		if err != nil {
			continue
		}
		if err := s.Apply(Meta{CommandID: fmt.Sprint(i), Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
				stored = append(stored, ma.Messages...)
			}
		}
		checkInvariants(t, s)
		each(evs)
	}
}

// TestOldSessionsKeepTheirDayMarks: a session created before
// SessionCreated.day_marks (0) keeps the rule it was created under: its
// context shows a day only where a message stores it, live and replayed
// from its events, while the same conversation in a session created now
// shows more. So a log written before the rule replays to the contexts
// it served.
func TestOldSessionsKeepTheirDayMarks(t *testing.T) {
	req := &memoryv1.CreateSessionRequest{MaxContextTokens: 3000, ReservedOutputTokens: 500, UserId: "u1",
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 30, MemoryPct: 20}}
	created, err := New().DecideCreate(req, "sess-1", testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := created[0].(*memoryv1.SessionCreated).GetDayMarks(); got != DayMarksAfterOtherDays {
		t.Fatalf("a session created now has day_marks %d, want %d", got, DayMarksAfterOtherDays)
	}
	old := proto.CloneOf(created[0].(*memoryv1.SessionCreated))
	old.DayMarks = DayMarksAtDayStart
	s := New()
	commit(t, s, "create", []proto.Message{old})
	replayed := New()
	if err := replayed.Apply(Meta{CommandID: "create", Version: 1, Seq: 7, TimeUnixNano: 1000}, []proto.Message{old}); err != nil {
		t.Fatal(err)
	}
	talkUnderThePlan(t, s, 3000, func(evs []proto.Message) {
		if n := unstoredMarks(s); n != 0 {
			t.Fatalf("the old session's context shows %d day marks its messages do not store", n)
		}
		if err := replayed.Apply(Meta{CommandID: fmt.Sprint(replayed.Version()), Version: replayed.Version() + 1, Seq: replayed.LastSeq() + 1}, roundTrip(t, evs)); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(replayed.Context(), s.Context()) {
			t.Fatal("the old session replayed shows another context than it served")
		}
	})

	now, shown := mustCreate(t, req), 0
	talkUnderThePlan(t, now, 3000, func([]proto.Message) { shown += unstoredMarks(now) })
	if shown == 0 {
		t.Fatal("setup: the session created now shows no day mark beyond the stored ones, so the rules cannot differ")
	}
}

// unstoredMarks counts the L1 messages s's context shows with a day mark
// they do not store.
func unstoredMarks(s *State) (n int) {
	stored := map[string]bool{}
	for _, e := range s.snap.GetL1() {
		if m := e.GetMessage(); m != nil {
			stored[m.GetId()] = m.GetDated()
		}
	}
	for _, m := range s.Context().GetMessages() {
		c := m.GetContent()
		if m.GetLayer() == LayerL1 && m.GetRole() != memoryv1.Role_ROLE_SYSTEM && !stored[m.GetId()] && dayRE.MatchString(c[:min(len(c), 12)]) {
			n++
		}
	}
	return n
}
