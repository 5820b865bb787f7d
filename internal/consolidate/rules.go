package consolidate

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// rule reads one kind of statement. Its regexp's group "v" is where the
// value starts; a group named "rel" names the subject relation ("my
// sister …"), "thing" the animal, "attr" a word of the attribute.
type rule struct {
	name  string
	re    *regexp.Regexp
	k     kind
	subj  string // "user", "we", "rel" (the rel group), "thing", "activity", "item"
	attr  string // the attribute; "%" is replaced by the value's slug (many values)
	typ   Type
	conf  float64
	list  bool // the value may be a list: one fact per item
	dated bool // a date right after the value is part of it ("Madrid on June 12")
	short int  // at most this many words, cut at a word in -ing (0: no limit)
}

// alt is the alternation of the phrases of set (longest first), as a
// non-capturing group.
func alt(set map[string]bool) string {
	rs := make([]string, 0, len(set))
	for r := range set {
		rs = append(rs, strings.ReplaceAll(regexp.QuoteMeta(r), " ", `\s+`))
	}
	sort.Slice(rs, func(i, j int) bool { return len(rs[i]) > len(rs[j]) || (len(rs[i]) == len(rs[j]) && rs[i] < rs[j]) })
	return "(?:" + strings.Join(rs, "|") + ")"
}

// relAlt is the alternation of relations (longest first).
var relAlt = func() string {
	rs := make([]string, 0, len(relations))
	for r := range relations {
		rs = append(rs, regexp.QuoteMeta(r))
	}
	sort.Slice(rs, func(i, j int) bool { return len(rs[i]) > len(rs[j]) || (len(rs[i]) == len(rs[j]) && rs[i] < rs[j]) })
	// Words that tell two relatives apart are part of the subject (big
	// sister, twin sister); others are not (my late grandpa, my favorite aunt).
	return `(?:step-|distant |favorite |favourite |late |dear )?(?P<rel>(?:little |big |younger |older |twin |baby |oldest |youngest |eldest |middle |second |third )?(?:` + strings.Join(rs, "|") + `))`
}()

// i: the first person, as a word.
const (
	iAm   = `\bI(?:'m|’m| am)`
	iHave = `\bI(?:'ve|’ve| have)?`
	soon  = `(?:just |recently |finally |now |already |officially )?`
	named = `(?:[A-Z][a-z]+ )?` // "my sister Ana …"
	// adv: adverbs between "I" and a verb of liking.
	adv = `(?:(?:really|absolutely|just|totally|do|also|still|now|definitely|actually|much|strongly|generally|usually|always|honestly|genuinely|kind of|kinda|sort of) )*`
)

func r(name, expr string, k kind, subj, attr string, typ Type, conf float64) rule {
	return rule{name: name, re: regexp.MustCompile(expr), k: k, subj: subj, attr: attr, typ: typ, conf: conf}
}

var rules = func() []rule {
	rs := []rule{
		r("name", `(?i:\bmy name is |\bcall me |\bI go by )(?P<v>)`, kName, "user", "name", Semantic, 0.9),
		r("rel-name", `(?i:\b(?:my|our) `+relAlt+`(?:'s|’s) name is |\b(?:my|our) `+relAlt+` is (?:called|named) |\b(?:my|our) `+relAlt+`(?:'s|’s) called )(?P<v>)`, kName, "rel", "name", Semantic, 0.9),
		r("rel-named", `(?i:\bmy `+relAlt+`,? )(?P<v>)[A-Z][a-z]+,? (?i:is|was|has|had|got|just|lives|works|moved|finished|started|turned|and|who)\b`, kName, "rel", "name", Semantic, 0.7),
		r("moved", `(?i:`+iHave+` `+soon+`(?:moved|relocated) (?:back )?to )(?P<v>)`, kPlace, "user", "home_city", Semantic, 0.85),
		r("live", `(?i:\bI `+soon+`live in |`+iAm+` `+soon+`(?:living|based|settled) in )(?P<v>)`, kPlace, "user", "home_city", Semantic, 0.85),
		r("moving", `(?i:`+iAm+` (?:moving|relocating) to )(?P<v>)`, kPlace, "user", "home_city", Semantic, 0.65),
		r("we-live", `(?i:\bwe `+soon+`live in |\bwe(?:'re|’re| are) `+soon+`(?:living|based|settled) in )(?P<v>)`, kPlace, "user", "home_city", Semantic, 0.75),
		r("new-job", `(?i:`+iHave+` `+soon+`(?:got|landed|started|took|accepted) (?:a |my |the )?(?:new )?job (?:at|with) )(?P<v>)`, kName, "user", "employer", Semantic, 0.8),
		r("go-with", `(?i:\b(?:we|I)(?:'ll|’ll| will|'re|’re| are)? (?:go|going) with |\b(?:we|I)(?:'re|’re| are|'ll|’ll| will|'ve|’ve| have)? (?:now )?(?:switch|switching|switched|migrate|migrating|migrated) (?:over )?to )(?P<v>)`, kPhrase, "we", "decision/go_with", Semantic, 0.6),
		r("rel-fullname", `(?i:\b(?:my|our) `+relAlt+` is )(?P<v>)[A-Z][a-z]+ [A-Z][a-z]+\b`, kName, "rel", "name", Semantic, 0.75),
		r("rel-age", `(?i:\b(?:my|our) `+relAlt+` )`+named+`(?i:is |just turned |turned )(?P<v>)\d{1,3}(?i: years old\b| months old\b|[.,!;]|$| and\b| now\b)`, kPhrase, "rel", "age", Semantic, 0.8),
		r("we-moved", `(?i:\bwe(?:'ve|’ve| have)? `+soon+`(?:moved|relocated) (?:back )?to )(?P<v>)`, kPlace, "user", "home_city", Semantic, 0.75),
		r("from", `(?i:`+iAm+` (?:originally )?from |\bI (?:originally )?come from |\bI grew up in )(?P<v>)`, kPlace, "user", "hometown", Semantic, 0.8),
		r("born", `(?i:\bI was born in )(?P<v>)`, kPlace, "user", "birthplace", Semantic, 0.85),
		r("rel-moved", `(?i:\bmy `+relAlt+` )`+named+`(?i:(?:is |has |just |recently )*(?:moved|relocated|moving|relocating) to )(?P<v>)`, kPlace, "rel", "home_city", Semantic, 0.75),
		r("rel-lives", `(?i:\bmy `+relAlt+` )`+named+`(?i:(?:now |still )?lives in )(?P<v>)`, kPlace, "rel", "home_city", Semantic, 0.8),
		r("work-at", `(?i:\bI `+soon+`work (?:at|for) |`+iAm+` `+soon+`working (?:at|for) |`+iAm+` (?:employed|hired) (?:at|by) )(?P<v>)`, kName, "user", "employer", Semantic, 0.85),
		r("offer", `(?i:`+iHave+` `+soon+`(?:accepted|took|got|signed) (?:an?|the|their) (?:job )?offer (?:from|at|with) )(?P<v>)`, kName, "user", "employer", Semantic, 0.8),
		r("joined-org", `(?i:`+iHave+` `+soon+`(?:joined|started at|started working at) )(?P<v>)`, kName, "user", "employer", Semantic, 0.65),
		r("work-as", `(?i:\bI `+soon+`work as (?:an? |the )?|`+iAm+` (?:going to be |gonna be |now )?(?:their|the|our|its|a|an) new |`+iHave+` (?:been )?(?:promoted|hired) (?:to|as) (?:an? |the )?)(?P<v>)`, kPhrase, "user", "job_title", Semantic, 0.75),
		r("i-am-a", `(?i:`+iAm+` (?:now |currently |still )?(?:an? |the )(?P<v>))(?i:[a-z-]+ ){0,3}?`+alt(jobs)+`\b`, kPhrase, "user", "job_title", Semantic, 0.8),
		r("i-am-a-at", `(?i:`+iAm+` (?:now |currently |still )?(?:an? |the )(?:[a-z-]+ ){0,3}?`+alt(jobs)+` (?:at|for|with) )(?P<v>)`, kName, "user", "employer", Semantic, 0.75),
		r("allergic", `(?i:`+iAm+` (?:severely |very |deathly |really |quite |also )?allergic to )(?P<v>)`, kPhrase, "user", "allergy/%", Semantic, 0.95),
		r("rel-allergic", `(?i:\b(?:my|our) `+relAlt+` )`+named+`(?i:(?:is|has been) (?:severely |very |deathly |really |quite |also )?allergic to )(?P<v>)`, kPhrase, "rel", "allergy/%", Semantic, 0.85),
		r("diet", `(?i:(?:`+iAm+`|\b(?:we|[a-z]+ and I)(?:'re|’re| are)) (?:both |all |a |an |strictly |fully )?)(?P<v>)(?i:vegetarian|vegan|pescatarian|lactose[- ]intolerant|gluten[- ]intolerant|celiac|coeliac|diabetic|teetotal)\b`, kPhrase, "user", "diet", Semantic, 0.9),
		r("avoid", `(?i:\bI (?:can't|can’t|cannot|don't|don’t|do not) (?:eat|drink) )(?P<v>)`, kPhrase, "user", "avoids/%", Semantic, 0.8),
		r("prefer", `(?i:\bI `+adv+`prefer )(?P<v>)`, kPhrase, "user", "prefers/%", Semantic, 0.85),
		r("like", `(?i:\bI `+adv+`(?:love|like|enjoy|adore) )(?P<v>)`, kPhrase, "user", "likes/%", Semantic, 0.7),
		r("fan", `(?i:`+iAm+` (?:a )?(?:huge |big |massive )?fan of )(?P<v>)`, kPhrase, "user", "likes/%", Semantic, 0.7),
		r("dislike", `(?i:\bI `+adv+`(?:hate|dislike|detest|can't stand|can’t stand|cannot stand|don't like|don’t like|do not like|don't enjoy|don’t enjoy) )(?P<v>)`, kPhrase, "user", "dislikes/%", Semantic, 0.75),
		r("favorite", `(?i:\bmy (?:all-time )?favou?rite (?P<attr>[a-z]+(?: [a-z]+)?) (?:is|are|has to be) )(?P<v>)`, kPhrase, "user", "favorite_@", Semantic, 0.9),
		r("have-named", `(?i:\bI (?:have|own|got) (?:an?|one|two|three|\d+) (?P<thing>[a-z]+(?:[ -][a-z]+)?) (?:named|called) )(?P<v>)`, kName, "thing", "name", Semantic, 0.85),
		r("thing-name", `(?i:\b(?:he|she|it|they) (?:answers?|goes|go|respond|responds) (?:to|by) (?:the name )?|\b(?:his|her|its|their) name is |\bwe (?:named|called) (?:him|her|it|them) |\bwe(?:'re|’re| are) calling (?:him|her|it|them) )(?P<v>)`, kName, "thing", "name", Semantic, 0.8),
		r("count", `(?i:\bI have )(?P<v>)(?i:\d+|one|two|three|four|five|six|no) (?P<attr>kids|children|sons|daughters|cats|dogs|siblings|brothers|sisters|grandchildren)\b`, kPhrase, "user", "@_count", Semantic, 0.85),
		r("teacher", `(?i:\b(?:the|our|my) `+alt(roles)+` (?:is|was) (?:an? |the )?(?:[A-Za-z'-]+ ){0,5}?(?:called|named) |\b(?:the|our|my) `+alt(roles)+` is )(?P<v>)`, kName, "activity", "teacher", Semantic, 0.8),
		r("teacher-runs", `(?P<v>)[A-Z][a-z]+ (?i:teaches|coaches|runs|leads|takes) (?i:us|the class|the course|it|the sessions|the group)\b`, kName, "activity", "teacher", Semantic, 0.7),
		r("my-attr", `(?i:\bmy (?:[a-z]+ )?(?P<attr>`+alt(attributes)+`) (?:is|'s|’s) (?:now |actually )?)(?P<v>)`, kPhrase, "user", "@", Semantic, 0.85),
		r("age", `(?i:`+iAm+` |\bI (?:just )?turned )(?P<v>)\d{1,3}(?i: years old\b| yo\b|[.,!]|$| (?:now|today|this year|last week|last month)\b)`, kPhrase, "user", "age", Semantic, 0.85),
		r("allergy-have", `(?i:\bI have (?:a |an |severe |a severe |a mild )?)(?P<v>)[a-z]+(?: [a-z]+)?(?i: allerg(?:y|ies))\b`, kPhrase, "user", "allergy/%", Semantic, 0.9),
		r("work-in", `(?i:\bI `+soon+`work in |`+iAm+` (?:working )?in the )(?P<v>)[a-z][a-z ]{2,30}?(?i: (?:industry|field|sector|business))?[.,!]`, kPhrase, "user", "industry", Semantic, 0.7),
		r("study", `(?i:`+iAm+` (?:studying|majoring in|doing a (?:degree|masters|master's|phd) in)|\bI (?:study|major in) )(?P<v>)`, kPhrase, "user", "studies", Semantic, 0.8),
		r("speak", `(?i:\bI (?:speak|am fluent in|'m fluent in|’m fluent in) )(?P<v>)`, kName, "user", "speaks/%", Semantic, 0.8),
		r("drive", `(?i:\bI (?:drive|own) (?:an?|the) )(?P<v>)[A-Z]`, kName, "user", "car", Semantic, 0.7),
		r("trip-back", `(?i:\b(?:I|we)(?:'ve|’ve| have)? `+soon+`(?:got back|came back|returned|flew back|am back|are back|'re back|’re back|'m back|’m back) from )(?P<v>)`, kPlace, "user", "trip/%", Semantic, 0.75),
		r("trip-booked", `(?i:\b(?:I|we)(?:'ve|’ve| have)? `+soon+`booked (?:flights|a flight|tickets|a ticket|a trip|a holiday|a vacation|a train|a cabin|a hotel) (?:to|in) )(?P<v>)`, kPlace, "user", "trip/%", Semantic, 0.75),
		r("trip-went", `(?i:\b(?:I|we) (?:went|flew|traveled|travelled|drove) (?:over |down |up )?to )(?P<v>)`, kPlace, "user", "trip/%", Semantic, 0.65),
		r("trip-going", `(?i:(?:`+iAm+`|\bwe(?:'re|’re| are)) (?:flying|traveling|travelling|heading|going|driving|off) (?:from [A-Z][\w-]*(?: [A-Z][\w-]*)? )?to )(?P<v>)`, kPlace, "user", "trip/%", Semantic, 0.65),
		r("injury", `(?i:\bI (?:hurt|injured|broke|sprained|twisted|messed up|pulled|strained|tore|fractured|bruised|dislocated|wrecked) my )(?P<v>)`, kPhrase, "user", "injury/%", Semantic, 0.8),
		r("degree", `(?i:\bmy `+relAlt+` )`+named+`(?i:(?:just |finally |recently )*(?:finished|completed|got|earned|graduated with) (?:a|an|his|her|their) (?:degree|bachelor's|master's|masters|phd|diploma|doctorate)(?: degree)? in )(?P<v>)`, kPhrase, "rel", "degree", Semantic, 0.8),
		r("my-degree", `(?i:`+iHave+` (?:just |finally |recently )*(?:finished|completed|got|earned|graduated with) (?:a|an|my) (?:degree|bachelor's|master's|masters|phd|diploma|doctorate)(?: degree)? in )(?P<v>)`, kPhrase, "user", "degree", Semantic, 0.8),
		r("wedding", `(?i:\bthe (?:wedding|ceremony) (?:is|will be|is going to be|'s going to be|’s going to be) (?:held )?in )(?P<v>)`, kPlace, "rel", "wedding_place", Semantic, 0.7),
		r("decided", `(?i:\b(?:we|I)(?:'ve|’ve| have)? (?:finally |just )?(?:decided|agreed|chose|opted) (?:to |on )|\b(?:we|I)(?:'ve|’ve| have)? (?:finally |just )?settled on )(?P<v>)`, kPhrase, "we", "decision/#", Semantic, 0.8),
		r("deadline", `(?i:\bthe deadline(?: for(?: [a-z-]+){1,4}?)? is (?:now )?|\bit(?:'s|’s| is) due (?:on |by )?)(?P<v>)`, kPhrase, "we", "deadline", Semantic, 0.8),
		r("tried", `(?i:`+iHave+` (?:already |also )?tried )(?P<v>)[^.!?]*?(?i:\b(?:but|and|,|;|-|—)\s*(?:it |that |this |they )?(?:still )?(?:worked|works|didn't work|did not work|doesn't work|does not work|failed|fails|helped|didn't help|did not help|fixed it|solved it|made it worse|broke|crashed|no luck|did nothing|changed nothing|timed out|errored|threw an error))`, kPhrase, "user", "tried/%", Episodic, 0.7),
	}
	for i := range rs {
		switch rs[i].name {
		case "allergic", "rel-allergic", "avoid", "like", "fan", "dislike":
			rs[i].list = true
		case "trip-going", "trip-booked", "trip-went":
			rs[i].dated = true
		case "injury":
			rs[i].short = 2
		}
		if !slices.Contains(rs[i].re.SubexpNames(), "v") {
			panic("consolidate: rule " + rs[i].name + " has no value group")
		}
	}
	return rs
}()

// instructionRE: a refined instruction to the assistant.
var instructionRE = regexp.MustCompile(`(?i)^(?:please,? )?(?:always|never) \w|\b(?:from now on|going forward|in (?:the )?future|next time)[,:]? |^(?:please )?(?:don't|don’t|do not) ever |\bI want you to (?:always|never|stop) |^please (?:stop|always|never|don't|don’t|do not) `)

// decisionLetRE: "let's ship on Friday" (with a key fact).
var decisionLetRE = regexp.MustCompile(`(?i)\blet(?:'s|’s| us) (?:go with |do |)(?P<v>)`)

// notDecisionRE: "let's say", "let's see", … decide nothing.
var notDecisionRE = regexp.MustCompile(`(?i)^(?:say|see|talk|think|chat|hope|try|start|begin|move on|get started|continue|recap|review|check|look|figure|keep in touch|catch up)\b`)

// correctionRE: an elliptical correction of the previous statement.
var correctionRE = regexp.MustCompile(`(?i)^(?:(?:actually|no|nope|sorry|wait|oh|hmm|ok|okay|so|correction|scratch that|on second thought)[,!.:—-]* )*(?:make (?:it|that) |change (?:it|that) to |use |switch (?:it )?to |update (?:it|that) to |replace (?:it|that) with |let(?:'s|’s) (?:do |say |make it )|move (?:it|that) to |push (?:it|that) (?:back )?to |I meant |I mean |it(?:'s|’s| is) (?:actually |now )?|(?:it|that) should be )(?P<v>)`)

// correctionMark: a sentence starting with one of these corrects the one
// before it.
var correctionMark = regexp.MustCompile(`(?i)^(?:actually|no|sorry|wait|correction|scratch that|on second thought|i meant|i mean)\b`)

// hedgeRE: a statement in a clause with one of these is no fact.
var hedgeRE = regexp.MustCompile(`(?i)\b(?:if|unless|whether|might|maybe|perhaps|would|could|should|wonder|wondering|thinking (?:about|of)|considering|hope|hoping|wish|want to|wants to|planning to|plan to|not sure|don't know|do you|did you|are you|have you|pretend|imagine|suppose|supposed|hypothetically|someday|one day|never|didn't|did not|don't|do not|not|no longer|isn't|wasn't|friend of mine|think|guess|suspect|probably|possibly|supposedly|apparently)\b`)

// reportedRE: a statement after one of these in its sentence is someone
// else's words ("my friend said: I moved to Paris").
var reportedRE = regexp.MustCompile(`(?i)\b(?:said|says|told me|tells me|asked|asks|wrote|writes|quote|quoting|the message reads|texted|write|draft|compose|translate|rephrase|rewrite|reword|proofread|summarize|summarise|pretend|roleplay|role-play|role play|as if|starts with|example|template|sample|character|story|poem|script)\b`)

// hedgeBeforeValueRE: for rules whose own words hold a negation ("I
// don't like …"), only these hedge.
var hedgeWeakRE = regexp.MustCompile(`(?i)\b(?:if|unless|whether|might|maybe|perhaps|would|could|wonder|pretend|imagine|suppose|hypothetically)\b`)

// activityRE names the activity a later "the teacher is …" is about.
var activityRE = regexp.MustCompile(`(?i)\b(?:signed up for|enrolled in|registered for|started taking|started going to|started attending|signed up to) (?:an?|the|some|my)? ?([a-z][a-z' -]{1,40}?(?:\s+(?:class|classes|course|lessons)\b)?)(?:[,.;!]| (?:last|this|next|yesterday|today|earlier|recently|a few|a couple|the other|two|three|on|at|in|with|and|because)\b|$)|\b(?:signed up for|enrolled in|started going to|started taking|started attending|joined|registered for|taking|take|started|go to|attend|attending|on my|about my|in my|update on my|with my) (?:an?|the|some|my)? ?([a-z][a-z' -]{1,40}?(?:class|classes|course|lessons|club|team|workshop|group|choir|circle|troupe|league|program|programme|band|gym|studio|sessions))\b`)

// thingRE names the animal or thing a later "he answers to …" is about.
var thingRE = regexp.MustCompile(`(?i)\b(?:we|I)(?:'ve|’ve| have)? (?:just |finally )?(?:adopted|brought home|got|rescued|welcomed|took in) (?:an?|our|my|a new|a little|a tiny) (?:new |little |tiny |sweet )?([A-Za-z][A-Za-z -]{1,30}?)(?: from| at| last| this| yesterday| today| on|[,.!]|$)|\b(?:our|my) ([a-z][a-z -]{1,24}?) (?:isn't|is not|is no longer|is now|was renamed)`)

// itemRE names a purchase; priceRE its price.
var itemRE = regexp.MustCompile(`(?i)` + iHave + ` (?:just |finally |recently )?(?:bought|purchased|ordered|got myself|picked up|splurged on) (?:an?|the|some|my|a new|new|a used|a secondhand) ([a-z][a-zA-Z -]{1,40}?)(?: for| from| at| last| this| yesterday| today| on| earlier| recently| over| a few| a couple| the other| \d|[,.!]|$)|\b(?:receipt|price|invoice) for (?:the|my) ([a-z][a-zA-Z -]{1,40}?)[:,.]`)
var priceRE = regexp.MustCompile(`(?i)(?:\bfor|\bpaid|\bcost|\bcosts|\bwas|\bit's|\bit’s|\bspent)\s+(?:only |just |about |around |almost |nearly |over )?([$€£]\s?\d[\d,]*(?:\.\d+)?k?|\d[\d,]*(?:\.\d+)?k?\s?(?:dollars|euros|bucks|pounds))`)

// relMentionRE: "my little brother Tom …": the relation a later "the
// wedding is in …" is about.
var relMentionRE = regexp.MustCompile(`(?i:\bmy ` + relAlt + `)\b`)
