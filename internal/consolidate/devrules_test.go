package consolidate

import "testing"

// TestDevStatements: statements of the development conversations
// (testdata/dev/batch1) each rule reads, with the key and value wanted.
func TestDevStatements(t *testing.T) {
	cases := []struct{ text, key, value string }{
		// A title's period ends no sentence and no name.
		{"Yeah, I'm a nurse at St. Mary's so the night shifts are killing me.", "fact/user/employer", "St. Mary"},
		// The employer after "I work as …", "I teach …", "a job as …".
		{"I work as a software engineer at Finch Labs, mostly remote.", "fact/user/employer", "Finch Labs"},
		{"Yeah, I teach second grade at Maple Elementary.", "fact/user/employer", "Maple Elementary"},
		// "I'm the head chef": a job with "the".
		{"Busy! I'm the head chef at Olivo now, it opened in March.", "fact/user/job_title", "head chef"},
		{"Busy! I'm the head chef at Olivo now, it opened in March.", "fact/user/employer", "Olivo"},
		{"I have a dentist appointment on Thursday at 3.", "fact/user/plan/dentist_appointment", "dentist appointment"},
		{"I'm doing a master's in public health at UW.", "fact/user/studies", "public health"},
		{"I also hurt my back lifting a water heater at work on Monday.", "fact/user/injury/back", "back"},
		{"Yeah, I got a part-time job as a research assistant in an epidemiology lab.", "fact/user/job_title", "research assistant"},
		{"Oh, I said I'm 34 but I'm actually 35, just had my birthday.", "fact/user/age", "35"},
		{"I'm 29 by the way, in case you forgot.", "fact/user/age", "29"},
		{"I'm lactose intolerant.", "fact/user/diet", "lactose intolerant"},
		{"I just graduated from nursing school!", "fact/user/graduated_from/nursing_school", "nursing school"},
		{"Still at the library, yep. I'm a librarian there, going on six years.", "fact/user/job_title", "librarian"},
		{"I'm still teaching yoga at the studio downtown, it keeps me sane.", "fact/user/job_title", "yoga"},
		{"I switched schools, now I teach at Riverside Academy.", "fact/user/employer", "Riverside Academy"},
		{"I also adopted a kitten on Sunday, his name is Biscuit!", "fact/pet/kitten/name", "Biscuit"},
		{"In June we're moving to Austin.", "fact/user/plan/move", "Austin"},
		{"Tomas and I are going camping in Yosemite next weekend.", "fact/user/trip/yosemite", "Yosemite"},
		{"I'm pregnant!", "fact/user/pregnant", "pregnant"},
		{"I have type 2 diabetes, so Margaret keeps me off the cake.", "fact/user/condition/diabetes", "diabetes"},
		{"I've been volunteering at the veterans center downtown every Tuesday, it feels good to give back.", "fact/user/volunteers_at", "veterans center"},
		{"I've lived in Chicago for 15 years.", "fact/user/home_city", "Chicago"},
		{"I changed my concentration to biostatistics, by the way.", "fact/user/studies", "biostatistics"},
		{"Lost my job as an accountant on Monday, so I'm finally going for it.", "fact/user/former_job", "accountant"},
		{"I got laid off from Brightline too, so it's been a lot.", "fact/user/former_employer", "Brightline"},
		{"I'm starting a dance studio 'cause I'm passionate about dancing.", "fact/user/plan/start_dance_studio", "dance studio"},
		{"I just launched a website for my food truck so people can order ahead.", "fact/user/business/food_truck", "food truck"},
		{"Honestly, birria is my go-to.", "fact/user/likes/birria", "birria"},
		{"Taking care of my three pups has been a full-time job lol.", "fact/user/dogs_count", "three"},
		{"I started making candles as a hobby last spring.", "fact/user/hobby/making_candles", "making candles"},
		{"I'm a sound engineer at a studio called Echo Room.", "fact/user/employer", "Echo Room"},
		{"We even went on another camping trip in the forest.", "fact/user/went_on/camping_trip", "camping trip"},
		{"Last week I finally went on a hike and had this amazing experience with a hummingbird.", "fact/user/went_on/hike", "hike"},
		{"Yep, still an ICU nurse at Northwestern. Twelve-hour shifts and then running, haha.", "fact/user/job_title", "ICU nurse"},
		{"I adopted a cat last month, a grey one named Smokey.", "fact/pet/cat/name", "Smokey"},
		{"I'm teaching high school history in Tucson now.", "fact/user/job_title", "high school history"},
		{"And I picked up salsa dancing because of her, we go every Thursday.", "fact/user/hobby/salsa_dancing", "salsa dancing"},
		{"Haha yes! I'm finally learning Portuguese for real.", "fact/user/hobby/portuguese", "Portuguese"},
		{"I'm a data analyst at a hospital, mostly pandas and SQL.", "fact/user/employer", "hospital"},
		{"Now I'm back at work and sad. I'm a dental assistant, did I ever tell you?", "fact/user/job_title", "dental assistant"},
		{"We just moved in together in Oakland.", "fact/user/home_city", "Oakland"},
		{"Oh and we got a puppy! A golden retriever named Mango.", "fact/pet/golden_retriever/name", "Mango"},
		{"Ha! No. But I've started running at 5am to clear my head.", "fact/user/hobby/running", "running"},
		{"Every minute. I taught chemistry for 32 years, so I'm making up for lost time.", "fact/user/former_job", "chemistry"},
		{"Oh hi, welcome! I'm Ruth. I've lived here about ten years.", "fact/user/name", "Ruth"},
		{"Good! We just got back from a week in Maine.", "fact/user/trip/maine", "Maine"},
		{"I'm a court stenographer downtown. Very exciting, haha.", "fact/user/job_title", "court stenographer"},
		{"Very. Also we moved, we're in Brookline now, bigger place.", "fact/user/home_city", "Brookline"},
		{"I'm saving for a trip to Iceland in the fall.", "fact/user/trip/iceland", "Iceland"},
		{"Update: I got a part-time job at a print shop, steady income now.", "fact/user/employer", "print shop"},
		{"Incredible!! Best birthday ever. I turned 30 there.", "fact/user/age", "30"},
		{"Ha! I've been knitting for sixty years, so I should hope so.", "fact/user/hobby/knitting", "knitting"},
		{"Your grandpa and I are taking a cruise to Alaska in June!", "fact/user/trip/alaska", "Alaska"},
		{"I go to a water aerobics class at the Y on Saturdays.", "fact/user/hobby/aerobics_class", "water aerobics class"},
		{"My sister and I are flying to Lisbon next week.", "fact/user/trip/lisbon", "Lisbon"},
		{"Oh, and my husband Kai and I are going to Japan in the spring for our anniversary!", "fact/user/trip/japan", "Japan"},
		{"I've been doing pilates twice a week, it's been a lifesaver for my back.", "fact/user/hobby/pilates", "pilates"},
		{"My kids are Noah and Ava.", "fact/kid/name", "Noah"},
		{"I'm doing a 10k charity swim in May.", "fact/user/plan/charity_swim", "10k charity swim"},
		{"My favorite food to cook is risotto.", "fact/user/favorite_food", "risotto"},
		{"But I still make time for climbing.", "fact/user/hobby/climbing", "climbing"},
		{"Please remember I'm vegetarian.", "fact/user/diet", "vegetarian"},
		{"As I mentioned, I'm a nurse.", "fact/user/job_title", "nurse"},
		{"I used to work at Google, now I freelance.", "fact/user/former_employer", "Google"},
		{"We used to live in Boston before the kids.", "fact/user/former_home/boston", "Boston"},
		{"I don't really like jazz anymore, I'm more into techno now.", "fact/user/hobby/techno", "techno"},
	}
	checkStatements(t, cases)
}

// TestDevAnswers: a reply to a question gives a value only when it is
// the whole reply, not a sentence's first word, a pastime for a job, or
// someone else's.
func TestDevAnswers(t *testing.T) {
	refused := []struct{ q, a string }{
		{"Where do you work these days?", "Busy, but good."},
		{"Where do you work these days?", "A lot of paperwork lol."},
		{"Where are you living now?", "With my parents for now."},
		{"Where are you living now?", "Still the same place, near the river."},
		{"What's your dog's name again?", "Same old question!"},
		{"What do you do for a living?", "Mostly gardening."},
		{"What do you do for a living?", "Probably just sleeping lol."},
		{"What do you do for a living?", "Lots of reading."},
		{"What do you do for a living?", "He's a teacher at my school."},
		{"What do you do for a living?", "My sister works there too."},
		{"What do you do for fun?", "Trying to stay sane, mostly."},
		{"Hi!", "I got into trouble lol."},
		{"Hi!", "We had our first big event last Saturday, a street fair downtown."},
		{"Hi!", "Now I'm passionate about creating a safe, inviting place for people to grow."},
		{"Hi!", "I went to my favorite coffee shop."},
		{"Hi!", "I picked up bread at my local bakery, they know my order."},
		{"Hi!", "My yoga studio is closed today."},
		{"Hi!", "My two cents: go for it."},
		{"Hi!", "I went on a date lol."},
		{"Hi!", "I went on a walk."},
		{"Hi!", "I picked up my kids from school."},
		{"Hi!", "I picked up some groceries."},
		{"Hi!", "Still a mess lol."},
		{"Hi!", "I'm on the data engineering team now."},
		{"Hi!", "I'm a regular at the gym."},
		{"Hi!", "I go to a great dentist."},
		{"Hi!", "My friend got a puppy. A golden retriever named Mango."},
		{"Hi!", "I'm a terrible cook, so I eat out every night here."},
		{"Hi!", "I'm a great nurse."},
		{"Hi!", "I started running late."},
		{"Hi!", "I started crying lol."},
		{"Hi!", "I'm Sorry."},
		{"Hi!", "I'm Done."},
		{"Hi!", "I'm Irish."},
		{"Hi!", "We're in Brookline for the weekend."},
		{"Hi!", "I've been crying for hours."},
		{"Hi!", "I've been working for 10 years."},
		{"Hi!", "I'm in a bar lol."},
		{"Hi!", "I'm doing laundry."},
		{"Hi!", "My parents are Catholic."},
		{"Hi!", "I remember my dad was a baker."},
		{"Hi!", "I used to work for myself."},
		{"Hi!", "I always make time for my kids."},
		{"Hi!", "I'm going camping in the rain lol."},
		{"Hi!", "I'm not pregnant lol."},
		{"Hi!", "My friend has diabetes."},
		{"Hi!", "If I have asthma I can't run."},
		{"Where do you work?", "Nothing much, just relaxing."},
	}
	for _, c := range refused {
		if fs := Extract([]Message{bot("q", 1, c.q), user("a", 2, c.a)}, nil); len(fs) != 0 {
			t.Errorf("%q %q: want nothing, got\n%s", c.q, c.a, show(fs))
		}
	}
	read := []struct{ q, a, key, value string }{
		{"Where are you from originally?", "Leeds, up north.", "fact/user/hometown", "Leeds"},
		{"And where do you work?", "At Deloitte, in the tax team.", "fact/user/employer", "Deloitte"},
		{"Where are you living now?", "Brooklyn, near Prospect Park.", "fact/user/home_city", "Brooklyn"},
		{"Where are you living now?", "Porto for now.", "fact/user/home_city", "Porto"},
		{"Are you two still in Queens?", "Yep, Astoria. We love it there.", "fact/user/home_city", "Astoria"},
		{"What do you do for a living?", "Teaching.", "fact/user/job_title", "Teaching"},
	}
	for _, c := range read {
		fs := Extract([]Message{bot("q", 1, c.q), user("a", 2, c.a)}, nil)
		if len(fs) != 1 || fs[0].Key() != c.key || fs[0].Value != c.value {
			t.Errorf("%q %q: want %s=%q, got\n%s", c.q, c.a, c.key, c.value, show(fs))
		}
	}
}

// TestDevCorrections: a correction that names the old value replaces it
// ("I'm actually in Vancouver, not Portland"), under the key of the old
// one ("my partner is actually called Cara" is no second partner), and
// its value holds no word of the correction ("actually Idles").
func TestDevCorrections(t *testing.T) {
	fix := []struct {
		known            Fact
		said, key, value string
	}{
		{Fact{Subject: "partner", Attribute: "name", Value: "Ciara", Type: Semantic},
			"Oh, I have to fix something, my partner is actually called Cara, not Ciara.", "fact/partner/name", "Cara"},
		{Fact{Subject: "girlfriend", Attribute: "name", Value: "Nina", Type: Semantic},
			"My girlfriend is actually called Nadia.", "fact/girlfriend/name", "Nadia"},
		{Fact{Subject: "user", Attribute: "favorite_band", Value: "Fontaines D.C.", Type: Semantic},
			"And my favorite band is actually Idles these days.", "fact/user/favorite_band", "Idles"},
	}
	// A held value said to be past is retracted, not kept as a former one.
	home := Fact{Subject: "user", Attribute: "home_city", Value: "Boston", Type: Semantic}
	if fs := Extract([]Message{user("m1", 1, "We used to live in Boston, before the move.")}, []Fact{home}); len(fs) != 1 || !fs[0].Retract || fs[0].Value != "Boston" {
		t.Errorf("want Boston retracted only, got\n%s", show(fs))
	}
	// A trip said to change replaces the trip it changes; a hobby given up
	// is retracted.
	trip := Fact{Subject: "user", Attribute: "trip/greece", Value: "Greece", Type: Semantic}
	for _, said := range []string{"Change of plans, we're going to Croatia instead.", "We're not going to Greece anymore, it's Croatia now.",
		"The Greece trip fell through, so we're going to Croatia."} {
		fs := Extract([]Message{user("m1", 1, said)}, []Fact{trip})
		ok := false
		for _, f := range fs {
			ok = ok || (f.Key() == "fact/user/trip/croatia" && f.Replaces == "Greece")
		}
		if !ok {
			t.Errorf("%q: want trip/croatia replacing Greece, got\n%s", said, show(fs))
		}
	}
	if fs := Extract([]Message{user("m1", 1, "We're also going to Croatia in June.")}, []Fact{trip}); len(fs) != 1 || fs[0].Replaces != "" {
		t.Errorf("a second trip replaces none: got\n%s", show(fs))
	}
	iceland := Fact{Subject: "user", Attribute: "trip/iceland", Value: "Iceland", Type: Semantic}
	if fs := Extract([]Message{user("m1", 1, "And the Iceland trip is off, we're doing Norway instead.")}, []Fact{iceland}); len(fs) != 1 || fs[0].Key() != "fact/user/trip/norway" || fs[0].Replaces != "Iceland" {
		t.Errorf("want trip/norway replacing Iceland, got\n%s", show(fs))
	}
	uke := Fact{Subject: "user", Attribute: "hobby/ukulele", Value: "ukulele", Type: Semantic}
	if fs := Extract([]Message{user("m1", 1, "I gave up the ukulele, my neighbours were thrilled.")}, []Fact{uke}); len(fs) != 1 || !fs[0].Retract {
		t.Errorf("want the ukulele retracted, got\n%s", show(fs))
	}
	if fs := Extract([]Message{user("m1", 1, "I quit smoking.")}, nil); len(fs) != 0 {
		t.Errorf("a habit quit, not held as a hobby, retracts nothing: got\n%s", show(fs))
	}
	for _, c := range fix {
		fs := Extract([]Message{user("m1", 1, c.said)}, []Fact{c.known})
		if len(fs) != 1 || fs[0].Key() != c.key || fs[0].Value != c.value || fs[0].Replaces != c.known.Value {
			t.Errorf("%q: want %s=%q replacing %q, got\n%s", c.said, c.key, c.value, c.known.Value, show(fs))
		}
	}
	known := []Fact{{Subject: "user", Attribute: "home_city", Value: "Portland", Type: Semantic}}
	fs := Extract([]Message{user("m1", 1, "Oh, I should correct something, I'm actually in Vancouver, Washington, not Portland.")}, known)
	if len(fs) != 1 || fs[0].Key() != "fact/user/home_city" || fs[0].Value != "Vancouver" || fs[0].Replaces != "Portland" {
		t.Errorf("want home_city=Vancouver replacing Portland, got\n%s", show(fs))
	}
}

// TestDevAnotherTime: the same kind of event on another date is one more
// time of it, not a correction of the first.
func TestDevAnotherTime(t *testing.T) {
	day := int64(1_688_000_000) * 1e9
	known := []Fact{{Subject: "user", Attribute: "went_to/pride_parade", Value: "LGBTQ+ pride parade", Type: Semantic, Date: "2023-06-28"}}
	fs := Extract([]Message{{ID: "m1", Seq: 1, User: true, Text: "I went to a pride parade last Friday and it was awesome.", Said: day}}, known)
	if len(fs) != 1 || fs[0].Correction || fs[0].Replaces != "" {
		t.Errorf("want one pride parade, no correction, got\n%s", show(fs))
	}
}

// TestDevOtherSubject: a sentence that leaves its subject out is not the
// user's after one about someone else, or in answer to a question about
// someone else.
func TestDevOtherSubject(t *testing.T) {
	for _, c := range []struct{ q, a string }{
		{"How's the family?", "Dad retired last year. Moved to Florida."},
		{"How's the family?", "Jake's great! Just got promoted to manager at Target."},
		{"How's your sister?", "Good, busy with the twins. Lives in Phoenix now."},
		{"How's your dad?", "Retired last year. Moved to Florida."},
		{"How's Jake doing?", "Great! Just got promoted to manager at Target."},
		{"What's new?", "My sister is visiting next week. Works as a nurse in Boston."},
	} {
		for _, f := range Extract([]Message{bot("q", 1, c.q), user("a", 2, c.a)}, nil) {
			if f.Subject == "user" {
				t.Errorf("%q %q: wrote the user's %s = %q", c.q, c.a, f.Attribute, f.Value)
			}
		}
	}
	fs := Extract([]Message{bot("q", 1, "How's the family?"), user("a", 2, "Busy week! Started a new job at Target.")}, nil)
	if len(fs) != 1 || fs[0].Key() != "fact/user/employer" {
		t.Errorf("a sentence after the user's own small talk is the user's: got\n%s", show(fs))
	}
}

// TestDevStopInstruction: an instruction to stop what one before asked
// replaces it.
func TestDevStopInstruction(t *testing.T) {
	old := Fact{Subject: "user", Attribute: "include_warm", Value: "Please always include warm-up sets.", Type: Procedural}
	fs := Extract([]Message{user("m1", 1, "And please stop including warm-up sets, I do my own.")}, []Fact{old})
	if len(fs) != 1 || fs[0].Type != Procedural || fs[0].Replaces != old.Value {
		t.Errorf("want the stop replacing %q, got\n%s", old.Value, show(fs))
	}
	other := Fact{Subject: "user", Attribute: "answer_french", Value: "Please always answer in French.", Type: Procedural}
	if fs := Extract([]Message{user("m1", 1, "Please stop using emojis.")}, []Fact{other}); len(fs) != 1 || fs[0].Replaces != "" {
		t.Errorf("a stop of something else replaces nothing: got\n%s", show(fs))
	}
}

// TestEmployerNamedWithItsKind: a name followed by what kind of place it
// is ("the Leeds city library") is the employer whole, not the town; a
// name followed by anything else stays the name.
func TestEmployerNamedWithItsKind(t *testing.T) {
	cases := []struct{ text, value string }{
		{"Also I started a new job at the Leeds city library in March, I run the children's section.", "Leeds city library"},
		{"I work at the Royal Free hospital, nights mostly.", "Royal Free hospital"},
		{"These days I'm at the Halton council office.", "Halton council office"},
		{"I work at Google in London.", "Google"},
	}
	for _, c := range cases {
		got := Extract([]Message{user("m1", 1, c.text)}, nil)
		var vals []string
		for _, f := range got {
			if f.Key() == "fact/user/employer" {
				vals = append(vals, f.Value)
			}
		}
		if len(vals) != 1 || vals[0] != c.value {
			t.Errorf("%q: want employer %q, got %q\n%s", c.text, c.value, vals, show(got))
		}
	}
}

// TestChattyStatements: facts said inside long chatty turns — after a
// discourse marker ("I should say"), after texting's "cos", with a
// modifier before the name or the place, with the age in words or a day
// after it.
func TestChattyStatements(t *testing.T) {
	cases := []struct{ text, key, value string }{
		{"Oh and I should mention, I'm allergic to bee stings, so no lavender please.", "fact/user/allergy/bee_stings", "bee stings"},
		{"no fancy places cos im allergic to sesame and it's in everything", "fact/user/allergy/sesame", "sesame"},
		{"I drive a battered old Volvo, it smells of dog.", "fact/user/car", "Volvo"},
		{"I've just turned thirty-six and my knees know it.", "fact/user/age", "thirty-six"},
		{"i turned 29 on friday and nobody remembered lol", "fact/user/age", "29"},
		{"I work nights at the Western General, it's exhausting.", "fact/user/employer", "Western General"},
		{"I work part time at a garden centre near the ring road.", "fact/user/employer", "garden centre"},
	}
	checkStatements(t, cases)
}

// TestEmployerChangedAnymore: "I'm not at X anymore" retracts X, and the
// place the same message says the user is at now replaces it.
func TestEmployerChangedAnymore(t *testing.T) {
	held := []Fact{{Subject: "user", Attribute: "employer", Value: "Brightwater", Type: Semantic}}
	got := Extract([]Message{user("m2", 2, "Big news, I'm not at Brightwater anymore! As of Monday I'm at Kestrel Labs, much shorter commute.")}, held)
	ok := false
	for _, f := range got {
		ok = ok || (f.Key() == "fact/user/employer" && f.Value == "Kestrel Labs" && f.Correction)
	}
	if !ok {
		t.Errorf("want employer Kestrel Labs replacing Brightwater, got\n%s", show(got))
	}
}

// TestChattyStatementsMore: a name in apposition ("our collie, Bramble,"),
// a move into a house in a town, "ended up moving to", a job without its
// article (non-native English), "an allergy to", a car traded for
// another, a pet introduced as "a little fella called …".
func TestChattyStatementsMore(t *testing.T) {
	cases := []struct{ text, key, value string }{
		{"Our collie, Bramble, chewed the hose again.", "fact/pet/collie/name", "Bramble"},
		{"We moved into a little flat in Gdansk in the spring, it has a balcony.", "fact/user/home_city", "Gdansk"},
		{"We ended up moving to Utrecht in the end, the rent was better.", "fact/user/home_city", "Utrecht"},
		{"I am pharmacist, I work in the hospital in the night.", "fact/user/job_title", "pharmacist"},
		{"I have an allergy to kiwi, so no fruit salad for me.", "fact/user/allergy/kiwi", "kiwi"},
		{"I have a nut allergy.", "fact/user/allergy/nut", "nut"},
		{"Also I traded the Fiesta in for a little Yaris last week.", "fact/user/car", "Yaris"},
		{"We finally got a rescue cat, a grumpy old fella called Mortimer.", "fact/pet/cat/name", "Mortimer"},
	}
	checkStatements(t, cases)
}

// TestNoPossessionOfEvents: "I have a quiz on Thursday", "I have an
// allergy to …" name no thing the user owns.
func TestNoPossessionOfEvents(t *testing.T) {
	for _, s := range []string{
		"We have a quiz on Thursday about plankton and I'm drowning.",
		"I have an allergy to kiwi, so no fruit salad for me.",
		"I've got a little workshop set up in the shed.",
	} {
		for _, f := range Extract([]Message{user("m1", 1, s)}, nil) {
			if f.Label == "has" || f.Rule == "has" {
				t.Errorf("%q: want no possession, got %s=%q", s, f.Key(), f.Value)
			}
		}
	}
}

// checkStatements checks that each case's text, said alone, gives the fact
// key=value among others.
func checkStatements(t *testing.T, cases []struct{ text, key, value string }) {
	t.Helper()
	for _, c := range cases {
		got := Extract([]Message{user("m1", 1, c.text)}, nil)
		found := false
		for _, f := range got {
			found = found || (f.Key() == c.key && f.Value == c.value)
		}
		if !found {
			t.Errorf("%q: want %s=%q, got\n%s", c.text, c.key, c.value, show(got))
		}
	}
}

// TestPetNamedInApposition: the pet got, then what it is and its name
// ("a dog last Saturday, a greyhound called Pebble").
func TestPetNamedInApposition(t *testing.T) {
	checkStatements(t, []struct{ text, key, value string }{
		{"We finally adopted a dog last Saturday, a greyhound called Pebble.", "fact/pet/dog/name", "Pebble"},
		{"We got a cat in May, a tabby named Socks.", "fact/pet/cat/name", "Socks"},
	})
}

// TestBareJobIsNoDoing: a job without its article is a job, not what the
// user is doing ("I'm contacting landlords").
func TestBareJobIsNoDoing(t *testing.T) {
	for _, s := range []string{
		"I'm contacting landlords and checking out neighborhoods to find the perfect spot.",
		"I'm painting houses this summer.",
		"I am tired, honestly.",
	} {
		for _, f := range Extract([]Message{user("m1", 1, s)}, nil) {
			if f.Attribute == "job_title" {
				t.Errorf("%q: want no job, got %s=%q (%s)", s, f.Key(), f.Value, f.Rule)
			}
		}
	}
}
