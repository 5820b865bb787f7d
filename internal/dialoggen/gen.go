package dialoggen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// gen builds one conversation. Every random choice comes from rng and the
// generator never iterates over a map, so a seed gives one conversation.
type gen struct {
	cfg   Config
	pl    *poolSet
	rng   *rand.Rand
	names [2]string

	msgs     []Message
	appends  []Span
	sittings []Sitting
	sitting  int
	day      time.Time // the sitting's day (midnight UTC)
	now      int64
	calls    int

	used    map[string]bool // values given out (a value is said once)
	people  [2]*person
	facts   []*fact
	pending []*fact // facts that will be corrected, in planting order
	cont    []Question
}

type person struct {
	count map[string]int // facts per kind
	used  map[string]bool
	pets  []*fact
	trips []*fact
	hobby []*fact
}

// fact is one planted fact and what the questions need of it.
type fact struct {
	owner int
	kind  string
	// q asks the value; qFixed asks it after a correction.
	q, qFixed string
	evidence  []int
	value     string
	// correction: next gives the new value, correct the turn's text.
	correctAt  int // the first sitting it may be corrected in
	correct    func(old, new string) string
	next       func() (string, bool)
	corrTurn   int
	superseded []string
	// time: qWhen asks when; the whenTurn holds key and the relative time.
	qWhen    string
	whenTurn int
	key      string
	rel      relTime
	sitting  int
	qEvent   string // the event in a how-long question
	eventDay time.Time
	// literal: the questions name the thing with the turn's words, not a
	// paraphrase.
	literal bool
	// also: other values the planting turns state (Planted.Also).
	also []string
}

// literalShare is the share of facts whose questions use the turn's own
// words for the thing asked about; the rest paraphrase ("pottery class"
// becomes "ceramics workshop"). Real users do both.
const literalShare = 0.4

// qterm is how the questions of a fact name p, and whether that is the
// turn's own words.
func (g *gen) qterm(p pair) (string, bool) {
	if g.rng.Float64() < literalShare {
		return p.ev, true
	}
	return p.q, false
}

type relTime struct {
	phrase string
	days   int
	answer string // %s: the sitting's date
}

var pastTimes = []relTime{
	{"yesterday", -1, "the day before %s"}, {"two days ago", -2, "two days before %s"}, {"last week", -7, "the week before %s"},
	{"last weekend", -5, "the weekend before %s"}, {"a few days ago", -3, "a few days before %s"}, {"this morning", 0, "on %s"},
	{"last month", -30, "the month before %s"}, {"earlier this week", -2, "earlier in the week of %s"},
}

var futureTimes = []relTime{
	{"tomorrow", 1, "the day after %s"}, {"next week", 7, "the week after %s"}, {"next month", 30, "the month after %s"},
	{"in two weeks", 14, "two weeks after %s"}, {"this coming weekend", 4, "the weekend after %s"},
}

func newGen(cfg Config) *gen {
	g := &gen{cfg: cfg, pl: poolsOf(cfg.Pools), rng: newRand(cfg.Seed), used: map[string]bool{}}
	names := g.pl.speakerNames
	i := g.rng.IntN(len(names))
	j := (i + 1 + g.rng.IntN(len(names)-1)) % len(names)
	g.names = [2]string{names[i], names[j]}
	for k := range g.people {
		g.people[k] = &person{count: map[string]int{}, used: map[string]bool{}}
	}
	return g
}

func (g *gen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// unique returns a value of pool not given out yet.
func (g *gen) unique(pool []string) (string, bool) {
	for _, k := range g.rng.Perm(len(pool)) {
		if v := pool[k]; !g.used[v] {
			g.used[v] = true
			return v, true
		}
	}
	return "", false
}

// pickPair returns a pair of pool the person has not used.
func (g *gen) pickPair(p *person, pool []pair) (pair, bool) {
	for _, k := range g.rng.Perm(len(pool)) {
		if !p.used[pool[k].ev] {
			p.used[pool[k].ev] = true
			return pool[k], true
		}
	}
	return pair{}, false
}

// next is the speaker of the next turn (strict alternation).
func (g *gen) next() int {
	if len(g.msgs) == 0 {
		return 0
	}
	return 1 - g.msgs[len(g.msgs)-1].Speaker
}

func roleOf(speaker int) memoryv1.Role {
	if speaker == 0 {
		return memoryv1.Role_ROLE_USER
	}
	return memoryv1.Role_ROLE_ASSISTANT
}

// add appends one message to the open append.
func (g *gen) add(m Message) int {
	m.Index, m.Sitting = len(g.msgs), g.sitting
	g.now += int64(15+g.rng.IntN(60)) * int64(time.Second)
	m.UnixNano = g.now
	g.msgs = append(g.msgs, m)
	return m.Index
}

// say is one turn, its own append request.
func (g *gen) say(speaker int, text string) int {
	start := len(g.msgs)
	i := g.add(Message{Speaker: speaker, Role: roleOf(speaker), Content: text})
	g.appends = append(g.appends, Span{start, len(g.msgs)})
	return i
}

func (g *gen) run() {
	day := time.Unix(0, g.cfg.StartUnixNano).UTC().Truncate(24 * time.Hour)
	for s := range g.cfg.Sittings {
		if s > 0 {
			day = day.AddDate(0, 0, 3+g.rng.IntN(16))
		}
		g.sitting, g.day = s, day
		g.now = day.Add(time.Duration(8+g.rng.IntN(13))*time.Hour + time.Duration(g.rng.IntN(60))*time.Minute).UnixNano()
		start := len(g.msgs)
		mentioned := g.rng.Float64() < 0.6
		g.sittings = append(g.sittings, Sitting{UnixNano: g.now, DateForms: dateForms(day), Mentioned: mentioned})
		g.greeting(mentioned)
		episode := g.rng.Float64() < 0.45
		// Facts are spread over the sittings: at most perSitting each.
		perSitting, planted := (maxFacts()+g.cfg.Sittings-1)/g.cfg.Sittings, len(g.facts)
		for len(g.msgs)-start < g.cfg.TurnsPerSitting {
			switch r := g.rng.Float64(); {
			case episode && len(g.msgs)-start > g.cfg.TurnsPerSitting/3:
				episode = false
				g.episode()
			case r < 0.12 && g.correction():
			case r < 0.62 && len(g.facts)-planted < perSitting && g.event():
			default:
				g.smallTalk()
			}
		}
		g.goodbye()
		g.sittings[s].Span = Span{start, len(g.msgs)}
	}
}

func (g *gen) greeting(mentioned bool) {
	sp := g.next()
	other := g.names[1-sp]
	if mentioned {
		g.say(sp, fmt.Sprintf("Hey %s! Can you believe it's already %s? %s", other, dayLabel(g.day), g.smallLine()))
	} else {
		g.say(sp, fmt.Sprintf("%s %s! %s", g.pick([]string{"Hi", "Hey", "Hello again,", "Morning,"}), other, g.smallLine()))
	}
	g.say(1-sp, g.pick([]string{"So good to hear from you!", "Hey you! Missed our chats.", "Oh hi! Perfect timing."})+" "+g.reply())
}

func (g *gen) goodbye() {
	sp := g.next()
	g.say(sp, g.pick([]string{"Anyway, I should run. Talk soon!", "Okay, dinner's calling. Bye for now!", "I have to hop off, but this was fun.", "Gotta go, catch you later!"}))
	g.say(1-sp, g.pick([]string{"Bye! Take care.", "Talk soon!", "See you, have a good one!", "Later! Don't be a stranger."}))
}

var (
	weatherAdj = []string{"gloomy", "sticky", "drizzly", "windy", "muggy", "crisp", "bleak", "gorgeous", "unpredictable", "foggy"}
	dishes     = []string{"lemon risotto", "chickpea curry", "shakshuka", "banana bread", "miso soup", "veggie lasagna", "pad thai", "tomato galette", "mushroom stroganoff", "black bean chili", "carrot cake", "fish curry"}
	dishResult = []string{"surprisingly good", "a bit burnt", "way too salty", "better than takeout", "edible, barely", "gone in ten minutes"}
	showGenre  = []string{"detective", "sci-fi", "baking competition", "nature documentary", "period drama", "true crime", "fantasy", "sitcom", "heist", "reality dating"}
	workAdj    = []string{"hectic", "slow", "weird", "intense", "quiet", "chaotic", "oddly calm"}
	workThings = []string{"meetings", "emails", "spreadsheets", "training sessions", "audits", "phone calls", "paperwork"}
	habits     = []string{"read before bed", "drink more water", "journal at night", "stretch in the morning", "call old friends", "walk after dinner", "cook at home", "put my phone away"}
	bookGenre  = []string{"mystery", "fantasy", "romance", "thriller", "historical", "sci-fi", "memoir"}
	recommend  = []string{"coworker", "neighbor", "barista", "roommate", "book club", "dentist"}
	weekend    = []string{"cleaned the apartment", "slept in", "wandered the farmers market", "reorganized my closet", "binged movies", "browsed a flea market", "did absolutely nothing", "repainted a shelf"}
	music      = []string{"an old soul playlist", "a jazz record", "some cheesy pop", "movie soundtracks", "a podcast about volcanoes", "rainy-day lo-fi"}
	replyAdj   = []string{"lovely", "rough", "exhausting", "fun", "relaxing", "wild", "cozy", "stressful"}
)

// smallLine is one sentence of small talk.
func (g *gen) smallLine() string { return g.smallLineOf(g.rng.IntN(numSmallLines)) }

const numSmallLines = 14

func (g *gen) smallLineOf(k int) string {
	switch k {
	case 0:
		return fmt.Sprintf("The weather here has been so %s lately, I keep forgetting an umbrella.", g.pick(weatherAdj))
	case 1:
		return fmt.Sprintf("I tried making %s last night and it turned out %s.", g.pick(dishes), g.pick(dishResult))
	case 2:
		return fmt.Sprintf("Have you seen that %s series everyone's talking about? I watched %s episodes in one go.", g.pick(showGenre), g.pick([]string{"three", "five", "six", "all the"}))
	case 3:
		return fmt.Sprintf("Work has been %s this week, lots of %s.", g.pick(workAdj), g.pick(workThings))
	case 4:
		return fmt.Sprintf("I've been trying to %s more, and it actually helps.", g.pick(habits))
	case 5:
		return fmt.Sprintf("I just started a %s novel my %s recommended.", g.pick(bookGenre), g.pick(recommend))
	case 6:
		return fmt.Sprintf("This weekend I mostly %s.", g.pick(weekend))
	case 7:
		return fmt.Sprintf("I've had %s on repeat all week.", g.pick(music))
	case 8:
		return fmt.Sprintf("My commute was a mess %s, the %s was %s again.", g.pick([]string{"on Monday", "twice this week", "all week", "this afternoon"}), g.pick([]string{"tram", "bus", "train", "ferry", "highway"}), g.pick([]string{"late", "packed", "cancelled", "crawling"}))
	case 9:
		return fmt.Sprintf("The %s next door %s, so I %s.", g.pick([]string{"neighbors", "people", "family", "students"}), g.pick([]string{"started renovating at seven", "threw a loud party", "got a drum set", "are repainting their fence"}), g.pick([]string{"barely slept", "went for a long walk", "put on headphones", "just laughed about it"}))
	case 10:
		return fmt.Sprintf("My %s finally %s, which made my whole %s.", g.pick([]string{"tomato plants", "basil", "lemon tree", "balcony herbs", "succulents"}), g.pick([]string{"started sprouting", "survived the frost", "got flowers", "perked up"}), g.pick([]string{"morning", "day", "week"}))
	case 11:
		return fmt.Sprintf("I found a %s coffee place near %s that does a great %s.", g.pick([]string{"tiny", "new", "hidden", "quirky"}), g.pick([]string{"the library", "my office", "the station", "the park"}), g.pick([]string{"oat latte", "cold brew", "cardamom bun", "cinnamon roll"}))
	case 12:
		return fmt.Sprintf("The %s in my kitchen %s again, so that's my %s sorted.", g.pick([]string{"faucet", "fridge light", "cabinet door", "oven timer"}), g.pick([]string{"broke", "started leaking", "stopped working", "fell off"}), g.pick([]string{"weekend", "evening", "Saturday"}))
	default:
		return fmt.Sprintf("I went to %s at the gym and %s.", g.pick([]string{"a spin session", "a new stretching routine", "the early swim slot", "a rowing workout"}), g.pick([]string{"could barely walk after", "actually enjoyed it", "left halfway through", "felt amazing"}))
	}
}

// reply is a listener's answer to small talk.
func (g *gen) reply() string {
	first := g.pick([]string{"Haha, I totally get that.", "Same here, honestly.", "Ugh, I feel you.", "No way!", "That's so relatable.", "Ha, classic."})
	if g.rng.IntN(3) == 0 {
		first = fmt.Sprintf("Oh, that sounds %s!", g.pick(replyAdj))
	}
	if g.rng.IntN(3) > 0 {
		first += " " + g.smallLines(1+g.rng.IntN(2))
	}
	if g.rng.IntN(4) == 0 {
		return first
	}
	return first + " " + g.pick([]string{"I've been meaning to do more of that myself.", "We should compare notes sometime.", "Let me know how it goes.",
		"I could use a bit of that right now.", "Honestly, you deserve a break.", "Send me a picture next time!", "Mine has been a blur, to be honest."})
}

// smallTalk is one to three turns (an odd count changes who speaks next,
// so both speakers tell their news).
func (g *gen) smallTalk() {
	sp := g.next()
	g.say(sp, g.smallLines(2+g.rng.IntN(3)))
	if g.rng.IntN(3) == 0 {
		return
	}
	g.say(1-sp, g.reply())
	if g.rng.IntN(4) == 0 {
		g.say(sp, g.reply())
	}
}

// smallLines is n sentences of small talk on different subjects.
func (g *gen) smallLines(n int) string {
	var b strings.Builder
	for i, k := range g.rng.Perm(numSmallLines)[:n] {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(g.smallLineOf(k))
	}
	return b.String()
}

func (g *gen) opener() string {
	return g.pick([]string{"Guess what?", "Oh, big news:", "So,", "Quick update:", "You won't believe it, but", "Okay, so", "Random, but", "Oh! Before I forget,"})
}

func (g *gen) cheer() string {
	if g.rng.IntN(4) > 0 {
		return g.cheer1() + " " + g.smallLines(1+g.rng.IntN(2))
	}
	return g.cheer1()
}

// aside is a sentence of colour after a fact, empty at times.
func (g *gen) aside() string {
	if g.rng.IntN(4) == 0 {
		return ""
	}
	return " " + g.smallLine() + " " + g.pick([]string{"Honestly, it's been a whirlwind.", "I'm still processing it, to be honest.", "Best decision I've made all year, I think.",
		"My whole weekend revolved around it.", "I couldn't stop smiling about it.", "It still feels a bit unreal.", "I told basically everyone at work.",
		"We'll see how it goes, fingers crossed.", "I was so nervous beforehand, you have no idea."})
}

func (g *gen) cheer1() string {
	return g.pick([]string{"That's amazing, congrats!", "So happy for you!", "Wow, that's huge!", "Oh, I love that.", "That's wonderful news."}) + " " +
		g.pick([]string{"You have to tell me everything.", "Keep me posted!", "That must feel great.", "I'm a little jealous, honestly.", ""})
}

func (g *gen) sympathy() string {
	return g.pick([]string{"Oh no, that sounds painful!", "Ouch, I'm so sorry.", "That's awful, take it easy."}) + " " +
		g.pick([]string{"Let me know if you need anything.", "Rest up, seriously.", "Don't push it too soon."})
}

// dated fills the time fields of f for a turn said now.
func (g *gen) dated(f *fact, turn int, key string, rel relTime) {
	f.whenTurn, f.key, f.rel, f.sitting = turn, key, rel, g.sitting
	f.eventDay = g.day.AddDate(0, 0, rel.days)
}

func (g *gen) relTime(xs []relTime) relTime { return xs[g.rng.IntN(len(xs))] }
