package consolidate

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// rule reads one kind of statement. Its regexp's group "v" is where the
// value starts; the rule's words before it are anchored at the start of
// a clause (anchored) and must not be hedged.
type rule struct {
	name string
	re   *regexp.Regexp
	k    kind
	// subj: "user", "we", or "person": the person group (personAlt) names
	// the subject, a relative or a pet ("my son", "our beagle, Biscuit",
	// or a name known as one).
	subj string
	// attr: the attribute; "%" is replaced by the value's key segment,
	// "@" by the attr group's.
	attr string
	typ  Type
	conf float64
	list bool // the value may be a list: one fact per item
	// head: the value's last word (or two) must be one of these.
	head map[string]bool
	// derive turns what was read into the value kept ("piano" → "piano
	// teacher"); "" drops it.
	derive func(v string) string
	// noDate: the value is no event, a date near it is not its date.
	noDate bool
	// needDate: a statement without a date is no fact of this rule (a
	// plan).
	needDate bool
	// weak: the rule's own words hold a negation; only a condition
	// hedges it.
	weak bool
	// free: the rule's words may sit anywhere in their clause ("I live
	// here with my son Leo" names the son); only a hedge stops them.
	free bool
	// future: the statement speaks of what is to come ("we decided to
	// ship on Friday": the next Friday).
	future bool
	// gate: words a sentence must hold for the rule to be tried (a cheap
	// test before the regexp); needs: one of these must be in the
	// lower-cased sentence too (none: no such test).
	gate  gate
	needs []string
}

// needles lists, per rule, words one of which its regexp cannot match
// without (lower case): the cheap test that spares most sentences most
// regexps. A rule missing here is always tried.
var needles = map[string]string{
	"name": "name|call me|go by|called", "name-intro": "i'm|i am", "age": "i'm|i am|turned",
	"job": " a | an | the ", "job-been": " a | an ", "new-role": " new ", "rel-is-name": " is ",
	"work-as": " as | to ", "new-job-as": " as ", "my-job": "job is|profession is|occupation is", "teach": "teach",
	"drive": "driv", "work-at": "work|employed|hired|job|teach", "new-job-at": "job|position|role|gig|internship|offer",
	"joined-org": "joined|started at|started working|switched to", "at-now": "these days|nowadays|now", "at-now-2": "now|these days",
	"live": "live|living|based|settled", "moved": "moved|relocated|moving|relocating", "from": "from|grew up", "born": "born",
	"moving": "moving|relocating", "rel-name": "name|called", "have-named": "named|called|name", "pronoun-name": "name",
	"rel-age": " is | turned |'s ", "rel-lives": "lives|living|based", "rel-moved": "moved|relocated|moving|relocating", "rel-works": "works|working",
	"rel-job": " is a| is an|works as", "rel-allergic": "allergic", "count": "have", "allergic": "allergic",
	"allergy-have": "allerg", "avoid": " eat | drink ", "into": "into|taken up|took up|picked up", "picked-up": "picked up", "play": "play",
	"play-in": "play|sing|dance|row|swim|run", "hobby-is": "hobb", "joined": "joined|signed up|enrolled|registered|started going|started attending|member|took|taking|doing|finished",
	"learning": "learning|studying|practic|lessons|classes", "learning-to": "learning", "has": "have|own", "habit": "grow|collect|knit|crochet|sew|brew|bake|paint|sketch|restore|carve|forag", "keep": "keep|raise|breed", "work-in": "work", "former-job": "used to|was|been", "retired": "retired", "go-ing": " go ", "do-hobby": " do |practi|doing", "run-biz": "run |own |manage",
	"prefer": "prefer", "start-plan": "start|begin|finish|graduate|leave|fly out|move", "in-field": " in ", "person": "person|guy|girl| fan", "plan-ing": "ing ", "in-group": " in | part of| member of| on ", "rather": "rather", "age-adj": "old", "keen": "passionate|obsessed|keen|crazy|hooked|mad about|nuts about", "expecting": "expecting|having", "like": "love|like|enjoy|adore", "fan": "fan of", "dislike": "hate|dislike|detest|stand|like|enjoy|fan of",
	"is-favorite": "fav|top pick|go-to", "home-country": "home ", "favorite": "fav",
	"went": "went|been|headed|drove|flew|walked|hiked|biked|took", "went-ing": "went|took", "had": "had",
	"applied": "applied|accepted|mentored|call from", "back-from": "back|returned", "visited": "visited|toured|explored",
	"trip-going": " to | for ", "trip-booked": "booked",
	"did":   "launched|opened|started|finished|completed|published|organized|organised|hosted|won|passed|volunteered|attended|bought|ran |painted|built|wrote|released|graduated|got|adopted|created|designed|crafted|knitted|baked|planted|sold|rescued|welcomed",
	"doing": "ing ", "plan": "going to|gonna|planning|about to",
	"have-event": "interview|exam|test|appointment|surgery|operation|recital|concert|game|match|race|competition|audition|performance|show|presentation|flight|trip|wedding|meeting|date",
	"my-event":   "wedding|exam|interview|surgery|recital|concert|race|marathon|trip|flight|appointment|party|graduation|show|competition|vacation|holiday",
	"married":    "married|tying the knot", "decided": "decided|agreed|chose|opted|settled", "go-with": "with|switch|migrat",
	"deadline": "deadline|due", "my-attr": "my ", "speak": "speak|fluent", "study": "stud|major|master|degree|phd|concentration|course|program", "degree": "degree|bachelor|master|phd|diploma|doctorate", "rel-degree": "degree|bachelor|master|phd|diploma|doctorate",
	"volunteer": "volunteer", "been-ing": "been", "in-now": " in ", "started-ing": "start|began|begun", "taught": "taught", "name-alone": "i'm|i am", "go-to-group": "go to", "used-to-work": "used to work", "used-to-live": "used to live", "make-time": "time for", "went-on-trip": " on ", "my-count": "my |our ", "as-hobby": "as a hobby|for fun|side hustle", "lost-job-as": "lost", "lost-job-at": "lost|laid off|fired|let go", "my-biz": "store|studio|shop|boutique|salon|bakery|restaurant|cafe|café|food truck|brewery|startup|practice", "pregnant": "pregnant", "condition": "have|diagnosed|live with|suffer", "trip-outing": "going|heading|headed|off", "car": "drive|own", "car-traded": "traded|swapped|part-exchanged", "allergy-to": "allerg", "injury": "hurt|injured|broke|sprained|twisted|pulled|strained|tore|fractured|bruised|dislocated|messed up|tweaked|banged up|busted", "tried": "tried",
}

// mayMatch reports whether lower holds one of r's needles.
func (r *rule) mayMatch(lower string) bool {
	if len(r.needs) == 0 {
		return true
	}
	for _, n := range r.needs {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// gate is a cheap precondition of a rule.
type gate int

const (
	gateFirst  gate = iota // "I" or "we"
	gateMy                 // "my" or "our"
	gatePerson             // "my", "our", or a known name
	gateAny
)

// gates are the precondition words a sentence holds.
type gates struct{ first, my, names bool }

func gatesOf(lower string, x *extractor) gates {
	w := " " + lower + " "
	g := gates{
		first: strings.Contains(w, " i ") || strings.Contains(w, " i'") || strings.Contains(w, " we ") || strings.Contains(w, " we'"),
		my:    strings.Contains(w, " my ") || strings.Contains(w, " our "),
	}
	for name := range x.people {
		if strings.Contains(w, " "+name) {
			g.names = true
			break
		}
	}
	return g
}

func (g gates) allow(r *rule) bool {
	switch r.gate {
	case gateFirst:
		return g.first
	case gateMy:
		return g.my
	case gatePerson:
		return g.my || g.names
	}
	return true
}

var (
	relations  = readList("relations.txt")
	animals    = readList("animals.txt")
	jobs       = readList("professions.txt")
	venues     = readList("venues.txt")
	groupWords = readList("groups.txt")
	hobbyWords = readList("hobbies.txt")
	roles      = readList("roles.txt")
	// fields: lines of work one is "in" ("I'm in sales").
	fields = set(`sales marketing IT tech finance banking insurance retail hospitality healthcare education
construction logistics accounting law publishing advertising consulting real estate recruitment hr pr
journalism software engineering nursing teaching research academia politics government media fashion design`)
	// kept: animals one keeps ("I keep bees").
	kept = func() map[string]bool {
		out := set(`bee bees hive hives`)
		for a := range animals {
			out[a] = true
		}
		return out
	}()
	// pastimes: what one does as a pastime ("I do yoga").
	pastimes = set(`yoga pilates crossfit karate judo taekwondo jiu-jitsu jujitsu boxing kickboxing aikido kung fu tai chi
parkour gymnastics ballet zumba triathlons triathlon marathons marathon crosswords sudoku puzzles jigsaws pottery
ceramics calligraphy woodwork woodworking embroidery origami photography improv karaoke archery fencing`)
	// businesses: what one runs or owns as one's work ("I run a bakery").
	businesses = set(`bakery cafe café coffee shop shop store restaurant bistro diner pub bar business company startup
start-up farm salon barbershop studio gym clinic practice agency firm boutique bookshop bookstore nursery b&b
guesthouse hotel garage workshop food truck brewery vineyard winery kennel daycare consultancy`)
	outings = set(`hiking camping biking cycling fishing kayaking swimming skiing snowboarding surfing shopping
dancing bowling skating ice-skating climbing rock-climbing running jogging sailing boating canoeing rafting diving
scuba-diving snorkeling snorkelling golfing volunteering sightseeing exploring picnicking birdwatching bird-watching
caroling hunting horseback-riding horse-riding apple-picking berry-picking strawberry-picking backpacking
trekking mountain-biking paddleboarding paddle-boarding stargazing thrifting antiquing caving ziplining`)
)

// alt is the alternation of the phrases of set (longest first), as a
// non-capturing group.
func alt(sets ...map[string]bool) string {
	var rs []string
	for _, set := range sets {
		for r := range set {
			rs = append(rs, strings.ReplaceAll(regexp.QuoteMeta(r), " ", `[ -]`))
		}
	}
	sort.Slice(rs, func(i, j int) bool { return len(rs[i]) > len(rs[j]) || (len(rs[i]) == len(rs[j]) && rs[i] < rs[j]) })
	rs = slices.Compact(rs)
	return "(?:" + strings.Join(rs, "|") + ")"
}

// numberWords spell an age.
const numberWords = `one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty`

// Words of the first person.
const (
	// weI: the user, alone or with others ("my girlfriend and I").
	weI   = `(?:I|we|my (?:[a-z]+ ){0,2}and I|[A-Z][a-z]+ and I)`
	iAm   = `\bI(?:'m| am)`
	iHave = `\bI(?:'ve| have)?`
	weAre = `\bwe(?:'re| are)`
	// ageWords are ages in words, thirteen to ninety-nine.
	ageWords = `(?:thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?)`
	// soon: adverbs between the subject and its verb.
	soon = `(?:(?:just|recently|finally|now|already|officially|also|actually|still|currently|even|then|both|all) )*`
	// often: adverbs of habit between the subject and its verb.
	often = `(?:(?:usually|often|still|sometimes|regularly|normally|also|always|mostly|now|really|try to|like to|love to) )*`
	// near: where one lives, in or by a place ("just outside York").
	near = `(?:just )?(?:in|near|outside|outside of|close to|on the outskirts of) `
	// adv: adverbs between "I" and a verb of liking.
	adv = `(?:(?:really|absolutely|just|totally|do|also|still|now|definitely|actually|much|strongly|generally|usually|always|honestly|genuinely|kind of|kinda|sort of|truly|especially|particularly) )*`
)

// personAlt names the subject of a person rule: a relative or a pet
// ("my son", "my sister Ana", "our beagle, Biscuit,") or a name the
// conversation or memory knows as one ("Leo").
var personAlt = `(?:\b(?i:my|our) (?i:step-|late |dear |favou?rite |new )?(?P<rel>` + relWord + `)(?:,? (?P<rname>[A-Z][a-z]+),?)?|\b(?P<name>[A-Z][a-z]+))`

// relWord is a relation or an animal, with the word that tells two
// relatives apart (big sister, twin sister).
var relWord = `(?i:(?:little |big |younger |older |twin |baby |oldest |youngest |eldest |middle )?` + alt(relations, animals) + `)`

func r(name, expr string, k kind, subj, attr string, conf float64) rule {
	return rule{name: name, re: regexp.MustCompile(expr), k: k, subj: subj, attr: attr, typ: Semantic, conf: conf}
}

var rules = func() []rule {
	rs := []rule{
		// Who the user is.
		r("name", `(?i:\bmy name is |\bmy name's |(?:\byou can |\bplease |\bjust )?\bcall me |\bI go by |`+iAm+` called )(?P<v>)`, kName, "user", "name", 0.9),
		r("name-intro", `^(?i:(?:hi|hello|hey)(?: there| all| everyone)?[,!]? )(?i:I am |I'm )(?P<v>)[A-Z][a-z]+(?:[,.!]|$| (?i:and|from|here)\b)`, kName, "user", "name", 0.8),
		r("age", `(?i:`+iAm+` (?:actually |now |only |just )?|\bI(?:'ve| have)? (?:just )?turned )(?P<v>)(?:\d{1,3}|`+ageWords+`)(?i: years old\b| yo\b|[.,!]|$| (?:now|today|this year|last week|last month|yesterday|by the way|btw|lol|haha|and|but|already|myself|there|here|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|my birthday|the \d))\b)`, kNP, "user", "age", 0.85),
		// Work.
		r("job", `(?i:`+iAm+` (?:now |currently |still |actually |also |officially )?(?:a|an|the) )(?P<v>)`, kNP, "user", "job_title", 0.8),
		r("job-bare", `(?i:`+iAm+` (?:now |currently |still |actually |officially )?)(?P<v>)[a-z-]+(?: [a-z-]+)?(?:[,.!]|$| (?:at|in|for|and|but|now)\b)`, kNP, "user", "job_title", 0.75),
		r("job-been", `(?i:`+iHave+` (?:been|worked as) (?:a|an) )(?P<v>)`, kNP, "user", "job_title", 0.8),
		r("new-role", `(?i:`+iAm+` (?:going to be |gonna be |now |officially )?(?:their|the|our|its|a|an) new )(?P<v>)`, kNP, "user", "job_title", 0.75),
		r("rel-is-first", `(?i:\b(?:my|our) )(?P<thing>`+relWord+`)(?i:'s| is) (?P<v>)[A-Z][a-z]+(?:[.!,]|$| and\b)`, kName, "thing", "name", 0.7),
		r("rel-is-name", `(?i:\b(?:my|our) )(?P<thing>`+relWord+`)(?i: is )(?P<v>)[A-Z][a-z]+ [A-Z][a-z]+\b`, kName, "thing", "name", 0.75),
		r("work-as", `(?i:\bI `+soon+`(?:work|'ve worked|have worked|'m working|am working|'ve been working|have been working|started working|started work|got a job|got hired|was hired|'ve been hired|have been hired|got promoted|was promoted|'ve been promoted) (?:as|to) (?:an? |the )?)(?P<v>)`, kNP, "user", "job_title", 0.8),
		r("new-job-as", `(?i:`+iHave+` `+soon+`(?:started|landed|got|accepted|took|began|start) (?:a |my |the |an )?(?:new )?(?:part-time |full-time |part time |full time |summer )?(?:job|position|role|gig|internship) as (?:an? |the )?)(?P<v>)`, kNP, "user", "job_title", 0.8),
		r("my-job", `(?i:\bmy (?:job|profession|occupation) is (?:being )?(?:an? |the )?)(?P<v>)`, kNP, "user", "job_title", 0.8),
		r("teach", `(?i:\bI `+soon+`(?:teach|'ve been teaching|have been teaching|'m teaching|am (?:still |also |now )?teaching) )(?P<v>)`, kNP, "user", "job_title", 0.7),
		r("drive", `(?i:\bI (?:drive|'ve been driving|have been driving) (?:a|an|the) )(?P<v>)`, kNP, "user", "job_title", 0.7),
		r("work-at", `(?i:\bI `+soon+`(?:work(?: nights| shifts| weekends| evenings| part[- ]time| full[- ]time)?|'ve worked|have worked|'m working|am working|'ve been working|have been working|started working|'m employed|am employed|got a job|got hired|was hired|'ve been hired|teach|am teaching|'ve been teaching|have been teaching|started teaching)(?: from home| remotely)? (?:at|for|with|by) (?:the )?)(?P<v>)`, kName, "user", "employer", 0.85),
		r("new-job-at", `(?i:`+iHave+` `+soon+`(?:started|landed|got|accepted|took|began|start) (?:a |my |the |an )?(?:new )?(?:part-time |full-time |part time |full time |summer )?(?:job|position|role|gig|internship|offer) (?:at|with|from) (?:the )?)(?P<v>)`, kName, "user", "employer", 0.8),
		r("joined-org", `(?i:`+iHave+` `+soon+`(?:joined|started at|started working at|switched to) (?:the )?)(?P<v>)[A-Z]`, kName, "user", "employer", 0.7),
		r("at-now", `(?i:\b(?:these days|nowadays|now) I(?:'m| am) (?:at|with|working at|working for) )(?P<v>)`, kName, "user", "employer", 0.75),
		r("at-now-2", `(?i:`+iAm+` (?:at|with) )(?P<v>)[A-Z][\w&'-]*(?: [A-Z][\w&'-]*){0,2}(?i: now\b| these days\b)`, kName, "user", "employer", 0.7),
		// Where.
		r("live", `(?i:\b(?:I|we) `+soon+`live `+near+`|`+iAm+` `+soon+`(?:living|based|settled) `+near+`|\bI(?:'ve| have) (?:lived|been living) `+near+`|`+iAm+` based out of |`+weAre+` `+soon+`(?:living|based|settled) `+near+`)(?P<v>)`, kPlace, "user", "home_city", 0.85),
		r("moved", `(?i:\b(?:I|we)(?:'ve| have)? `+soon+`(?:moved|relocated) (?:back to |to |in together in |in together to |into (?:a|an|the|this|that|our|my) (?:[a-z-]+ ){0,3}in )|\b(?:I|we) (?:finally )?ended up (?:moving|relocating) (?:back )?to )(?P<v>)`, kPlace, "user", "home_city", 0.85),
		r("from", `(?i:`+iAm+` (?:originally )?from |\bI (?:originally )?come from |\bI grew up in )(?P<v>)`, kPlace, "user", "hometown", 0.8),
		r("born", `(?i:\bI was born in )(?P<v>)`, kPlace, "user", "birthplace", 0.85),
		r("moving", `(?i:(?:`+iAm+`|`+weAre+`) (?:moving|relocating) to )(?P<v>)`, kPlace, "user", "plan/move", 0.7),
		// People and pets.
		r("rel-name", `(?i:`+personAlt+`(?:'s name is (?:actually )?|'s name's | is (?:actually |now )?(?:called|named) |'s (?:actually )?called ))(?P<v>)`, kName, "person", "name", 0.9),
		r("rel-named", `\b(?i:my|our) (?i:step-|late |dear |favou?rite |new )?(?P<thing>`+relWord+`),? (?P<v>)[A-Z][a-z]+(?:,|[.!;]|$| (?:[a-z]+|'s)\b|'s\b)`, kName, "thing", "name", 0.75),
		r("have-named", `(?i:\b(?:I|we)(?:'ve| have)? (?:just |finally |also )?(?:have|own|got|adopted|rescued|brought home|welcomed|took in|had) (?:a|an|one|another|our|my|a new|a little|a sweet|the cutest) (?:new |little |baby |sweet |tiny |cute |young |adorable )?(?:[a-z]+ ){0,2}?)(?P<thing>`+relWord+`)(?i:,? (?:named|called) |(?: (?:on|last|this|yesterday|today)[^,.!?;]{0,20})?,? (?:and )?(?:his|her|its) name(?: is|'s) |(?: (?:on|last|this|yesterday|today)[^,.!?;]{0,20})?, (?:a |an )?(?:[a-z]+ ){0,3}(?:one|fella|fellow|guy|girl|boy|lad|lass|chap|thing),? (?:named|called) |(?: (?:on|last|this|yesterday|today|in)[^,.!?;]{0,20})?, (?:a |an )(?:[a-z-]+ ){0,2}[a-z-]+,? (?:named|called) )(?P<v>)`, kName, "thing", "name", 0.85),
		r("pronoun-name", `(?i:\b(?:(?:I|we) (?:have|have got|had) (?:a|an|one) |(?:my|our) )(?:new |little |baby |sweet |young )?)(?P<thing>`+relWord+`)(?i:,? (?:and )?(?:his|her|its) name(?: is|'s) )(?P<v>)`, kName, "thing", "name", 0.85),
		r("rel-age", personAlt+`(?i:'s | (?:is|just turned|turned) )(?P<v>)(?i:\d{1,2}|`+numberWords+`)(?i: years old\b| months old\b|[.,!;]|$| (?:and|now|today|this|next|on|in)\b)`, kNP, "person", "age", 0.8),
		r("age-adj", `\b(?i:my|our) (?P<v>)(?i:\d{1,2}|`+numberWords+`)(?i:[- ]years?[- ]old) (?P<thing>`+relWord+`)\b`, kNP, "thing", "age", 0.8),
		r("rel-lives", personAlt+`(?i: (?:now |still |also )?(?:lives|is living|is based) in )(?P<v>)`, kPlace, "person", "home_city", 0.8),
		r("rel-moved", personAlt+`(?i: (?:has |is |just |recently |finally )*(?:moved|relocated|moving|relocating) (?:back )?to )(?P<v>)`, kPlace, "person", "home_city", 0.75),
		r("rel-works", personAlt+`(?i: (?:now |still )?(?:works|is working) (?:at|for) )(?P<v>)`, kName, "person", "employer", 0.75),
		r("rel-job", personAlt+`(?i: (?:is|works as) (?:a|an) )(?P<v>)`, kNP, "person", "job_title", 0.7),
		r("rel-allergic", personAlt+`(?i: (?:is|has been) (?:severely |very |deathly |really |quite |also )?allergic to )(?P<v>)`, kNP, "person", "allergy/%", 0.85),
		r("count", `(?i:\b(?:I|we) have (?:got )?)(?P<v>)(?i:\d+|one|two|three|four|five|six|seven) (?P<attr>kids|children|sons|daughters|cats|dogs|siblings|brothers|sisters|grandchildren|grandkids)\b`, kNP, "user", "@_count", 0.85),
		// Health and food.
		r("allergic", `(?i:`+iAm+` (?:severely |very |deathly |really |quite |also |super )?allergic to )(?P<v>)`, kNP, "user", "allergy/%", 0.95),
		r("allergy-to", `(?i:\bI have (?:a |an )?(?:severe |mild |bad |bit of an |slight )?(?:allergy|allergies) (?:to|for) )(?P<v>)`, kNP, "user", "allergy/%", 0.9),
		r("allergy-have", `(?i:\bI have (?:a |an |severe |a severe |a mild |bad |a bad )?)(?P<v>)[a-z]+(?: [a-z]+)?(?i: allerg(?:y|ies))\b`, kNP, "user", "allergy/%", 0.9),
		r("diet", `(?i:(?:`+iAm+`|`+iHave+` been|\bI (?:went|turned|became|have gone|have become)|\b(?:we|my [a-z]+ and I|[a-z]+ and I)(?:'re| are)) (?:both |all |a |an |strictly |fully |now |also |mostly )?)(?P<v>)(?i:vegetarian|vegan|pescatarian|lactose[- ]intolerant|gluten[- ]free|gluten[- ]intolerant|celiac|coeliac|diabetic|teetotal|keto|kosher|halal)\b`, kNP, "user", "diet", 0.9),
		r("avoid", `(?i:\bI (?:can't|cannot|don't|do not|never) (?:eat|drink) )(?P<v>)`, kNP, "user", "avoids/%", 0.8),
		// Hobbies.
		r("into", `(?i:(?:`+iAm+`|`+iHave+` been) (?:really |so |totally |very |super |big |more |much more |now )?into |`+iHave+` `+soon+`(?:taken up|took up|been getting into|started getting into|got really into) )(?P<v>)`, kNP, "user", "hobby/%", 0.75),
		r("play", `(?i:\bI `+soon+`(?:play|'ve been playing|have been playing|'m playing|am playing|started playing|'ve started playing) (?:the )?)(?P<v>)`, kNP, "user", "hobby/%", 0.75),
		r("play-in", `(?i:\bI `+soon+`(?:play|sing|dance|row|swim|run) (?:in|with|for) (?:a|an|the|my|our) )(?P<v>)`, kNP, "user", "hobby/%", 0.75),
		r("learning", `(?i:\bI (?:am |have been |have started |started |also |now |finally |still |really )*(?:learning|studying|practicing|practising|taking lessons in|taking classes in) (?:the )?)(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("learning-to", `(?i:\bI (?:am |have been |have started |started |also |now )*learning (?:to|how to) )(?P<v>)(?i:play|speak|cook|bake|knit|crochet|sew|paint|draw|swim|ski|snowboard|surf|code|program|dance|sing|climb|skate|ride|sail|drive|juggle|fish|kayak|row)\b`, kNP, "user", "hobby/%", 0.7),
		r("go-ing", `(?i:\b`+weI+` `+often+`go )(?P<v>)(?i:`+alt(outings)+`)\b`, kNP, "user", "hobby/%", 0.7),
		r("do-hobby", `(?i:\bI `+often+`(?:do|practice|practise|'ve been doing|have been doing|am doing|'m doing|started doing) (?:a (?:bit|lot) of |some )?)(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("run-biz", `(?i:\b`+weI+` `+soon+`(?:run|own|manage) (?:a |an |my own |our own |the |a little |a small )?)(?P<v>)`, kNP, "user", "business", 0.75),
		r("has", `(?i:\b(?:I|we) (?:also |still |now )?(?:have got|have|own) (?:a |an |my own |our own )(?:little |small |tiny |big )?)(?P<v>)`, kNP, "user", "has/%", 0.65),
		r("habit", `(?i:\bI `+often+`(?:grow|collect|knit|crochet|sew|brew|bake|paint|sketch|restore|carve|forage for) )(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("keep", `(?i:\b(?:I|we) `+often+`(?:keep|raise|breed) )(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("work-in", `(?i:\bI `+soon+`(?:work|have worked|have been working|am working) in (?:the )?)(?P<v>)`, kNP, "user", "works_in", 0.7),
		r("former-job", `(?i:\bI (?:used to be|was) (?:a|an) )(?P<v>)`, kNP, "user", "former_job", 0.65),
		r("retired", `(?i:\bI am (?:now |happily |fully |semi-|recently )?|\bI (?:have )?(?:just |recently |finally |officially )?)(?P<v>)(?i:retired)(?:[.,!;]|$| (?:now|since|these days|and|last|this|in|a|from|after|two|three|four|five|ten|\d+)\b)`, kNP, "user", "job_title", 0.8),
		r("in-group", `(?i:`+iAm+` (?:also |still |now )?(?:in|part of|a member of|on) (?:a|an|the|my|our) )(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("rather", `(?i:\bI would (?:much )?rather (?:have|eat|drink|use|take|go with|watch|read|listen to) )(?P<v>)`, kNP, "user", "prefers/%", 0.75),
		r("person", `(?i:`+iAm+` (?:more of |much more of |very much |definitely |totally |such |really |a big |big )?(?:a|an) )(?P<v>)[a-z]+(?i: (?:person|guy|girl|kind of person|fan))\b`, kNP, "user", "prefers/%", 0.7),
		r("plan-ing", `(?i:(?:`+iAm+`|`+weAre+`) `+soon+`(?:sitting|taking|attending|visiting|competing in|seeing|meeting|throwing|celebrating|doing) (?:a |an |the |my |our |this |some )?)(?P<v>)`, kNP, "user", "plan/%", 0.65),
		r("in-field", `(?i:`+iAm+` (?:also |still |now )?in )(?P<v>)(?i:`+alt(fields)+`)(?:[.,!;]|$| (?:now|too|as well|and|for|at|myself)\b)`, kNP, "user", "works_in", 0.7),
		r("start-plan", `(?i:\b(?:I|we) (?:start|begin|finish|graduate|leave|fly out|move) (?:my |our |a |the )?(?:new )?)(?P<v>)`, kNP, "user", "plan/%", 0.65),
		r("hobby-is", `(?i:\bmy (?:favou?rite |new |main )?hobb(?:y|ies) (?:is|are|include|includes) )(?P<v>)`, kNP, "user", "hobby/%", 0.85),
		r("joined", `(?i:\b(?:I|we)(?:'ve| have)? `+soon+`(?:joined|signed up for|signed up to|enrolled in|registered for|started going to|started attending|became a member of|took|am taking|have been taking|am doing|started taking|finished) (?:a |an |the |my |our |this |some )?)(?P<v>)`, kNP, "user", "joined/%", 0.75),
		// Preferences.
		r("prefer", `(?i:\bI `+adv+`prefer )(?P<v>)`, kNP, "user", "prefers/%", 0.85),
		r("like", `(?i:\bI `+adv+`(?:love|like|enjoy|adore) )(?P<v>)`, kNP, "user", "likes/%", 0.7),
		r("keen", `(?i:`+iAm+` (?:really |so |very |super |quite |a bit |kind of |kinda |totally |absolutely |also )*(?:passionate about|obsessed with|keen on|crazy about|hooked on|mad about|nuts about) )(?P<v>)`, kNP, "user", "likes/%", 0.7),
		r("fan", `(?i:`+iAm+` (?:a )?(?:huge |big |massive |great )?fan of )(?P<v>)`, kNP, "user", "likes/%", 0.7),
		r("dislike", `(?i:\bI `+adv+`(?:hate|dislike|detest|can't stand|cannot stand|don't like|do not like|don't enjoy|do not enjoy) |`+iAm+` (?:not|really not|not really) (?:a |much of a )?(?:big |huge |great )?fan of )(?P<v>)`, kNP, "user", "dislikes/%", 0.75),
		r("is-favorite", `(?i:\b)(?P<v>)(?i:[^,;:.!?]{2,40}?) (?i:is|are) (?i:one of )?(?i:my|our) (?i:all-time |absolute |new )?(?i:favou?rites?|faves?|favs?|top pick|go-to)(?: (?P<attr>[a-z]+(?: [a-z]+)?))?(?i:[.!,;]|$| (?:to|of|in|for|ever)\b)`, kNP, "user", "likes/%", 0.8),
		r("home-country", `(?i:\bmy home (?:country|town|city)(?: is|,)? )(?P<v>)`, kPlace, "user", "hometown", 0.8),
		r("favorite", `(?i:\bmy (?:all-time |absolute )?(?:favou?rite|fave|fav) (?P<attr>[a-z]+(?: [a-z]+)?)(?: to [a-z]+)? (?:is|are|has to be|would be) )(?P<v>)`, kNP, "user", "favorite_@", 0.9),
		// What happened.
		r("went", `(?i:\b`+weI+`(?:'ve| have)? `+soon+`(?:went|been|headed|drove|flew|walked|hiked|biked|took (?:the|my|our) (?:kids|fam|family|dogs|pups|children|son|daughter|girlfriend|boyfriend|wife|husband|parents|friends)) (?:over |down |up |out |back )?to (?:a |an |the |this |my |our |that )?)(?P<v>)`, kNP, "user", "went_to/%", 0.65),
		r("went-ing", `(?i:\b`+weI+` `+soon+`(?:went|took (?:the|my|our) (?:kids|fam|family|dogs|pups|children|son|daughter|girlfriend|boyfriend|wife|husband|parents|friends)) )(?P<v>)(?i:`+alt(outings)+`)\b`, kNP, "user", "went/%", 0.65),
		r("had", `(?i:\b`+weI+` `+soon+`had (?:a |an |my |our |this |the )?(?:great |good |lovely |nice |fun |quick |big |amazing |awesome |wonderful |fantastic |little |first )*)(?P<v>)`, kNP, "user", "had/%", 0.6),
		r("applied", `(?i:\b`+weI+`(?:'ve| have)? `+soon+`(?:applied (?:to|for)|got accepted (?:to|for|into|at)|was accepted (?:to|for|into|at)|got mentored by|got a call from) (?:a |an |the |my |some |two |three |multiple |several )?)(?P<v>)`, kNP, "user", "@/%", 0.65),
		r("back-from", `(?i:\b(?:I|we)(?:'ve| have)? `+soon+`(?:got back|came back|returned|flew back|am back|are back|'re back|'m back|just back) from (?:a |an |the |my |our )?(?:(?:week|weekend|month|fortnight|few days|couple of days|couple of weeks|(?:two|three|four|five|six|ten|\d+) (?:days|weeks|months)) (?:in|at|on) (?:the )?)?)(?P<v>)`, kNP, "user", "went_to/%", 0.7),
		r("visited", `(?i:\b(?:I|we)(?:'ve| have)? `+soon+`(?:visited|toured|explored) (?:a |an |the |this |my |our )?)(?P<v>)`, kNP, "user", "went_to/%", 0.65),
		r("trip-going", `(?i:(?:`+iAm+`|`+weAre+`|\b(?:me and [A-Z][a-z]+|[A-Z][a-z]+ and I|(?:my|your) (?:[a-z]+ ){1,2}and I) (?:are|'re)) (?:also |still |now |actually |finally )?(?:(?:flying|traveling|travelling|heading|going|driving|off) (?:back )?(?:from [A-Z][\w-]*(?: [A-Z][\w-]*)? )?to |(?:leaving|setting off|flying out|off) for |(?:planning|taking|going on|booking|booked|off on|saving for|saving up for) (?:a |an |our |my |the )?(?:(?:big |little |short |long |family |weekend |road |quick )?(?:trip|vacation|holiday|getaway|visit|cruise)) to ))(?P<v>)`, kPlace, "user", "trip/%", 0.65),
		r("trip-booked", `(?i:\b(?:I|we)(?:'ve| have)? `+soon+`booked (?:flights|a flight|tickets|a ticket|a trip|a holiday|a vacation|a train|a cabin|a hotel) (?:to|in|for) )(?P<v>)`, kPlace, "user", "trip/%", 0.75),
		r("did", `(?i:\b`+weI+`(?:'ve| have)? `+soon+`(?P<attr>launched|opened|started|finished|completed|published|organized|organised|hosted|won|passed|volunteered at|attended|bought|ran|painted|built|wrote|released|graduated from|got|adopted|created|designed|crafted|knitted|baked|planted|sold|rescued|welcomed) (?:a |an |the |my |our |this |some |two |three |four |another |a new |my first |our first |a few )?)(?P<v>)`, kNP, "user", "@/%", 0.6),
		r("doing", `(?i:(?:`+iAm+`|`+weAre+`) `+soon+`(?P<attr>starting|opening|launching|organizing|organising|hosting|building|writing|training for|preparing for|working on|planning|running) (?:a |an |the |my |our |this |some )?)(?P<v>)`, kNP, "user", "@/%", 0.6),
		r("plan", `(?i:(?:`+iAm+`|`+weAre+`) (?:going to|gonna|planning to|planning on|about to) )(?P<v>)`, kNP, "user", "plan/%", 0.65),
		r("have-event", `(?i:\b(?:I|we) (?:have|'ve got|have got) (?:a |an |my |our |the )?)(?P<v>)(?i:(?:job |big |first |final |second |dentist |doctor's |doctor |dental |eye |vet |hospital |court |driving )?(?:interview|exam|test|appointment|surgery|operation|recital|concert|game|match|race|competition|audition|performance|show|presentation|flight|trip|wedding|meeting|date))\b`, kNP, "user", "plan/%", 0.7),
		r("my-event", `(?i:\b(?:my|our) )(?P<v>)(?i:(?:job |big |first |final )?(?:wedding|exam|interview|surgery|recital|concert|race|marathon|trip|flight|appointment|birthday party|graduation|party|show|competition|vacation|holiday)) (?i:is|will be)\b`, kNP, "user", "plan/%", 0.7),
		r("expecting", `(?i:`+weAre+` (?:expecting|having) |`+iAm+` (?:expecting|having) )(?P<v>)(?i:a baby|a little one|twins|our first|our second|our third|another baby|a boy|a girl)\b`, kNP, "user", "plan/baby", 0.75),
		r("married", `(?i:`+weAre+` (?:getting married|tying the knot)|`+iAm+` getting married)(?P<v>)`, kNP, "user", "plan/wedding", 0.75),
		// Decisions.
		r("decided", `(?i:\b(?:we|I)(?:'ve| have)? (?:finally |just )?(?:decided|agreed|chose|opted) (?:to |on )|\b(?:we|I)(?:'ve| have)? (?:finally |just )?settled on )(?P<v>)`, kNP, "we", "decision/#", 0.8),
		r("go-with", `(?i:\b(?:we|I)(?:'ll| will|'re| are)? (?:go|going) with |\b(?:we|I)(?:'re| are|'ll| will|'ve| have)? (?:now )?(?:switch|switching|switched|migrate|migrating|migrated) (?:over )?to )(?P<v>)`, kName, "we", "decision/go_with", 0.6),
		r("deadline", `(?i:\bthe deadline(?: for(?: [a-z-]+){1,4}?)? is (?:now )?|\bit(?:'s| is) due (?:on |by )?)(?P<v>)`, kNP, "we", "deadline", 0.8),
		// Other things about the user.
		r("my-attr", `(?i:\bmy (?:[a-z]+ )?(?P<attr>email|email address|phone number|phone|address|blood type|nationality|pronouns|timezone|time zone|native language|first language|nickname|zodiac sign|star sign) (?:is|'s) (?:now |actually )?)(?P<v>)`, kNP, "user", "@", 0.85),
		r("speak", `(?i:\bI (?:speak|'m fluent in|am fluent in) )(?P<v>)`, kName, "user", "speaks/%", 0.8),
		r("study", `(?i:`+iAm+` (?:studying|majoring in|doing a (?:degree|masters|master's|phd) in) |\bI (?:study|major in) |\bI `+soon+`(?:changed|switched) my (?:major|concentration|degree|course|program|programme) to )(?P<v>)`, kNP, "user", "studies", 0.8),
		r("rel-degree", personAlt+`(?i: (?:just |finally |recently )*(?:finished|completed|got|earned|graduated with) (?:a|an|his|her|their) (?:degree|bachelor's|master's|masters|phd|diploma|doctorate)(?: degree)? in )(?P<v>)`, kNP, "person", "degree", 0.8),
		r("degree", `(?i:`+iHave+` (?:just |finally |recently )*(?:finished|completed|got|earned|graduated with) (?:a|an|my) (?:degree|bachelor's|master's|masters|phd|diploma|doctorate)(?: degree)? in )(?P<v>)`, kNP, "user", "degree", 0.8),
		r("car-traded", `(?i:\bI (?:traded|swapped|part-exchanged) (?:[\w-]+ ){0,3}in for (?:a|an) )(?:[a-z-]+ ){0,3}(?P<v>)[A-Z]`, kName, "user", "car", 0.7),
		r("car", `(?i:\bI (?:drive|own) (?:a|an) )(?:[a-z-]+ ){0,3}(?P<v>)[A-Z]`, kName, "user", "car", 0.7),
		r("injury", `(?i:\bI `+soon+`(?:hurt|injured|broke|sprained|twisted|pulled|strained|tore|fractured|bruised|dislocated|messed up|tweaked|banged up|busted) my )(?P<v>)`, kNP, "user", "injury/%", 0.8),
		r("pregnant", `(?i:`+iAm+` (?:finally |officially )?)(?P<v>)(?i:pregnant)\b`, kNP, "user", "pregnant", 0.8),
		r("lost-job-as", `(?i:\bI `+soon+`lost my (?:old )?(?:job|position|role) as (?:a |an |the )?)(?P<v>)`, kNP, "user", "former_job", 0.75),
		r("lost-job-at", `(?i:\bI `+soon+`lost my (?:old )?(?:job|position|role) (?:at|with) (?:the )?|\bI (?:got|was) (?:laid off|fired|let go) (?:from|by) (?:the )?)(?P<v>)`, kName, "user", "former_employer", 0.75),
		r("my-biz", `(?i:\bmy (?:own |new |little |small )?)(?P<v>)(?i:(?:[a-z]+ )?(?:store|studio|shop|boutique|salon|bakery|restaurant|cafe|café|food truck|brewery|startup|practice))\b`, kNP, "user", "business/%", 0.65),
		r("my-count", `\b(?i:my|our) (?P<v>)(?i:two|three|four|five|six|seven|[2-9]) (?P<attr>(?i:kids|children|sons|daughters|cats|dogs|doggies|pups|grandchildren|grandkids))\b`, kNP, "user", "@_count", 0.8),
		r("as-hobby", `(?i:\bI `+soon+`(?:started|began|took up|picked up|do|have been|'ve been) )(?P<v>)(?i:[a-z]+ing(?: [a-z]+){0,2}) (?i:as a hobby|for fun|as a side hustle)\b`, kNP, "user", "hobby/%", 0.75),
		r("went-on-trip", `(?i:\b`+weI+`(?:'ve| have)? `+soon+`(?:went|been) on (?:a |an |another |our |my |this )?(?:(?:great|amazing|fun|lovely|little|quick|short|long|big|awesome) )?)(?P<v>)(?i:(?:[a-z-]+ ){1,2}(?:trip|getaway|cruise|vacation|holiday)|hike|cruise|safari|retreat|pilgrimage)\b`, kNP, "user", "went_on/%", 0.65),
		r("make-time", `(?i:\bI `+often+`(?:make time for|find time for) )(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("used-to-work", `(?i:\bI used to work (?:at|for) (?:the )?)(?P<v>)`, kName, "user", "former_employer", 0.75),
		r("used-to-live", `(?i:\b(?:I|we) used to live `+near+`)(?P<v>)`, kPlace, "user", "former_home/%", 0.75),
		r("picked-up", `(?i:\bI `+soon+`(?:picked up|have picked up|'ve picked up) )(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("go-to-group", `(?i:\b`+weI+` `+often+`go to (?:a |an |my |our |the |this )?)(?P<v>)`, kNP, "user", "hobby/%", 0.7),
		r("started-ing", `(?i:\bI `+soon+`(?:'ve |have )?(?:started|began|begun) )(?P<v>)(?i:[a-z-]+ing)\b`, kNP, "user", "hobby/%", 0.7),
		r("taught", `(?i:\bI `+soon+`taught )(?P<v>)`, kNP, "user", "former_job", 0.7),
		r("name-alone", `^(?i:I(?:'m| am) )(?P<v>)[A-Z][a-z]+(?: [A-Z][a-z]+)?[.!]?$`, kName, "user", "name", 0.7),
		r("been-ing", `(?i:\bI(?:'ve| have) been )(?P<v>)(?i:[a-z-]+ing)(?i: for (?:years|ages|decades|a long time|(?:over |about |almost |nearly )?(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|seventy) (?:years|decades))| since (?:I was|college|school|high school|childhood|\d{4}))\b`, kNP, "user", "hobby/%", 0.7),
		r("in-now", `(?i:(?:`+iAm+`|`+weAre+`) (?:now |finally )?(?:in|living in|based in) )(?P<v>)`, kPlace, "user", "home_city", 0.7),
		r("volunteer", `(?i:\b`+weI+` `+soon+`(?:volunteer|'ve been volunteering|have been volunteering|started volunteering|am volunteering|'m volunteering|still volunteer) (?:at|with|for) (?:a |an |the |my |our |this )?)(?P<v>)`, kNP, "user", "volunteers_at", 0.75),
		r("condition", `(?i:\bI `+soon+`(?:have|have got|was diagnosed with|got diagnosed with|live with|suffer from) (?:type (?:1|2|one|two) |chronic |severe |mild |bad )?)(?P<v>)(?i:diabetes|asthma|celiac disease|coeliac disease|crohn's|epilepsy|migraines|arthritis|adhd|autism|anxiety|depression|ibs|eczema|psoriasis|lupus|ms|multiple sclerosis|high blood pressure|sleep apnea|long covid|fibromyalgia|endometriosis|pcos)\b`, kNP, "user", "condition/%", 0.85),
		r("trip-outing", `(?i:\b`+weI+`(?:'re|'m| are| am) `+soon+`(?:going|heading|headed|off) (?:`+alt(outings)+`) (?:in|at|to|near|up to|down to) (?:the )?)(?P<v>)`, kPlace, "user", "trip/%", 0.65),
		r("tried", `(?i:`+iHave+` (?:already |also )?tried )(?P<v>)[^.!?]*?(?i:\b(?:but|and|,|;|-|—)\s*(?:it |that |this |they )?(?:still )?(?:worked|works|didn't work|did not work|doesn't work|does not work|failed|fails|helped|didn't help|did not help|fixed it|solved it|made it worse|broke|crashed|no luck|did nothing|changed nothing|timed out|errored|threw an error))`, kNP, "user", "tried/%", 0.7),
	}
	for i := range rs {
		x := &rs[i]
		switch x.name {
		case "allergic", "rel-allergic", "avoid", "like", "fan", "dislike", "prefer", "habit", "keen", "rather":
			x.list = true
		case "joined-org", "in-group", "in-field", "go-ing", "learning", "learning-to", "do-hobby", "run-biz", "has", "keep", "work-in", "former-job", "retired":
			x.noDate = true
		case "rel-named", "rel-name", "have-named", "pronoun-name", "rel-is-name", "rel-is-first", "my-biz", "my-count":
			x.free = true
		case "decided", "go-with", "deadline", "trip-going", "trip-outing", "trip-booked", "moving", "doing", "plan-ing", "start-plan":
			x.future = true
		}
		switch x.name {
		case "age-adj":
			x.gate, x.free = gateMy, true
		case "rel-degree", "rel-is-name", "rel-is-first", "rel-name", "rel-named", "rel-age", "rel-lives", "rel-moved", "rel-works", "rel-job", "rel-allergic":
			x.gate = gatePerson
		case "my-job", "my-biz", "my-count", "hobby-is", "is-favorite", "home-country", "favorite", "my-event", "my-attr":
			x.gate = gateMy
		case "deadline", "name":
			x.gate = gateAny
		}
		switch x.name {
		case "job", "job-been", "rel-job", "new-role":
			x.head = jobs
		case "teach":
			x.derive = teacherOf
		case "drive":
			x.derive = driverOf
		case "went", "back-from", "visited":
			x.head = venues
		case "had":
			x.head = happenings
		case "joined", "in-group", "go-to-group":
			x.head = groupWords
		case "play":
			x.head = hobbyWords
		case "do-hobby":
			x.derive = upTo(pastimes)
		case "run-biz":
			x.head = businesses
		case "keep":
			x.derive = upTo(kept)
		case "go-ing":
			x.derive = upTo(outings)
		case "make-time", "picked-up", "started-ing":
			x.derive = upTo(pastimeWords)
		case "taught":
			x.derive = teacherOf
		case "former-job", "lost-job-as", "job-bare":
			x.head = jobs
		case "play-in":
			x.head = groupWords
		case "name", "name-intro", "rel-name", "rel-named", "have-named", "pronoun-name", "age", "rel-age", "allergic", "allergy-have",
			"rel-allergic", "diet", "avoid", "count", "my-attr", "speak", "from", "born", "car", "prefer", "like", "fan", "dislike", "favorite",
			"is-favorite", "home-country", "keen", "rather", "age-adj", "person", "condition", "volunteer", "pregnant", "my-biz", "my-count", "as-hobby", "used-to-work", "used-to-live", "name-alone", "in-now":
			x.noDate = true
		case "plan":
			x.needDate = true
		case "have-event", "my-event", "married", "expecting", "plan-ing", "start-plan", "doing", "did":
			// "doing": what one is busy with now ("I'm writing a list") is
			// no plan without its date
			x.needDate = true
		case "tried":
			x.typ = Episodic
		}
		if x.name == "habit" {
			x.noDate = true
		}
		if strings.Contains(x.name, "dislike") || x.name == "avoid" {
			x.weak = true
		}
		if n, ok := needles[x.name]; ok {
			x.needs = strings.Split(n, "|")
		}
		if !slices.Contains(x.re.SubexpNames(), "v") {
			panic("consolidate: rule " + x.name + " has no value group")
		}
	}
	return rs
}()

// pastimeWords are pastimes of any kind: what one makes time for.
var pastimeWords = func() map[string]bool {
	out := map[string]bool{}
	for _, m := range []map[string]bool{outings, pastimes, hobbyWords} {
		for w := range m {
			out[w] = true
		}
	}
	return out
}()

// bodyPart: "my knee playing football" hurt the knee.
func bodyPart(v string) string {
	w := strings.Fields(v)
	for i := 1; i < len(w); i++ {
		if strings.HasSuffix(strings.ToLower(w[i]), "ing") {
			return strings.Join(w[:i], " ")
		}
	}
	return v
}

// teacherOf: "I've been teaching piano for six years" teaches piano (a
// subject, not a class of people); the value is the user's word for it.
func teacherOf(v string) string {
	w := strings.Fields(strings.ToLower(v))
	if len(w) > 3 || len(w) == 0 {
		return ""
	}
	switch w[len(w)-1] {
	case "kids", "children", "students", "people", "others", "classes", "class", "myself", "them", "adults", "teens", "pupils", "lessons":
		return ""
	}
	return v
}

// driverOf: "I drive a tram in Lisbon" drives a tram for work (a vehicle
// one is paid to drive, not "a Tesla"); the value is the user's word.
func driverOf(v string) string {
	switch strings.ToLower(v) {
	case "tram", "bus", "taxi", "cab", "truck", "lorry", "train", "ambulance", "forklift", "delivery van", "van", "school bus", "ferry", "tractor", "streetcar", "trolley", "limo", "limousine", "tow truck", "garbage truck", "semi":
		return v
	}
	return ""
}

// upTo keeps the words of a value up to the last one in set ("yoga most
// mornings" → "yoga"); "" when none is.
func upTo(set map[string]bool) func(string) string {
	return func(v string) string {
		w := strings.Fields(v)
		for i := len(w); i > 0; i-- {
			if headOK(strings.Join(w[:i], " "), set) {
				return strings.Join(w[:i], " ")
			}
		}
		return ""
	}
}

// headOK reports whether the last word (or two) of v is in set.
func headOK(v string, set map[string]bool) bool {
	w := strings.Fields(strings.ToLower(v))
	if len(w) == 0 {
		return false
	}
	last := strings.Trim(w[len(w)-1], "'")
	if set[last] || set[strings.TrimSuffix(last, "s")] || set[strings.TrimSuffix(last, "es")] {
		return true
	}
	if len(w) > 1 {
		two := w[len(w)-2] + " " + last
		return set[two] || set[strings.ReplaceAll(two, "-", " ")]
	}
	return false
}
