package projections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// This file is a small, deterministic evaluation of session search: a
// generator of long two-person conversations (sittings on different days,
// named speakers, imported with said_unix_nano), facts planted in them,
// questions whose answer turn is known, and recall@5/@10 of that turn for
// plain BM25 (the ranking before schema 5) beside each part of the new
// ranking, in one run:
//
//	go test -run TestSearchEval -v ./projections/
//
// It mirrors the failure modes found on a long-conversation benchmark
// (issue 8): chit-chat turns full of stop words, questions that name the
// speaker ("What did Melanie paint?"), answers that depend on the day.
// The generator is ours and small; the full benchmark lives elsewhere. No
// threshold is asserted on quality: the test checks only that every
// question has its answer in the corpus.

// evalFact is a fact one speaker states in one turn, with the questions
// about it. {n} is the speaker's name.
type evalFact struct {
	evidence string
	what     string   // a question the evidence answers
	when     string   // "When did {n} …?"
	topic    []string // words other turns use around the topic
}

var evalFacts = []evalFact{
	{"I finally went to that pottery class on Saturday and made a little blue bowl!", "What did {n} make at the pottery class?", "When did {n} go to the pottery class?", []string{"pottery", "class"}},
	{"We adopted a puppy last week, a golden retriever named Oscar.", "What is the name of {n}'s puppy?", "When did {n} adopt a puppy?", []string{"puppy", "dog"}},
	{"I ran a charity 5k for the animal shelter this morning.", "What race did {n} run for the animal shelter?", "When did {n} run the charity race?", []string{"run", "shelter"}},
	{"I've started taking violin lessons, my teacher is really patient.", "What instrument is {n} learning?", "When did {n} start violin lessons?", []string{"music", "lessons"}},
	{"My grandmother turned ninety and we threw her a surprise party in Lisbon.", "Where did {n} throw a party for their grandmother?", "When did {n}'s grandmother turn ninety?", []string{"party", "grandmother"}},
	{"I painted a sunset over the lake, it's hanging in my kitchen now.", "What did {n} paint?", "When did {n} paint the sunset?", []string{"painting", "lake"}},
	{"I just got back from a camping trip at Yosemite with my kids.", "Where did {n} go camping?", "When did {n} go camping with the kids?", []string{"camping", "trip"}},
	{"I signed up for a Spanish course at the community college.", "What language course did {n} sign up for?", "When did {n} sign up for the Spanish course?", []string{"course", "college"}},
	{"The bakery where I work started selling my lemon cake.", "Which cake of {n}'s does the bakery sell?", "When did the bakery start selling {n}'s cake?", []string{"bakery", "cake"}},
	{"I read The Night Circus last month and couldn't put it down.", "What book did {n} read?", "When did {n} read The Night Circus?", []string{"book", "reading"}},
	{"My sister is getting married in October in Vermont.", "Where is {n}'s sister getting married?", "When is {n}'s sister getting married?", []string{"wedding", "sister"}},
	{"I've been volunteering at the food bank every Tuesday.", "Where does {n} volunteer?", "When did {n} start volunteering at the food bank?", []string{"volunteering", "food"}},
	{"We planted tomatoes and basil in the backyard garden.", "What did {n} plant in the garden?", "When did {n} plant tomatoes?", []string{"garden", "plants"}},
	{"I got promoted to team lead at the hospital.", "What job did {n} get promoted to?", "When did {n} get promoted?", []string{"work", "hospital"}},
	{"I joined a climbing gym and did my first bouldering session.", "What sport did {n} try at the gym?", "When did {n} join the climbing gym?", []string{"gym", "climbing"}},
	{"My car broke down on the highway, the transmission is gone.", "What happened to {n}'s car?", "When did {n}'s car break down?", []string{"car", "highway"}},
	{"I'm training for the Chicago marathon in the fall.", "Which marathon is {n} training for?", "When did {n} start training for the marathon?", []string{"marathon", "training"}},
	{"I made my first batch of sourdough bread this weekend.", "What did {n} bake?", "When did {n} bake sourdough bread?", []string{"bread", "baking"}},
	{"I went to a Taylor Swift concert with my best friend.", "Whose concert did {n} go to?", "When did {n} go to the concert?", []string{"concert", "music"}},
	{"We moved into a new apartment near the river.", "Where is {n}'s new apartment?", "When did {n} move into the new apartment?", []string{"apartment", "moving"}},
	{"I've been learning to knit and made a scarf for my dad.", "What did {n} knit for their dad?", "When did {n} knit the scarf?", []string{"knitting", "dad"}},
	{"I took my kids to the aquarium and they loved the sharks.", "What did {n}'s kids love at the aquarium?", "When did {n} take the kids to the aquarium?", []string{"aquarium", "kids"}},
	{"I started therapy sessions and they've really helped my anxiety.", "What has helped {n} with anxiety?", "When did {n} start therapy?", []string{"therapy", "stress"}},
	{"I found an old photo album from my childhood in the attic.", "What did {n} find in the attic?", "When did {n} find the photo album?", []string{"photos", "attic"}},
	{"I bought a used kayak and took it out on the bay.", "What did {n} buy to use on the bay?", "When did {n} buy the kayak?", []string{"kayak", "water"}},
	{"My band played our first gig at a bar downtown.", "Where did {n}'s band play their first gig?", "When did {n}'s band play the first gig?", []string{"band", "gig"}},
	{"I passed my driving test on the second try!", "Did {n} pass the driving test?", "When did {n} pass the driving test?", []string{"driving", "test"}},
	{"I adopted two cats from the shelter, Luna and Milo.", "What are the names of {n}'s cats?", "When did {n} adopt the cats?", []string{"cats", "pets"}},
	{"I went hiking in the Rockies and saw a moose.", "What animal did {n} see while hiking?", "When did {n} go hiking in the Rockies?", []string{"hiking", "mountains"}},
	{"I'm writing a children's book about a brave turtle.", "What is {n}'s children's book about?", "When did {n} start writing the children's book?", []string{"writing", "book"}},
	{"We celebrated our anniversary at an Italian restaurant by the harbor.", "Where did {n} celebrate the anniversary?", "When did {n} celebrate the anniversary?", []string{"anniversary", "restaurant"}},
	{"I've been going to a support group for new parents.", "What kind of support group does {n} attend?", "When did {n} go to the support group?", []string{"support", "group"}},
	{"I won second place in the photography contest with a picture of a heron.", "What did {n}'s winning photo show?", "When did {n} win the photography contest?", []string{"photography", "contest"}},
	{"I redecorated my bedroom with green wallpaper.", "What color is the wallpaper in {n}'s bedroom?", "When did {n} redecorate the bedroom?", []string{"bedroom", "decorating"}},
	{"My son broke his arm playing soccer.", "How did {n}'s son break his arm?", "When did {n}'s son break his arm?", []string{"soccer", "son"}},
	{"I started a podcast about local history.", "What is {n}'s podcast about?", "When did {n} start the podcast?", []string{"podcast", "history"}},
	{"I went to a yoga retreat in Bali for a week.", "Where was {n}'s yoga retreat?", "When did {n} go to the yoga retreat?", []string{"yoga", "retreat"}},
	{"I learned to make sushi at a cooking class.", "What did {n} learn to make at the cooking class?", "When did {n} take the cooking class?", []string{"cooking", "class"}},
	{"I finished a jigsaw puzzle with a thousand pieces.", "How many pieces did {n}'s puzzle have?", "When did {n} finish the jigsaw puzzle?", []string{"puzzle", "pieces"}},
	{"We're saving up to buy a house in the suburbs.", "What is {n} saving up for?", "When did {n} start saving for a house?", []string{"house", "saving"}},
}

// Chit-chat and distractors. {o} is the other speaker's name, {t} a topic word.
var (
	evalFiller = []string{
		"Hey {o}! How have you been?", "What did you do this weekend?", "That's so cool, I'm really happy for you!",
		"Did you have a good time?", "I know, right? It was so much fun.", "What are you up to these days?",
		"Work has been busy lately, lots of meetings.", "How are the kids doing?", "I'm doing great, thanks for asking!",
		"Did you get some rest?", "What do you think about that?", "That sounds amazing, tell me more!",
		"I'll let you know how it goes.", "Take care, talk to you soon!", "It was nice catching up with you, {o}.",
		"Have you been up to anything fun?", "Oh wow, what was that like?", "I can't believe it's already been a month.",
		"You should do what makes you happy.", "Thanks, I really appreciate it!", "Did you see the game last night?",
		"The weather has been lovely this week.", "I have been so tired, I need a vacation.", "What made you decide to do that?",
		"I'm so proud of you, {o}!", "How did it go?", "Do you have any plans for the weekend?", "What did you think of it?",
		"That must have been hard for you.", "Sounds like you had a great time!", "When did you get back?",
		"Where did you find the time?", "Who did you go with?", "Yes! I did, and it was great.",
	}
	// evalLife: everyday turns with the content words questions use too
	// (made, went, started, name, kids, new, first, class, bought...).
	evalLife = []string{
		"I made dinner for the kids and we watched a movie.", "We went to the park after school, the kids had a blast.",
		"I started a new show on TV, it's pretty good so far.", "My boss finally learned my name, ha!",
		"I bought new shoes for work, my old ones were falling apart.", "The kids made a mess in the kitchen again.",
		"We went to my parents' house for the weekend.", "My first week at the new job was exhausting.",
		"I took the dog to the vet, he's fine.", "My friend from college came to visit last week.",
		"I had a class at night so I'm pretty tired.", "We should make plans to get together soon.",
		"I went shopping and bought way too much stuff.", "The house has been so quiet since the kids went to camp.",
		"I finally cleaned the garage, it took all day.", "My dad called, he wants to visit in the spring.",
		"I tried a new recipe, it turned out okay.", "We got takeout and played board games all night.",
		"I've been trying to go to bed earlier.", "Work started early today, I had to leave at six.",
		"My sister sent me pictures of her trip.", "I'm thinking about taking a class this summer.",
		"I went for a long walk by the water this morning.", "My son has a school play next week.",
		"I lost my keys again and found them in the fridge.", "We watched the game at a friend's place.",
		"My daughter wants a pet so badly.", "I finally finished that big project at work.",
		"I went to the store and forgot what I needed.", "The neighbors had a party and it was loud.",
	}
	evalDistract = []string{
		"Did you ever try {t}?", "Ooh, {t} sounds fun! What did you do today?", "My friend loves {t}, I should try it sometime.",
		"How was the {t}?", "I saw an ad about {t} the other day.", "Wow, {t}! How did you feel about it?",
		"What do you like most about {t}?", "I was never into {t} myself.",
	}
	// evalAgain: the speaker of a fact comes back to its topic on another
	// day; a question that names the fact's day must tell them apart.
	evalAgain = []string{
		"I might go back to the {t} thing again next month, we'll see.", "Still thinking about the {t} from before, it was a good day.",
		"Someone asked me about the {t} again today.",
	}
	evalNames = []string{"Caroline", "Melanie", "Jon", "Gina", "Audrey", "Andrew", "Tim", "John", "Maria", "Joanna",
		"Nate", "Evan", "Sam", "Deborah", "Jolene", "Calvin", "Dave", "Priya", "Tomas", "Yuki"}
)

// evalQuestion is a question, its category and its answer turn.
type evalQuestion struct {
	sessionID string // where it is asked (USER scope: the whole conversation)
	text      string
	kind      string // "what", "when", "dated"
	answer    string // message id
	answerSID string // its session
}

// evalCorpus generates conversations conversations of sittings sittings
// each (two facts per sitting) into a log, and their questions.
func evalCorpus(t testing.TB, conversations, sittings int) (*logBuilder, []evalQuestion) {
	l := newLogBuilder(t)
	var qs []evalQuestion
	dateFormats := []string{"2 January 2006", "January 2, 2006", "2006-01-02"}
	for c := 0; c < conversations; c++ {
		rng := rand.New(rand.NewPCG(uint64(c)+100, 7))
		names := [2]string{evalNames[(2*c)%len(evalNames)], evalNames[(2*c+1)%len(evalNames)]}
		user := fmt.Sprintf("conv%02d", c)
		facts := rng.Perm(len(evalFacts))
		day := time.Date(2023, 1, 8+rng.IntN(20), 0, 0, 0, 0, time.UTC)
		type planted struct {
			fact, speaker int
			sid, id       string
			day           time.Time
		}
		var plantedFacts []planted
		var last string
		for st := 0; st < sittings; st++ {
			sid := fmt.Sprintf("c%02d-s%02d", c, st)
			last = sid
			l.create(sid, user, "")
			day = day.AddDate(0, 0, 3+rng.IntN(12))
			at := day.Add(time.Duration(9+rng.IntN(10)) * time.Hour)
			// The turns of the sitting: (speaker, text, fact index or -1).
			type turn struct {
				speaker int
				text    string
				fact    int
			}
			var turns []turn
			chat := func() string {
				if rng.IntN(2) == 0 {
					return evalLife[rng.IntN(len(evalLife))]
				}
				return evalFiller[1+rng.IntN(len(evalFiller)-1)]
			}
			sayf := func(sp int, text string, fact int) {
				text = strings.ReplaceAll(text, "{o}", names[1-sp])
				turns = append(turns, turn{sp, text, fact})
			}
			sp := rng.IntN(2)
			sayf(sp, evalFiller[0], -1)
			for k := 0; k < 2 && 2*st+k < len(facts); k++ {
				f := facts[(2*st+k)%len(facts)]
				who := rng.IntN(2)
				for range 2 + rng.IntN(5) {
					sayf(rng.IntN(2), chat(), -1)
				}
				// The other speaker touches the topic first, sometimes.
				if rng.IntN(2) == 0 {
					topic := evalFacts[f].topic[rng.IntN(2)]
					sayf(1-who, strings.ReplaceAll(evalDistract[rng.IntN(len(evalDistract))], "{t}", topic), -1)
				}
				sayf(who, evalFacts[f].evidence, f)
				topic := evalFacts[f].topic[rng.IntN(2)]
				sayf(1-who, strings.ReplaceAll(evalDistract[rng.IntN(len(evalDistract))], "{t}", topic), -1)
				sayf(who, chat(), -1)
			}
			for range 3 + rng.IntN(6) {
				sayf(rng.IntN(2), chat(), -1)
			}
			// Earlier topics come back: distractors from both speakers.
			for range 2 {
				if len(plantedFacts) == 0 {
					break
				}
				p := plantedFacts[rng.IntN(len(plantedFacts))]
				topic := evalFacts[p.fact].topic[rng.IntN(2)]
				if rng.IntN(2) == 0 {
					sayf(p.speaker, strings.ReplaceAll(evalAgain[rng.IntN(len(evalAgain))], "{t}", topic), -1)
				} else {
					sayf(1-p.speaker, strings.ReplaceAll(evalDistract[rng.IntN(len(evalDistract))], "{t}", topic), -1)
				}
			}
			pairs := make([]string, 0, 2*len(turns))
			said := make([]int64, len(turns))
			for i, tu := range turns {
				pairs = append(pairs, names[tu.speaker], tu.text)
				said[i] = at.Add(time.Duration(i) * time.Minute).UnixNano()
			}
			ev := namedMsgs(l, sid, said, pairs...)
			for i, tu := range turns {
				if tu.fact >= 0 {
					plantedFacts = append(plantedFacts, planted{tu.fact, tu.speaker, sid, ev.Messages[i].GetId(), day})
				}
			}
			l.add(sid, ev)
		}
		for i, p := range plantedFacts {
			f := evalFacts[p.fact]
			n := names[p.speaker]
			var q evalQuestion
			switch i % 3 {
			case 0:
				q = evalQuestion{text: strings.ReplaceAll(f.what, "{n}", n), kind: "what"}
			case 1:
				q = evalQuestion{text: strings.ReplaceAll(f.when, "{n}", n), kind: "when"}
			default:
				topic := f.topic[0]
				q = evalQuestion{text: fmt.Sprintf("What did %s say about the %s on %s?", n, topic,
					p.day.Format(dateFormats[i%len(dateFormats)])), kind: "dated"}
			}
			q.sessionID, q.answer, q.answerSID = last, p.id, p.sid
			qs = append(qs, q)
		}
	}
	return l, qs
}

// evalRecall runs the questions with rk and returns recall@5, recall@10
// and MRR@10 (mean reciprocal rank of the answer, 0 beyond 10) per question
// kind ("" = all).
func evalRecall(t testing.TB, s *Store, qs []evalQuestion, rk ranking) map[string][3]float64 {
	hits5, hits10, n := map[string]int{}, map[string]int{}, map[string]int{}
	rr := map[string]float64{}
	for _, q := range qs {
		hits, err := s.search(q.sessionID, scopeUser, q.text, 10, rk)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"", q.kind} {
			n[k]++
			for i, h := range hits {
				if h.GetMessage().GetId() == q.answer {
					if i < 5 {
						hits5[k]++
					}
					hits10[k]++
					rr[k] += 1 / float64(i+1)
				}
			}
		}
	}
	out := map[string][3]float64{}
	for k, c := range n {
		out[k] = [3]float64{float64(hits5[k]) / float64(c), float64(hits10[k]) / float64(c), rr[k] / float64(c)}
	}
	return out
}

// evalVariants are the rankings compared: plain BM25 (before), each part
// added in turn, the default (after), and the idf floor instead of stop
// words.
var evalVariants = []struct {
	name string
	rk   ranking
}{
	{"plain BM25 (before)", plainRanking},
	{"stop words dropped", ranking{dropStop: true}},
	{"idf floor 1.6 (df > ~20%)", ranking{idfFloor: 1.6}},
	{"idf floor 2.3 (df > ~10%)", ranking{idfFloor: 2.3}},
	{"stop + speaker", ranking{dropStop: true, speaker: 1}},
	{"stop + speaker + day", ranking{dropStop: true, speaker: 1, dates: 1}},
	{"stop + proximity", ranking{dropStop: true, proximity: 1}},
	{"stop+speaker+day+proximity (schema 6)", ranking{dropStop: true, speaker: 1, dates: 1, proximity: 1}},
	{"default − recency", func() ranking { r := defaultRanking; r.recency = 0; return r }()},
	{"default − dedupe", func() ranking { r := defaultRanking; r.dedupe = false; return r }()},
	{"default − questions", func() ranking { r := defaultRanking; r.question = 0; return r }()},
	{"default (after)", defaultRanking},
	{"idf 2.3+speaker+day+proximity", ranking{idfFloor: 2.3, speaker: 1, dates: 1, proximity: 1}},
	{"stop+idf 2.3+speaker+day+proximity", ranking{dropStop: true, idfFloor: 2.3, speaker: 1, dates: 1, proximity: 1}},
}

func TestSearchEval(t *testing.T) {
	l, qs := evalCorpus(t, 10, 20)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	// Every answer is in the corpus, said by the speaker the question names.
	for _, q := range qs {
		m, err := s.MessagesByID(q.answerSID, []string{q.answer})
		if err != nil || len(m) != 1 || !strings.Contains(q.text, m[0].GetName()) {
			t.Fatalf("question %q: answer %s not found (%v, %v)", q.text, q.answer, m, err)
		}
	}
	var b strings.Builder
	msgs := 0
	for _, r := range l.recs {
		for _, ev := range r.Events {
			if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
				msgs += len(ma.GetMessages())
			}
		}
	}
	fmt.Fprintf(&b, "%d messages, %d questions (what %d, when %d, dated %d)\n", msgs, len(qs),
		count(qs, "what"), count(qs, "when"), count(qs, "dated"))
	fmt.Fprintf(&b, "%-46s %9s %9s %7s   %s\n", "ranking", "recall@5", "recall@10", "MRR@10", "recall@10: what / when / dated")
	for _, v := range evalVariants {
		r := evalRecall(t, s, qs, v.rk)
		fmt.Fprintf(&b, "%-46s %9.3f %9.3f %7.3f   %.3f / %.3f / %.3f\n", v.name, r[""][0], r[""][1], r[""][2], r["what"][1], r["when"][1], r["dated"][1])
	}
	t.Log("\n" + b.String())
}

func count(qs []evalQuestion, kind string) int {
	n := 0
	for _, q := range qs {
		if q.kind == kind {
			n++
		}
	}
	return n
}
