package consolidate

import (
	"fmt"
	"strings"
	"testing"
)

func user(id string, seq uint64, text string) Message {
	return Message{ID: id, Seq: seq, User: true, Text: text}
}
func bot(id string, seq uint64, text string) Message { return Message{ID: id, Seq: seq, Text: text} }

func show(fs []Fact) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s=%q (%s, %.2f, corr=%v replaces=%q, %v)\n", f.Key(), f.Value, f.Rule, f.Confidence, f.Correction, f.Replaces, f.MessageIDs)
	}
	return b.String()
}

// TestExtractStatements: one first-person statement each, the fact it
// states (key and value).
func TestExtractStatements(t *testing.T) {
	cases := []struct{ text, key, value string }{
		{"I moved to Porto last month.", "fact/user/home_city", "Porto"},
		{"My daughter's name is Ana.", "fact/daughter/name", "Ana"},
		{"I'm allergic to peanuts.", "fact/user/allergy/peanuts", "peanuts"},
		{"I prefer tea.", "fact/user/prefers/tea", "tea"},
		{"We decided to ship on Friday.", "fact/we/decision/ship", "ship on Friday"},
		{"Hi! My name is Ruth Okafor and I need help with a refund.", "fact/user/name", "Ruth Okafor"},
		{"I live in Rio de Janeiro with my partner.", "fact/user/home_city", "Rio de Janeiro"},
		{"I work at Halcyon Labs as a designer.", "fact/user/employer", "Halcyon Labs"},
		{"My favorite color is dark green.", "fact/user/favorite_color", "dark green"},
		{"I have two kids.", "fact/user/kids_count", "two"},
		{"I have a dog named Biscuit.", "fact/pet/dog/name", "Biscuit"},
		{"I hurt my knee playing football yesterday.", "fact/user/injury/knee", "knee"},
		{"Oh, and I'm vegetarian, so no meat please.", "fact/user/diet", "vegetarian"},
		{"I really don't like cilantro.", "fact/user/dislikes/cilantro", "cilantro"},
		{"From now on, please answer in Spanish.", "instruction/user/answer_spanish", "From now on, please answer in Spanish."},
		{"My sister Ana lives in Berlin.", "fact/sister/home_city", "Berlin"},
		{"I tried restarting the router, but it didn't help.", "episode/user/tried/restarting_the_router", "I tried restarting the router, but it didn't help."},
	}
	for _, c := range cases {
		got := Extract([]Message{user("m1", 1, c.text)}, nil)
		found := false
		for _, f := range got {
			if f.Key() == c.key && f.Value == c.value {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %s=%q, got\n%s", c.text, c.key, c.value, show(got))
		}
	}
}

// TestExtractNothing: questions, hypotheticals, negations, other people's
// words and small talk state no fact of the user.
func TestExtractNothing(t *testing.T) {
	for _, text := range []string{
		"Do you think I should move to Porto?",
		"If I moved to Lisbon, would that change my taxes?",
		"I might move to Berlin next year.",
		"I don't live in Madrid anymore... wait, never mind.",
		"I'd love a cup of tea.",
		"I love it!",
		"Thanks, that sounds great.",
		"How's the weather in Paris?",
		"I think about moving to Rome sometimes, maybe.",
		"My back is killing me today.",
		"I'm not allergic to anything.",
		"Can you call me tomorrow?",
		"I wonder whether I prefer tea.",
	} {
		if got := Extract([]Message{user("m1", 1, text)}, nil); len(got) != 0 {
			t.Errorf("%q: want no fact, got\n%s", text, show(got))
		}
	}
}

// TestExtractAssistantIgnored: the assistant's own statements are not the
// user's facts.
func TestExtractAssistantIgnored(t *testing.T) {
	got := Extract([]Message{bot("a1", 1, "I live in the cloud and I'm allergic to bugs.")}, nil)
	if len(got) != 0 {
		t.Fatalf("assistant statements extracted:\n%s", show(got))
	}
}

// TestExtractEllipticalCorrection: "actually, make it Monday" corrects the
// decision before it.
func TestExtractEllipticalCorrection(t *testing.T) {
	got := Extract([]Message{
		user("m1", 1, "We decided to ship on Friday."),
		bot("m2", 2, "Great, Friday it is."),
		user("m3", 3, "Actually, make it Monday."),
	}, nil)
	if len(got) != 2 {
		t.Fatalf("want the decision and its correction, got\n%s", show(got))
	}
	c := got[1]
	if c.Key() != got[0].Key() || c.Value != "ship on Monday" || !c.Correction || c.Replaces != "ship on Friday" || c.MessageIDs[0] != "m3" {
		t.Fatalf("correction = %s", show(got[1:]))
	}
}

// TestExtractCorrectionOfKnown: a later session names a known value as
// replaced: the new value is a correction of the same key.
func TestExtractCorrectionOfKnown(t *testing.T) {
	known := []Fact{{Subject: "activity/pottery_class", Attribute: "teacher", Value: "Mara", Type: Semantic}}
	got := Extract([]Message{user("m9", 9, "Small update on my pottery class: Mara moved away, so now Jonas teaches us.")}, known)
	if len(got) != 1 || got[0].Key() != "fact/activity/pottery_class/teacher" || got[0].Value != "Jonas" || got[0].Replaces != "Mara" {
		t.Fatalf("got\n%s", show(got))
	}
	known = []Fact{{Subject: "user", Attribute: "job_title", Value: "grant writer", Type: Semantic}}
	got = Extract([]Message{user("m9", 9, "HR sent the contract and the title is QA engineer, not grant writer.")}, known)
	if len(got) != 1 || got[0].Key() != "fact/user/job_title" || got[0].Value != "QA engineer" {
		t.Fatalf("got\n%s", show(got))
	}
}

// TestExtractRestatedMerges: the same value stated twice is one fact with
// both sources; a new value is a second fact for the key.
func TestExtractRestatedMerges(t *testing.T) {
	got := Extract([]Message{
		user("m1", 1, "I live in Porto."),
		user("m2", 2, "Like I said, I live in Porto."),
		user("m3", 3, "Actually I moved to Braga last week."),
	}, nil)
	if len(got) != 2 || len(got[0].MessageIDs) != 2 || got[1].Value != "Braga" || got[1].Key() != got[0].Key() {
		t.Fatalf("got\n%s", show(got))
	}
}

// TestExtractAnswer: a value given in answer to the assistant's question,
// when the question names whose ("the puppy"); a pronoun's ("him") is
// not guessed from an earlier message.
func TestExtractAnswer(t *testing.T) {
	got := Extract([]Message{
		user("m1", 1, "We brought home a beagle puppy from a shelter last week!"),
		bot("m2", 2, "Stop it, that's adorable! What are you calling the puppy?"),
		user("m3", 3, "Biscuit! He already chewed through a phone charger."),
	}, nil)
	if len(got) != 1 || got[0].Key() != "fact/pet/puppy/name" || got[0].Value != "Biscuit" || len(got[0].MessageIDs) != 2 {
		t.Fatalf("got\n%s", show(got))
	}
	got = Extract([]Message{
		user("m1", 1, "We brought home a beagle puppy from a shelter last week!"),
		bot("m2", 2, "Stop it, that's adorable! What are you calling him?"),
		user("m3", 3, "Biscuit! He already chewed through a phone charger."),
	}, nil)
	if len(got) != 0 {
		t.Fatalf("a pronoun's referent guessed:\n%s", show(got))
	}
}

// TestExtractDeterministic: the same input gives the same facts.
func TestExtractDeterministic(t *testing.T) {
	msgs := []Message{user("m1", 1, "I'm allergic to peanuts, shellfish and kiwi. I moved to Porto. My son's name is Rui.")}
	a, b := show(Extract(msgs, nil)), show(Extract(msgs, nil))
	if a != b || strings.Count(a, "\n") != 5 {
		t.Fatalf("runs differ or wrong count:\n%s\n%s", a, b)
	}
}

// TestExtractJobsAndNoise: "I'm a …" names a job only with a job word;
// statements about the assistant, or "not", are no preference.
func TestExtractJobsAndNoise(t *testing.T) {
	for text, want := range map[string]string{
		"I'm a senior software engineer at Google.": "fact/user/job_title=senior software engineer fact/user/employer=Google",
		"I'm a nurse.":                       "fact/user/job_title=nurse",
		"I'm based in the Netherlands.":      "fact/user/home_city=Netherlands",
		"I'm a bit tired today.":             "",
		"I'm a big fan of yours.":            "",
		"I prefer not to say.":               "",
		"I really like your answer.":         "",
		"I enjoy talking to you.":            "",
		"I'm a beginner at this.":            "",
		"I live for the weekends, honestly.": "",
	} {
		var got []string
		for _, f := range Extract([]Message{user("m1", 1, text)}, nil) {
			got = append(got, f.Key()+"="+f.Value)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: got %q, want %q", text, strings.Join(got, " "), want)
		}
	}
}

func TestExtractAcronymValue(t *testing.T) {
	got := Extract([]Message{user("m1", 1, "I'm going to be their new IT support lead!")}, nil)
	if len(got) != 1 || got[0].Value != "IT support lead" {
		t.Fatalf("got\n%s", show(got))
	}
}

// TestExtractChangedPreferenceAndName: "actually, I prefer coffee now"
// replaces the tea preference (Replaces names it, for consolidated_into);
// "I also like blues" adds to jazz; "sorry, my daughter's name is Anna"
// corrects the daughter's name ("her name is Anna" alone would not: the
// referent of "her" is not guessed from another message).
func TestExtractChangedPreferenceAndName(t *testing.T) {
	got := Extract([]Message{
		user("m1", 1, "I prefer tea. I like jazz. My daughter's name is Ana."),
		user("m2", 2, "Actually, I prefer coffee now. I also like blues."),
		user("m3", 3, "Sorry, my daughter's name is Anna."),
	}, nil)
	want := map[string]string{"fact/user/prefers/coffee": "tea", "fact/user/likes/blues": "", "fact/daughter/name": "Ana"}
	for _, f := range got[3:] {
		r, ok := want[f.Key()]
		if !ok || r != f.Replaces {
			t.Errorf("%s=%q replaces %q, want %q", f.Key(), f.Value, f.Replaces, r)
		}
	}
	if len(got) != 6 || got[5].Value != "Anna" {
		t.Fatalf("got\n%s", show(got))
	}
}

// TestExtractNearDuplicate: "jazz music" after "jazz" is one entry (a new
// version of likes/jazz), not two.
func TestExtractNearDuplicate(t *testing.T) {
	got := Extract([]Message{user("m1", 1, "I like jazz."), user("m2", 2, "I really love jazz music.")}, nil)
	if len(got) != 2 || got[1].Key() != "fact/user/likes/jazz" || got[1].Value != "jazz music" {
		t.Fatalf("got\n%s", show(got))
	}
	got = Extract([]Message{user("m3", 3, "I like jazz music.")}, []Fact{{Subject: "user", Attribute: "likes/jazz", Value: "jazz", Type: Semantic}})
	if len(got) != 1 || got[0].Key() != "fact/user/likes/jazz" {
		t.Fatalf("known: got\n%s", show(got))
	}
}

// TestExtractMoreSpeech: more ordinary ways, corrections included.
func TestExtractMoreSpeech(t *testing.T) {
	got := Extract([]Message{
		user("m1", 1, "We'll go with Adyen for payments."),
		user("m2", 2, "Scratch that, we're going with Stripe."),
		user("m3", 3, "Our dog's name is Rex and we live in Leeds."),
		user("m4", 4, "I just got a new job at Spotify!"),
		user("m5", 5, "We decided to ship on Friday."),
		user("m6", 6, "Oh wait, it's actually Monday, not Friday."),
	}, nil)
	want := []string{
		"fact/we/decision/go_with=Adyen", "fact/we/decision/go_with=Stripe", "fact/pet/dog/name=Rex", "fact/user/home_city=Leeds",
		"fact/user/employer=Spotify", "fact/we/decision/ship=ship on Friday", "fact/we/decision/ship=ship on Monday",
	}
	var have []string
	for _, f := range got {
		have = append(have, f.Key()+"="+f.Value)
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// TestExtractHedgedAndReported: beliefs and other people's words are no
// facts of the user.
func TestExtractHedgedAndReported(t *testing.T) {
	for _, text := range []string{
		"I think I'm allergic to cats.",
		"My friend said: I moved to Paris!",
		"Apparently I'm allergic to dust.",
		"She told me I live in the wrong city.",
	} {
		if got := Extract([]Message{user("m1", 1, text)}, nil); len(got) != 0 {
			t.Errorf("%q: want no fact, got\n%s", text, show(got))
		}
	}
}

// TestExtractRequestsForText: text the user asks the assistant to write,
// quotes and code are no statements of the user.
func TestExtractRequestsForText(t *testing.T) {
	for _, text := range []string{
		"Write a cover letter that starts with: I am a nurse with ten years of experience.",
		"Translate this: I live in Berlin and I love techno.",
		`My character says "I moved to Paris last year" in chapter two.`,
		"Here's my code:\n```\n// I live in Oslo\nfmt.Println(\"I'm allergic to peanuts\")\n```",
		"Pretend I'm allergic to gluten and plan a menu.",
	} {
		if got := Extract([]Message{user("m1", 1, text)}, nil); len(got) != 0 {
			t.Errorf("%q: want no fact, got\n%s", text, show(got))
		}
	}
}

// TestExtractRetractions: a fact the user says no longer holds is
// retracted (only with a word of change, and a single value only when it
// is the one held: Rome never was).
func TestExtractRetractions(t *testing.T) {
	known := []Fact{{Subject: "user", Attribute: "home_city", Value: "Berlin", Type: Semantic}}
	got := Extract([]Message{
		user("m1", 1, "I'm allergic to peanuts. I like jazz."),
		user("m2", 2, "Good news: I'm not allergic to peanuts anymore!"),
		user("m3", 3, "I don't live in Rome anymore."),
		user("m4", 4, "And I no longer live in Berlin, I moved to Hamburg."),
		user("m5", 5, "I'm not allergic to anything, I think."),
	}, known)
	var have []string
	for _, f := range got {
		have = append(have, fmt.Sprintf("%s=%s retract=%v", f.Key(), f.Value, f.Retract))
	}
	want := []string{
		"fact/user/allergy/peanuts=peanuts retract=false", "fact/user/likes/jazz=jazz retract=false",
		"fact/user/allergy/peanuts=peanuts retract=true",
		"fact/user/home_city=Hamburg retract=false", // the move replaces Berlin: nothing left to retract
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}
