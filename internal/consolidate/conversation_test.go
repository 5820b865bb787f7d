package consolidate

import (
	"strings"
	"testing"
)

// TestExtractConversations: whole ordinary conversations, every fact the
// extractor reads listed (no more, no less).
func TestExtractConversations(t *testing.T) {
	cases := []struct {
		name  string
		turns []string // user, assistant, user, …
		want  []string // key=value, in order
	}{
		{"trip planning", []string{
			"Hi! I'm planning a trip to Japan in April.", "Great! Any dietary needs?",
			"I'm vegetarian, and my husband is allergic to shellfish.", "Noted. Where are you flying from?",
			"We live in Denver.", "When do you want to leave?",
			"Let's say April 3rd.", "Okay, April 3rd.",
			"Actually, make it April 5th.", "April 5th it is.",
		}, []string{"fact/husband/allergy/shellfish=shellfish", "fact/user/diet=vegetarian", "fact/user/home_city=Denver"}},
		{"support chat", []string{
			"My name is Priya and my order hasn't arrived.", "Sorry to hear that, Priya. What's the order number?",
			"It's 4471. I already tried contacting the courier, but it didn't help.", "Let me check.",
			"Also, please always reply in English, my Spanish is rusty.", "Of course.",
			"Thanks, you're great!", "Happy to help!",
		}, []string{"fact/user/name=Priya", "episode/user/tried/contacting_the_courier=I already tried contacting the courier, but it didn't help.",
			"instruction/user/reply_english=Also, please always reply in English, my Spanish is rusty."}},
		{"project", []string{
			"We decided to launch the beta on March 3.", "Sounds good.",
			"The deadline for the docs is Friday.", "Got it.",
			"Hmm, actually, push it to March 10.", "March 10 then.",
			"I hate long meetings, by the way.", "Ha, noted.",
		}, []string{"fact/we/decision/launch_beta=launch the beta on March 3", "fact/we/deadline=Friday", "fact/we/deadline=March 10",
			"fact/user/dislikes/long_meetings=long meetings"}},
	}
	for _, c := range cases {
		var msgs []Message
		for i, text := range c.turns {
			m := Message{ID: "m" + string(rune('a'+i)), Seq: uint64(i + 1), User: i%2 == 0, Text: text}
			msgs = append(msgs, m)
		}
		var got []string
		for _, f := range Extract(msgs, nil) {
			got = append(got, f.Key()+"="+f.Value)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
