package consolidate

import (
	"strings"
	"testing"
	"time"
)

// said08May is 8 May 2023, 13:56 UTC: when the test statements are said.
var said08May = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()

// got lists the facts of one user message as "key=value", or
// "key=value@date" when the fact names a date.
func got(text string) []string {
	var out []string
	for _, f := range Extract([]Message{{ID: "m1", Seq: 1, User: true, Text: text, Said: said08May}}, nil) {
		s := f.Key() + "=" + f.Value
		if f.Date != "" {
			s += "@" + f.Date
		}
		if f.Retract {
			s = "-" + s
		}
		out = append(out, s)
	}
	return out
}

// TestPlainSpeech: statements as people make them, each with every fact
// it must give (no more: a fact not listed is a wrong one).
func TestPlainSpeech(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		// Jobs.
		{"I'm a nurse.", []string{"fact/user/job_title=nurse"}},
		{"I'm a nurse at St Mary's, mostly nights.", []string{"fact/user/job_title=nurse", "fact/user/employer=St Mary"}},
		{"I work as a Weight Watchers coach, it's a really calming place.", []string{"fact/user/job_title=Weight Watchers coach"}},
		{"I've been teaching piano for six years now.", []string{"fact/user/job_title=piano"}},
		{"I drive a tram in Lisbon.", []string{"fact/user/job_title=tram"}},
		{"So I started a new job as a claims adjuster last week.", []string{"fact/user/job_title=claims adjuster@the week of 2023-05-01"}},
		{"I've been an automotive engineer for twelve years and it's so fulfilling.", []string{"fact/user/job_title=automotive engineer"}},
		// Employers.
		{"I work at Halcyon Labs.", []string{"fact/user/employer=Halcyon Labs"}},
		{"I work for the BBC these days.", []string{"fact/user/employer=BBC"}},
		{"I work from home for Nordlux Insurance and the people there are all in Warsaw.", []string{"fact/user/employer=Nordlux Insurance"}},
		{"I work remotely for Halcyon Labs.", []string{"fact/user/employer=Halcyon Labs"}},
		{"I just joined Spotify as a data engineer, I start Monday.", []string{"fact/user/employer=Spotify", "fact/user/job_title=data engineer"}},
		{"I quit my job at Acme; these days I'm at Globex.", []string{"fact/user/employer=Globex"}},
		// Places.
		{"I live in Rio de Janeiro with my partner.", []string{"fact/user/home_city=Rio de Janeiro"}},
		{"We moved to Porto last month.", []string{"fact/user/home_city=Porto@2023-04"}},
		{"We're based in Leeds.", []string{"fact/user/home_city=Leeds"}},
		{"I'm originally from Cork.", []string{"fact/user/hometown=Cork"}},
		// Family and pets.
		{"My son Leo is obsessed with dinosaurs.", []string{"fact/son/name=Leo"}},
		{"Our beagle, Biscuit, ate my sandwich.", []string{"fact/pet/beagle/name=Biscuit"}},
		{"My daughter's name is Ana.", []string{"fact/daughter/name=Ana"}},
		{"I have a son, his name is Kyle.", []string{"fact/son/name=Kyle"}},
		{"We adopted a puppy named Pickle last weekend!", []string{"fact/pet/puppy/name=Pickle", "fact/user/pet/puppy=puppy@the weekend of 2023-05-06"}},
		{"My sister Ana lives in Berlin.", []string{"fact/sister/name=Ana", "fact/sister/home_city=Berlin"}},
		{"My son turns 6 on March 3rd.", []string{"fact/son/birthday=March 3"}},
		{"My birthday is on the 14th of July.", []string{"fact/user/birthday=July 14"}},
		// Health and food.
		{"I'm allergic to peanuts, shellfish and kiwi.", []string{"fact/user/allergy/peanuts=peanuts", "fact/user/allergy/shellfish=shellfish", "fact/user/allergy/kiwi=kiwi"}},
		{"Oh, and I'm vegetarian, so no meat please.", []string{"fact/user/diet=vegetarian"}},
		{"I can't eat dairy.", []string{"fact/user/avoids/dairy=dairy"}},
		// Hobbies.
		{"I've taken up pottery.", []string{"fact/user/hobby/pottery=pottery"}},
		{"I play in a five-a-side team on Thursdays.", []string{"fact/user/hobby/five_a_side_team=five-a-side team"}},
		{"I play the violin.", []string{"fact/user/hobby/violin=violin"}},
		{"I just signed up for a pottery class yesterday.", []string{"fact/user/joined/pottery_class=pottery class@2023-05-07"}},
		{"I'm really into bouldering these days.", []string{"fact/user/hobby/bouldering=bouldering"}},
		// Plans with dates.
		{"We're going to Japan in October.", []string{"fact/user/trip/japan=Japan@2023-10"}},
		{"I'm going to run a marathon next month.", []string{"fact/user/plan/run_marathon=run a marathon@2023-06"}},
		{"I have a job interview on Friday.", []string{"fact/user/plan/job_interview=job interview@2023-05-12"}},
		// Preferences.
		{"I prefer tea.", []string{"fact/user/prefers/tea=tea"}},
		{"I can't stand cilantro.", []string{"fact/user/dislikes/cilantro=cilantro"}},
		{"My favourite band is Radiohead.", []string{"fact/user/favorite_band=Radiohead"}},
		{"I love hiking with my dogs.", []string{"fact/user/likes/hiking=hiking"}},
		// What happened, with its date.
		{"I went to a book fair yesterday and it was so crowded.", []string{"fact/user/went_to/book_fair=book fair@2023-05-07"}},
		{"Last Tuesday I joined a running club.", []string{"fact/user/joined/running_club=running club@2023-05-02"}},
		{"I ran a charity race two years ago.", []string{"fact/user/ran/charity_race=charity race@2021"}},
		{"Oh, I've been to Paris yesterday!", []string{"fact/user/trip/paris=Paris@2023-05-07"}},
		// Instructions.
		{"Please always answer in French.", []string{"instruction/user/answer_french=Please always answer in French."}},
		{"Don't suggest meat recipes.", []string{"instruction/user/suggest_meat=Don't suggest meat recipes."}},
	}
	for _, c := range cases {
		if g := got(c.text); strings.Join(g, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%q:\n got  %q\n want %q", c.text, g, c.want)
		}
	}
}

// TestNoFacts: small talk, compliments, "it's" sentences, stories about
// other people and questions state no fact of the user.
func TestNoFacts(t *testing.T) {
	for _, text := range []string{
		// Small talk and pleasantries.
		"Never give up!",
		"Always great chatting with you!",
		"Don't forget to drink water and stretch after your run!",
		"Keep going, you've got this!",
		"Thanks so much, talk soon!",
		"Hope you have a wonderful weekend!",
		// Compliments to the other speaker.
		"I love how you always find time for your kids.",
		"I love that!",
		"I love the thought Nate!",
		"I love your painting, the colors are amazing.",
		"I really like your idea.",
		"I love it when you share these pics.",
		"I'm a big fan of yours.",
		// "It's" sentences.
		"It's a really calming place.",
		"It's fulfilling.",
		"It's so rewarding to see them grow.",
		"It takes us about an hour to get there.",
		// A team's or workplace's "we have": no possession of the user's.
		"we have a new head of data and she wants everything in a dashboard by friday",
		"we have a new deputy principal and she's already sent four emails about lanyards",
		"we have a release every two weeks and every time it's the same conversation",
		// Other people.
		"His name is Kyle.",
		"She works at Google now.",
		"My friend said: I moved to Paris!",
		"They live in Berlin.",
		// Questions and hypotheticals.
		"Do you think I should move to Porto?",
		"Where do you work?",
		"If I moved to Lisbon, would that change my taxes?",
		"I might move to Berlin next year.",
		"I think I'm allergic to cats.",
		"I'd love to visit Japan someday.",
		// Negations.
		"I'm not allergic to anything.",
		"I don't live in Madrid.",
		// Feelings and reactions.
		"I'm so proud of you!",
		"I'm a bit tired today.",
		"I'm always here for you.",
		"I started feeling a lot calmer after that.",
		"I got the hang of it after a while.",
		// Words that look like values and are not.
		"I'm going to Sarah's party on Saturday.",
		"My mom always said I'm a natural teacher.",
		"I'm a mess today.",
		"I work from home most days.",
		"I work with kids, it's exhausting.",
		"I live in hope!",
		"I love it here.",
		"I'd prefer tea.",
		"I really like that idea.",
		"I love my new job.",
		"I just got back from work.",
		"I went to bed early.",
		"I ran out of milk again.",
		"I got the flu last week.",
		"I just started a new book my sister lent me.",
	} {
		if g := got(text); len(g) != 0 {
			t.Errorf("%q: want no fact, got %q", text, g)
		}
	}
}

// TestPronounsAcrossSentences: a pronoun's referent is not guessed from
// another sentence; a name the conversation knows is.
func TestPronounsAcrossSentences(t *testing.T) {
	msgs := []Message{
		{ID: "m1", Seq: 1, User: true, Text: "My grandma was visiting last week. His name is Kyle, he's new at school.", Said: said08May},
		{ID: "m2", Seq: 2, Text: "Cute! How old is your son?"},
		{ID: "m3", Seq: 3, User: true, Text: "My son Leo is five. Leo turns 6 on March 3rd!", Said: said08May},
	}
	var have []string
	for _, f := range Extract(msgs, nil) {
		have = append(have, f.Key()+"="+f.Value)
	}
	want := []string{"fact/son/name=Leo", "fact/son/age=five", "fact/son/birthday=March 3"}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// TestScriptedCorrections: five facts stated plainly in one session, two
// of them corrected in the next; the corrections say so ("I quit …; these
// days I'm at …", "we moved to …"), the sentences around them do not
// ("It's a really calming place.").
func TestScriptedCorrections(t *testing.T) {
	day1 := said08May
	day2 := time.Date(2023, 6, 20, 9, 0, 0, 0, time.UTC).UnixNano()
	s1 := []Message{
		{ID: "a1", Seq: 1, User: true, Said: day1, Text: "Hi, I'm Dana! I work at Acme as a product manager."},
		{ID: "a2", Seq: 2, Said: day1, Text: "Nice to meet you, Dana! What's Acme like?"},
		{ID: "a3", Seq: 3, User: true, Said: day1, Text: "It's a really calming place. I live in Leeds with my son Leo."},
		{ID: "a4", Seq: 4, Said: day1, Text: "Lovely. How old is Leo?"},
		{ID: "a5", Seq: 5, User: true, Said: day1, Text: "He's five. Leo turns six on March 3rd! Oh, and I'm allergic to penicillin."},
		{ID: "a6", Seq: 6, Said: day1, Text: "Noted. Never give up on those hobbies!"},
		{ID: "a7", Seq: 7, User: true, Said: day1, Text: "Never give up! Always great chatting with you!"},
	}
	f1 := Extract(s1, nil)
	var have []string
	for _, f := range f1 {
		have = append(have, f.Key()+"="+f.Value)
	}
	want := []string{"fact/user/name=Dana", "fact/user/employer=Acme", "fact/user/job_title=product manager", "fact/user/home_city=Leeds",
		"fact/son/name=Leo", "fact/son/birthday=March 3", "fact/user/allergy/penicillin=penicillin"}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("session 1: got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	s2 := []Message{
		{ID: "b1", Seq: 1, User: true, Said: day2, Text: "Big news: I quit Acme; these days I'm at Globex."},
		{ID: "b2", Seq: 2, Said: day2, Text: "Congratulations! How's the new job?"},
		{ID: "b3", Seq: 3, User: true, Said: day2, Text: "It's fulfilling. And we moved to York last month."},
	}
	f2 := Extract(s2, f1)
	have = nil
	for _, f := range f2 {
		have = append(have, f.Key()+"="+f.Value+" replaces "+f.Replaces+" "+f.Date)
	}
	want = []string{"fact/user/employer=Globex replaces Acme ", "fact/user/home_city=York replaces Leeds 2023-05"}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("session 2: got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// TestExplicitCorrectionsOnly: a value changes only when the message says
// it does.
func TestExplicitCorrectionsOnly(t *testing.T) {
	known := []Fact{{Subject: "user", Attribute: "job_title", Value: "Weight Watchers coach", Type: Semantic},
		{Subject: "we", Attribute: "decision/ship", Value: "ship on Friday", Type: Semantic}}
	for _, text := range []string{
		"It's a really calming place.",
		"It's Monday.",
		"Honestly it's fulfilling.",
		"Use Postgres.",
	} {
		if fs := Extract([]Message{{ID: "m1", Seq: 1, User: true, Text: text}}, known); len(fs) != 0 {
			t.Errorf("%q: corrected without saying so: %s", text, show(fs))
		}
	}
	fs := Extract([]Message{{ID: "m1", Seq: 1, User: true, Text: "We decided to ship on Friday."}, {ID: "m2", Seq: 2, User: true, Text: "Wait, it's Monday, not Friday."}}, nil)
	if len(fs) != 2 || fs[1].Value != "ship on Monday" || fs[1].Replaces != "ship on Friday" {
		t.Fatalf("a marked correction: %s", show(fs))
	}
}

// TestEntryText: an entry reads as a statement about its subject, with
// the date it names, when it was said and the sentence whole.
func TestEntryText(t *testing.T) {
	for text, want := range map[string]string{
		"I work as a Weight Watchers coach, it's a really calming place.": `works as: Weight Watchers coach (said 2023-05-08): "I work as a Weight Watchers coach, it's a really calming place."`,
		"I went to a book fair yesterday.":                                `went to: book fair on 2023-05-07 (said 2023-05-08): "I went to a book fair yesterday."`,
		"My sister Ana lives in Berlin and my son Leo lives in Paris.":    `sister's name: Ana (said 2023-05-08): "My sister Ana lives in Berlin and my son Leo lives in Paris."`,
	} {
		fs := Extract([]Message{{ID: "m1", Seq: 1, User: true, Text: text, Said: said08May}}, nil)
		if len(fs) == 0 || fs[0].Text() != want {
			t.Errorf("%q:\n got  %s\n want %s", text, show(fs), want)
		}
	}
}

// TestNamedAsOff: "the Lisbon plan fell through, it's Porto now" names
// the value replaced and the one replacing it.
func TestNamedAsOff(t *testing.T) {
	fs := Extract([]Message{
		{ID: "m1", Seq: 1, User: true, Text: "Big news: my dad Juliska is relocating to Lisbon next month."},
		{ID: "m2", Seq: 2, Text: "Wow!"},
		{ID: "m3", Seq: 3, User: true, Text: "Update on Juliska: the Lisbon plan fell through, it's Porto now."},
	}, nil)
	var have []string
	for _, f := range fs {
		have = append(have, f.Key()+"="+f.Value+" replaces "+f.Replaces)
	}
	want := []string{"fact/dad/name=Juliska replaces ", "fact/dad/home_city=Lisbon replaces ", "fact/dad/home_city=Porto replaces Lisbon"}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// TestAnswers: a value given in answer to the other speaker's question is
// read with the question; the same words without it are not.
func TestAnswers(t *testing.T) {
	for _, c := range []struct {
		q, a string
		want string
	}{
		{"Nice to meet you! What do you do for a living?", "Tram driver, in Lisbon.", "fact/user/job_title=Tram driver"},
		{"So where do you live these days?", "Lisbon, near the river.", "fact/user/home_city=Lisbon"},
		{"Where are you from originally?", "Oh, Cork!", "fact/user/hometown=Cork"},
		{"What's the puppy's name?", "Biscuit! He's a menace.", "fact/pet/puppy/name=Biscuit"},
		{"What do you do?", "I drive a tram.", "fact/user/job_title=tram"},
		{"That's lovely.", "Lisbon, near the river.", ""},
		{"What did you think of the film?", "Lisbon looked gorgeous in it.", ""},
	} {
		fs := Extract([]Message{{ID: "q", Seq: 1, Text: c.q}, {ID: "a", Seq: 2, User: true, Text: c.a}}, nil)
		var have []string
		for _, f := range fs {
			have = append(have, f.Key()+"="+f.Value)
		}
		if strings.Join(have, " ") != c.want {
			t.Errorf("%q %q: got %q, want %q", c.q, c.a, have, c.want)
		}
	}
}

// TestTaughtReads: a subject taught is no former job title of its own:
// "used to work as: geography" reads as nonsense, "taught: geography" as
// the user said it.
func TestTaughtReads(t *testing.T) {
	fs := Extract([]Message{{ID: "a", Seq: 1, User: true, Text: "I taught geography for thirty-one years, so I know maps."}}, nil)
	if len(fs) != 1 || fs[0].Value != "geography" || fs[0].Label != "taught" {
		t.Fatalf("got %+v, want one fact geography labelled taught", fs)
	}
}
