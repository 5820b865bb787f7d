package consolidate

import (
	"strings"
	"testing"
)

// TestTextingSpeech: facts said the way people type in chat — lower
// case, no apostrophes, fragments, asides — each with every fact it must
// give (a fact not listed is a wrong one).
func TestTextingSpeech(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		// Lower case and no apostrophes.
		{"im a nurse at the county hospital", []string{"fact/user/job_title=nurse"}},
		{"ive got a dog called Biscuit", []string{"fact/pet/dog/name=Biscuit", "fact/user/pet/dog=dog"}},
		{"i live in Leeds", []string{"fact/user/home_city=Leeds"}},
		{"honestly im vegetarian so no meat pls", []string{"fact/user/diet=vegetarian"}},
		{"im allergic to peanuts", []string{"fact/user/allergy/peanuts=peanuts"}},
		// Family and pets named in passing.
		{"My niece Ava might stay over next week.", []string{"fact/niece/name=Ava"}},
		{"my son Leo turns 7 on the 14th", []string{"fact/son/name=Leo", "fact/son/birthday=the 14th"}},
		{"Our cat Mochi knocked the plant over again.", []string{"fact/pet/cat/name=Mochi"}},
		// Hobbies.
		{"I've been learning Portuguese.", []string{"fact/user/hobby/portuguese=Portuguese"}},
		{"I'm learning to play the cello.", []string{"fact/user/hobby/play_cello=play the cello"}},
		{"I go climbing every Saturday.", []string{"fact/user/hobby/climbing=climbing"}},
		{"I do yoga most mornings.", []string{"fact/user/hobby/yoga=yoga"}},
		// Jobs in the user's own words.
		{"I run a small bakery in Leeds.", []string{"fact/user/business=small bakery"}},
		// Instructions that last by what they ask.
		{"please keep answers short", []string{"instruction/user/keep_answers=please keep answers short"}},
		{"Please use metric units.", []string{"instruction/user/use_metric=Please use metric units."}},
	}
	for _, c := range cases {
		if have := got(c.text); strings.Join(have, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q:\n got %q\nwant %q", c.text, have, c.want)
		}
	}
}

// TestNotTheUsers: what other people did, or a word about the other
// speaker, is no fact of the user's.
func TestNotTheUsers(t *testing.T) {
	for _, text := range []string{
		"My friend got a new job at Google.",
		"My colleague moved to Berlin last month.",
		"My boss is a vegan.",
		"My neighbour's name is Tim.",
		"I love how you explain things.",
		"Never give up!",
		"I wish I lived in Paris.",
		"If I were rich I'd live in Paris.",
		"I'm trying to go vegan.",
		"im not a nurse lol",
		"It's Lisbon, the weather is lovely.",
		"Please send me the pics!",
		"Keep it up!",
		"Use your time well, my friend.",
	} {
		if have := got(text); len(have) > 0 {
			t.Errorf("%q: got %q, want none", text, have)
		}
	}
}

// TestFragmentAnswers: a fragment answering the other speaker's question
// is read with it.
func TestFragmentAnswers(t *testing.T) {
	for _, c := range []struct {
		q, a string
		want string
	}{
		{"What do you do?", "Nurse, at the county hospital.", "fact/user/job_title=Nurse"},
		{"Where do you live?", "york, up north", "fact/user/home_city=york"},
		{"Any allergies I should know about?", "Just shellfish.", "fact/user/allergy/shellfish=shellfish"},
		{"Any dietary restrictions?", "Vegetarian, mostly.", "fact/user/diet=Vegetarian"},
		{"What do you do for fun?", "Mostly bouldering and some baking.", "fact/user/hobby/bouldering=bouldering fact/user/hobby/baking=baking"},
		{"How old are you, if you don't mind me asking?", "34.", "fact/user/age=34"},
		{"What's your dog called?", "Biscuit.", "fact/pet/dog/name=Biscuit"},
		{"What do you do for work?", "Mostly payroll at a builders' merchant.", "fact/user/job_title=payroll"},
		{"What do you do when it rains?", "Mostly payroll at a builders' merchant.", ""},
		{"Do you have any pets?", "Two cats, Mochi and Pip.", "fact/pet/cat/name=Mochi fact/pet/cat/pip/name=Pip"},
		{"Do you have any pets?", "A dog called Biscuit.", "fact/pet/dog/name=Biscuit"},
		{"That's lovely.", "Two cats, Mochi and Pip.", ""},
		{"That's lovely.", "Just shellfish.", ""},
		{"What did you have for lunch?", "Just shellfish.", ""},
		{"Any allergies?", "Nope, none.", ""},
		{"What do you do for fun?", "Not much, honestly.", ""},
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

// TestCorrectionsSaid: a later message that says it corrects gives the
// current value, and the old one is current nowhere.
func TestCorrectionsSaid(t *testing.T) {
	for _, c := range []struct {
		turns []string // user messages, one sitting
		want  []string // current key=value of memory after
	}{
		{[]string{"We're moving to Lisbon in June.", "Scratch Lisbon, we're moving to Porto."}, []string{"fact/user/plan/move=Porto"}},
		{[]string{"I work at Acme.", "I don't work at Acme anymore, I'm at Globex now."}, []string{"fact/user/employer=Globex"}},
		{[]string{"I'm allergic to peanuts.", "Turns out it's cashews not peanuts."}, []string{"fact/user/allergy/cashews=cashews"}},
		{[]string{"I'm allergic to peanuts.", "Actually it's not peanuts, it's cashews."}, []string{"fact/user/allergy/cashews=cashews"}},
		{[]string{"I'm allergic to peanuts.", "Oops, I'm allergic to cashews, not peanuts."}, []string{"fact/user/allergy/cashews=cashews"}},
		{[]string{"I work at Acme.", "I used to work at Acme but now I'm at Globex."}, []string{"fact/user/employer=Globex"}},
		{[]string{"My son is 6.", "Sorry, I meant my son is 7, not 6."}, []string{"fact/son/age=7"}},
		{[]string{"I have a job interview on Friday.", "Ugh, the interview got moved to Thursday."}, []string{"fact/user/plan/job_interview=job interview@2023-05-11"}},
		{[]string{"I have a job interview on Friday.", "My haircut got moved to Thursday."}, []string{"fact/user/plan/job_interview=job interview@2023-05-12"}},
		{[]string{"I live in Leeds.", "It's Leeds, the weather is grim."}, []string{"fact/user/home_city=Leeds"}},
		// A number is replaced by a number only: the drink asked for is
		// no new age.
		{[]string{"I'm actually 29 now, my birthday was last Tuesday", "Please remove the part where I raise a glass of whiskey lol, my nani will be in the front row. Make it mango lassi"}, []string{"fact/user/age=29"}},
	} {
		var msgs []Message
		for i, tx := range c.turns {
			msgs = append(msgs, Message{ID: string(rune('a' + i)), Seq: uint64(i + 1), User: true, Text: tx, Said: said08May})
		}
		cur := map[string]string{}
		var order []string
		for _, f := range Extract(msgs, nil) {
			if _, ok := cur[f.Key()]; !ok {
				order = append(order, f.Key())
			}
			cur[f.Key()] = f.Value
			if f.Date != "" {
				cur[f.Key()] += "@" + f.Date
			}
			if f.Retract {
				delete(cur, f.Key())
			}
		}
		var have []string
		for _, k := range order {
			if v, ok := cur[k]; ok {
				have = append(have, k+"="+v)
			}
		}
		if strings.Join(have, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q:\n got %q\nwant %q", c.turns, have, c.want)
		}
	}
}

// TestStableFacts: lasting facts said in plain sentences — what the user
// has, does habitually, works in, used to do.
func TestStableFacts(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"I've got a canal boat we take out in summer.", []string{"fact/user/has/canal_boat=canal boat"}},
		{"We have a little camper van.", []string{"fact/user/has/camper_van=camper van"}},
		{"I grow tomatoes and chillies.", []string{"fact/user/hobby/tomatoes=tomatoes", "fact/user/hobby/chillies=chillies"}},
		{"I keep bees in the back garden.", []string{"fact/user/hobby/bees=bees"}},
		{"I work in marketing.", []string{"fact/user/works_in=marketing"}},
		{"I used to be a firefighter.", []string{"fact/user/former_job=firefighter"}},
		{"I'm retired now.", []string{"fact/user/job_title=retired"}},
		{"I've got two kids.", []string{"fact/user/kids_count=two"}},
		{"i live in lisbon with my wife", []string{"fact/user/home_city=lisbon"}},
		{"I don't eat meat.", []string{"fact/user/avoids/meat=meat"}},
		{"I'm passionate about dancing.", []string{"fact/user/likes/dancing=dancing"}},
		{"We're expecting a baby in March!", []string{"fact/user/plan/baby=baby@2024-03"}},
		{"These days I live in Porto.", []string{"fact/user/home_city=Porto"}},
		{"We have a strong bond.", nil},
		{"I'm obsessed with how you write.", nil},
		{"I'm a cardiologist.", []string{"fact/user/job_title=cardiologist"}},
		{"I'm a locksmith in York.", []string{"fact/user/job_title=locksmith"}},
		{"I'm a perfectionist, sadly.", nil},
		{"I'm a dreamer.", nil},
		{"I'm in a choir.", []string{"fact/user/hobby/choir=choir"}},
		{"I'm part of a book club.", []string{"fact/user/hobby/book_club=book club"}},
		{"I'd rather have tea.", []string{"fact/user/prefers/tea=tea"}},
		{"My 7-year-old son loves trains.", []string{"fact/son/age=7"}},
		{"My son Leo's 7.", []string{"fact/son/name=Leo", "fact/son/age=7"}},
		{"My wife is Pat.", []string{"fact/wife/name=Pat"}},
		{"My wife is Italian.", nil},
		{"I'm sitting my driving test next Tuesday.", []string{"fact/user/plan/driving_test=driving test@2023-05-09"}},
		{"I'm having a rough day today.", nil},
		{"I'm more of a tea person.", []string{"fact/user/prefers/tea=tea"}},
		{"I retired last year.", []string{"fact/user/job_title=retired"}},
		{"I've been vegetarian for ten years.", []string{"fact/user/diet=vegetarian"}},
		{"I went vegan last year.", []string{"fact/user/diet=vegan"}},
		{"allergic to peanuts btw", []string{"fact/user/allergy/peanuts=peanuts"}},
		{"I paint my nails.", nil},
		{"I'm on the team.", nil},
		{"I'm learning patience.", nil},
		{"i'm from the north", nil},
		{"I go running most mornings.", []string{"fact/user/hobby/running=running"}},
		{"My husband is Dave and he's a plumber.", []string{"fact/husband/name=Dave"}},
		{"We've got two cats, Mochi and Pip.", []string{"fact/user/cats_count=two", "fact/user/pet/cats=cats", "fact/pet/cat/name=Mochi", "fact/pet/cat/pip/name=Pip"}},
		{"I have two kids, Leo and Mia.", []string{"fact/user/kids_count=two", "fact/kid/name=Leo", "fact/kid/mia/name=Mia"}},
		{"I bought collars for my dogs, Pepper, Precious and Panda.", []string{"fact/pet/dog/name=Pepper", "fact/pet/dog/precious/name=Precious", "fact/pet/dog/panda/name=Panda"}},
		{"I'm not a big fan of olives.", []string{"fact/user/dislikes/olives=olives"}},
		{"I'm in sales.", []string{"fact/user/works_in=sales"}},
		{"I'm in a meeting.", nil},
		{"We live just outside York.", []string{"fact/user/home_city=York"}},
		{"I start my new job on Monday.", []string{"fact/user/plan/job=job@2023-05-15"}},
		{"We're leaving for Japan on June 3rd.", []string{"fact/user/trip/japan=Japan@2023-06-03"}},
		{"I start work at nine.", nil},
		{"Started hitting the gym last week.", []string{"fact/user/started/hitting_gym=hitting the gym@the week of 2023-05-01"}},
		{"I'm learning a ton.", nil},
		{"I have a question about my order.", nil},
		{"I have an idea!", nil},
		{"I've got a meeting at 3.", nil},
		{"I have a feeling it'll rain.", nil},
		{"I grow tired of this.", nil},
		{"I keep forgetting my keys.", nil},
		{"I work in the garden most evenings.", nil},
	}
	for _, c := range cases {
		if have := got(c.text); strings.Join(have, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q:\n got %q\nwant %q", c.text, have, c.want)
		}
	}
}
