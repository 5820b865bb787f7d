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
		}, []string{"fact/user/trip/japan=Japan in April", "fact/user/diet=vegetarian", "fact/husband/allergy/shellfish=shellfish", "fact/user/home_city=Denver",
			"fact/user/trip/japan=Japan April 5th"}},
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
		{"flight", []string{
			"hey, quick question about my flight", "Sure, what's up?",
			"I'm flying from Boston to Madrid on June 12. My wife and I are vegan btw.", "Got it, I'll note vegan meals.",
			"Oh and my son Leo is 6, he'll need a kids meal.", "Noted.",
			"Wait, sorry, the flight is June 14, not June 12.", "Updated to June 14.",
		}, []string{"fact/user/trip/madrid=Madrid June 12", "fact/user/diet=vegan", "fact/son/name=Leo", "fact/son/age=6",
			"fact/user/trip/madrid=Madrid June 14"}},
		{"account", []string{
			"I need to cancel my gym membership", "I can help. Which gym?",
			"FitZone. I've been a member since 2019 but I moved to Seattle in January.", "Understood.",
			"My account email is jo.kim@mail.com", "Thanks.",
			"Actually use jo.kim@work.com instead.", "Done.",
		}, []string{"fact/user/home_city=Seattle in January", "fact/user/email=jo.kim@mail.com", "fact/user/email=jo.kim@work.com"}},
		{"dinner", []string{
			"What's a good recipe for dinner?", "Do you have any restrictions?",
			"I can't eat dairy and I don't like spicy food.", "How about a lemon herb chicken?",
			"I'm not a big fan of chicken honestly. I love fish though.", "Then try baked salmon.",
			"Perfect. My kids hate salmon but whatever.", "Ha, maybe fish sticks for them.",
		}, []string{"fact/user/avoids/dairy=dairy", "fact/user/dislikes/spicy_food=spicy food", "fact/user/dislikes/chicken=chicken",
			"fact/user/likes/fish=fish"}},
		{"team", []string{
			"Can you remind me what we agreed on?", "We agreed to use Postgres.",
			"Right. We're switching to MySQL instead, the team prefers it.", "Okay, MySQL.",
			"And let's schedule the migration for next Tuesday.", "Scheduled.",
			"My manager is Dana Reyes, cc her on everything.", "Will do.",
		}, []string{"fact/we/decision/go_with=MySQL", "fact/we/decision/schedule_migration=schedule the migration for next Tuesday"}}, // a manager is no relative: their name is theirs
	}
	for _, c := range cases {
		var msgs []Message
		for i, text := range c.turns {
			m := Message{ID: "m" + string(rune('a'+i)), Seq: uint64(i + 1), User: i%2 == 0, Text: text}
			msgs = append(msgs, m)
		}
		var got []string
		for _, f := range Extract(msgs, nil) {
			v := f.Key() + "=" + f.Value
			if !strings.Contains(f.Value, f.When) {
				v += " " + f.When
			}
			got = append(got, v)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
