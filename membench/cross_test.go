package membench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// tinyDialogue is a three-sitting conversation written for the tests (no
// data set): the user's dog, a move and a trip, and small talk.
func tinyDialogue() *Dialogue {
	day := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 14, 30, 0, 0, time.UTC).UnixNano() }
	turn := func(id string, sp int, text string) DialogueTurn {
		return DialogueTurn{ID: id, Speaker: sp, Text: text}
	}
	return &Dialogue{
		Name:     "tiny",
		Speakers: [2]string{"Noor", "Pavel"},
		Sittings: []DialogueSitting{
			{UnixNano: day(2024, time.March, 3), Turns: []DialogueTurn{
				turn("D1:1", 0, "Hi Pavel! Big news: I adopted a beagle puppy yesterday, his name is Biscuit."),
				turn("D1:2", 1, "Congratulations Noor! Beagles are lovely. How is he settling in?"),
				turn("D1:3", 0, "He chewed my left slipper already, but he sleeps a lot."),
				turn("D1:4", 1, "Sounds like a puppy. Take care!"),
			}},
			{UnixNano: day(2024, time.April, 14), Turns: []DialogueTurn{
				turn("D2:1", 0, "We moved to Porto last weekend, the flat is near the river."),
				turn("D2:2", 1, "Porto is beautiful. Do you like the new place?"),
				turn("D2:3", 0, "I love it, although the stairs are steep for Biscuit."),
			}},
			{UnixNano: day(2024, time.June, 2), Turns: []DialogueTurn{
				turn("D3:1", 1, "How was the trip to the mountains?"),
				turn("D3:2", 0, "We hiked in the Gerês park for three days and camped by a lake."),
				turn("D3:3", 1, "That sounds wonderful."),
			}},
		},
		Questions: []DialogueQuestion{
			{Text: "What is the name of Noor's dog?", Answer: "Biscuit", Category: "single-hop", Evidence: []string{"D1:1"}},
			{Text: "When did Noor move to Porto?", Answer: "early April 2024", Category: "temporal", Evidence: []string{"D2:1"}},
			{Text: "Where did Noor camp during the hike?", Answer: "by a lake in Gerês park", Category: "single-hop", Evidence: []string{"D3:2"}},
			{Text: "Which city does the dog that chewed a slipper live in?", Answer: "Porto", Category: "multi-hop", Evidence: []string{"D1:3", "D2:1"}},
		},
	}
}

func TestRunCrossTiny(t *testing.T) {
	d := tinyDialogue()
	cfg := DefaultCrossConfig()
	cfg.Budgets = []int{300, 2048}
	rep, err := RunCross(context.Background(), cfg, []*Dialogue{d}, "tiny", []string{"single-hop", "multi-hop", "temporal"})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + md.String())
	if rep.Sittings != 3 || rep.Turns != 10 || rep.Questions != 4 || len(rep.Rows) != 2*len(crossRows) {
		t.Fatalf("sittings %d, turns %d, questions %d, rows %d", rep.Sittings, rep.Turns, rep.Questions, len(rep.Rows))
	}
	evidence := 0
	for _, q := range d.Questions {
		evidence += len(q.Evidence)
	}
	for i, w := range rep.Where {
		if w.Total() != evidence {
			t.Fatalf("where at %d: %d evidence turns counted, want %d", w.Budget, w.Total(), evidence)
		}
		if d := rep.Differ[i]; d.N != rep.Questions || d.Hit != 0 {
			t.Fatalf("at %d: %d of %d repeated contexts differ", cfg.Budgets[i], d.Hit, d.N)
		}
	}
	for _, r := range rep.Rows {
		if r.All.Evidence.N != 4 {
			t.Fatalf("%s at %d: %d questions scored", r.Memory, r.Budget, r.All.Evidence.N)
		}
		if r.Memory != rowXFull && r.MeanUsed > float64(r.Budget) {
			t.Fatalf("%s at %d: mean %f tokens", r.Memory, r.Budget, r.MeanUsed)
		}
		switch {
		case r.Memory == rowXFull && (r.All.Evidence.Hit != 4 || r.All.Dated.Hit != r.All.Dated.N || r.All.Dated.N != 1):
			t.Fatalf("full transcript: evidence %v, dated %v", r.All.Evidence, r.All.Dated)
		case r.Memory == rowXRAG && r.Budget == 2048 && r.All.Evidence.Hit != 4:
			// The whole history fits in 2048 tokens: every turn matching a
			// word of the question is in.
			t.Fatalf("RAG at 2048: evidence %v", r.All.Evidence)
		}
	}
}

func TestRunDialogueQuestionsTiny(t *testing.T) {
	cfg := DefaultQuestionConfig()
	cfg.Budgets = []int{300, 4096}
	rep, err := RunDialogueQuestions(context.Background(), cfg, []*Dialogue{tinyDialogue()}, "tiny", []string{"single-hop", "multi-hop", "temporal"})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Continuity") {
		t.Fatalf("a continuity table without continuity questions:\n%s", md.String())
	}
	for _, r := range rep.Rows {
		if r.All.Evidence.N != 4 {
			t.Fatalf("%s at %d: %d questions scored", r.Memory, r.Budget, r.All.Evidence.N)
		}
		if r.Budget == 4096 && r.All.Evidence.Hit != 4 {
			t.Fatalf("%s at 4096 (the whole conversation fits): evidence %v", r.Memory, r.All.Evidence)
		}
	}
}

// tinyLoCoMo is a conversation in the LoCoMo format, written for the test.
const tinyLoCoMo = `{
  "speaker_a": "Noor", "speaker_b": "Pavel",
  "session_1_date_time": "2:30 pm on 3 March, 2024",
  "session_1": [
    {"speaker": "Noor", "dia_id": "D1:1", "text": "I adopted a beagle."},
    {"speaker": "Pavel", "dia_id": "D1:2", "text": "Look at this.", "blip_caption": "a photo of a dog"}
  ],
  "session_2_date_time": "10:05 am on 14 April, 2024",
  "session_2": [{"speaker": "Pavel", "dia_id": "D2:1", "text": "Moved yet?"}, {"speaker": "Noor", "dia_id": "D2:2", "text": "Yes, to Porto."}],
  "session_3_date_time": "9:00 am on 1 May, 2024",
  "events_session_1": {"Noor": ["Noor adopts a beagle."], "Pavel": [], "date": "3 March, 2024"},
  "qa": [
    {"question": "What did Noor adopt?", "answer": "a beagle", "evidence": ["D1:1"], "category": 4},
    {"question": "How many dogs?", "answer": 1, "evidence": ["D1:1; D1:2"], "category": 1},
    {"question": "What did Pavel adopt?", "evidence": ["D1:1"], "category": 5, "adversarial_answer": "a cat"},
    {"question": "Where is D9?", "answer": "nowhere", "evidence": ["D9:1"], "category": 4}
  ]
}`

func TestParseLoCoMo(t *testing.T) {
	d, dropped, err := ParseLoCoMo("tiny", []byte(tinyLoCoMo))
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 1 || len(d.Sittings) != 2 || len(d.Questions) != 2 || d.Turns() != 4 {
		t.Fatalf("dropped %d, sittings %d, questions %d, turns %d", dropped, len(d.Sittings), len(d.Questions), d.Turns())
	}
	if got := time.Unix(0, d.Sittings[1].UnixNano).UTC(); !got.Equal(time.Date(2024, time.April, 14, 10, 5, 0, 0, time.UTC)) {
		t.Fatalf("sitting 2 at %v", got)
	}
	if got := d.Sittings[0].Turns[1]; got.Speaker != 1 || got.Text != "Look at this. [shares a photo of a dog]" {
		t.Fatalf("turn D1:2: %+v", got)
	}
	if q := d.Questions[1]; q.Answer != "1" || q.Category != "multi-hop" || len(q.Evidence) != 2 {
		t.Fatalf("question 2: %+v", q)
	}
	if got := d.Sittings[0].Events[0]; len(got) != 1 {
		t.Fatalf("events: %q", got)
	}
	if _, _, err := ParseLoCoMo("bad", []byte(`{"speaker_a": "A"}`)); err == nil {
		t.Fatal("a file without speaker_b parsed")
	}
}

func TestDateNearAndAnswerWords(t *testing.T) {
	at := time.Date(2023, time.May, 8, 13, 56, 0, 0, time.UTC).UnixNano()
	forms := dateForms(at)
	for _, c := range []struct {
		ctx  string
		want bool
	}{
		{"Recalled m3 (user, turn 2, 2023-05-08): Noor: I adopted a beagle.\n", true},
		{"[8 May 2023] Noor: I adopted a beagle.", true},
		{"Noor: I adopted a beagle. (May 8, 2023)\nnext", true},
		{"2023-05-08 " + strings.Repeat("x", dateWindow) + "Noor: I adopted a beagle.", false},
		{"Noor: I adopted a beagle.\n2023-05-08", false},
	} {
		if got := dateNear(c.ctx, "I adopted a beagle.", forms); got != c.want {
			t.Errorf("dateNear(%q) = %v", c.ctx, got)
		}
	}
	if got := answerWords("The beagle, and a Beagle's bone!"); strings.Join(got, " ") != "beagle bone" {
		t.Fatalf("answerWords: %q", got)
	}
	if hasWords(wordSet("a bone for the beagle"), nil) || !hasWords(wordSet("a bone for the beagle"), []string{"beagle", "bone"}) {
		t.Fatal("hasWords")
	}
}

func TestDateShown(t *testing.T) {
	day := time.Date(2023, 5, 8, 13, 0, 0, 0, time.UTC).UnixNano()
	for _, c := range []struct {
		ctx  string
		want bool
	}{
		{"[2023-05-08] Noor: hi\nNoor: I adopted a beagle.", true},
		{"[2023-05-07] Noor: hi\nNoor: I adopted a beagle.", false},
		{"[2023-05-08] Noor: hi\n[2023-05-09] Sam: later\nNoor: I adopted a beagle.", false},
		{"Noor: I adopted a beagle.", false},
		{"From an earlier session, 2023-05-08 (user): Noor: I adopted a beagle.", true},
	} {
		if got := dateShown(c.ctx, "Noor: I adopted a beagle.", day); got != c.want {
			t.Errorf("dateShown(%q) = %v, want %v", c.ctx, got, c.want)
		}
	}
}
