package convgen

// Text pools. Fact values are built from the value pools (names, decisions,
// customers, formats in values.go) and are unique in a conversation; the
// filler pools below never hold a fact value's shape (no thousands with
// commas, no ISO dates, no XXX-0000 ids, no full names), so a value string
// found in a message was planted there. The generator test checks it.

const systemPrompt = "You are a helpful project assistant for a small product team. " +
	"Keep answers short, keep track of budgets, owners, deadlines, decisions and tickets, " +
	"and use the tools when asked about customers or orders."

type topicDef struct {
	name string // "Orion migration"
	code string // ticket prefix
}

var topicPool = []topicDef{
	{"Orion migration", "ORN"}, {"Helios mobile app", "HEL"}, {"Vega data pipeline", "VEG"},
	{"Atlas billing revamp", "ATL"}, {"Nimbus support bot", "NIM"}, {"Kestrel warehouse robots", "KES"},
	{"Lumen design system", "LUM"}, {"Tidewater office move", "TID"}, {"Quasar search rewrite", "QSR"},
	{"Marigold onboarding flow", "MRG"},
}

var firstNames = []string{
	"Priya", "Tomasz", "Ingrid", "Kwame", "Lucia", "Haruto", "Amara", "Mateo", "Freya", "Dmitri",
	"Noor", "Emeka", "Sofia", "Rafael", "Yuki", "Oskar", "Leila", "Bastian", "Chiara", "Anders",
	"Zanele", "Ilse", "Farid", "Marguerite", "Thiago", "Annika", "Kofi", "Beatriz", "Henrik", "Saoirse",
}

var lastNames = []string{
	"Natarajan", "Wozniak", "Halvorsen", "Mensah", "Ferreira", "Takahashi", "Okafor", "Castellanos",
	"Lindqvist", "Volkov", "Haddad", "Eze", "Moretti", "Quintero", "Nakamura", "Berglund", "Farahani",
	"Kruger", "Esposito", "Dahlgren", "Dlamini", "Vermeulen", "Rahimi", "Delacroix", "Saldanha",
	"Holmberg", "Asante", "Carvalho", "Sorensen", "Gallagher",
}

type decisionCat struct {
	name    string // "database"
	options []string
}

var decisionCats = []decisionCat{
	{"database", []string{"PostgreSQL", "CockroachDB", "ClickHouse", "MariaDB", "ScyllaDB", "FoundationDB", "TimescaleDB", "YugabyteDB", "SingleStore", "Couchbase"}},
	{"hosting provider", []string{"Hetzner", "OVHcloud", "Scaleway", "DigitalOcean", "Linode", "Vultr", "Exoscale", "UpCloud"}},
	{"CI system", []string{"Buildkite", "CircleCI", "TeamCity", "Woodpecker", "Concourse", "Semaphore", "Jenkins", "Drone CI"}},
	{"frontend framework", []string{"SvelteKit", "SolidJS", "Angular", "Preact", "Qwik", "Ember.js", "Vue.js", "Remix"}},
	{"payment provider", []string{"Stripe", "Adyen", "Mollie", "Braintree", "Paddle", "Worldpay", "GoCardless", "Razorpay"}},
	{"moving company", []string{"Brightline Movers", "Crane & Sons", "Pelican Relocation", "Northstar Removals", "Swift Haulage", "Bluebird Moving"}},
}

var ticketIssues = []string{
	"login timeout bug", "memory leak in the importer", "broken CSV export", "flaky integration test",
	"slow dashboard query", "wrong VAT rounding", "missing audit log entries", "push notification delay",
	"duplicate invoice emails", "crash on empty cart",
}

var deliverables = []string{
	"send the revised vendor contract", "finish the load-test report", "draft the rollout plan",
	"review the security checklist", "prepare the demo for the board", "write the migration runbook",
	"update the cost forecast", "clean up the backlog", "collect the accessibility feedback",
	"book the training sessions",
}

var customerPool = []string{
	"Acme Logistics", "Brightwater Foods", "Corvid Analytics", "Dunmore Textiles", "Evergreen Clinics",
	"Foxglove Media", "Granite Insurance", "Harbor Freight Lines", "Ironbark Energy", "Kiln Ceramics",
	"Larkspur Hotels", "Marlow Legal",
}

var tiers = []string{"bronze", "silver", "gold", "platinum"}

var regions = []string{"eu-central", "eu-west", "us-east", "ap-south"}

var dogNames = []string{"Biscotti", "Pimento", "Waffles", "Mochi", "Pretzel", "Gnocchi", "Paprika", "Truffle"}

var cities = []string{"Lisbon", "Reykjavik", "Osaka", "Montreal", "Nairobi", "Valparaiso", "Tallinn", "Hobart"}

// Filler: small talk, explanations, status noise.

var chitUser = []string{
	"How's your day going?",
	"It's raining again here, typical.",
	"I just made a second coffee, long day ahead.",
	"Any tips for staying focused in the afternoon?",
	"My commute took forever today, the trains were a mess.",
	"Do you have a favourite book about software design?",
	"I'm thinking about taking a long weekend soon.",
	"The office is really quiet this morning.",
	"Can you tell me a short joke?",
	"I had a great lunch at the new ramen place around the corner.",
	"My neighbour is renovating and the drilling is driving me mad.",
	"I finally fixed my bike over the weekend.",
	"Do you think standing desks are worth it?",
	"We had a fire drill in the middle of a call, fun times.",
	"What's a good way to say no to meetings politely?",
	"I keep forgetting to drink water during the day.",
	"Our team lunch is on Thursday, any ideas for a place?",
	"I tried a new running route yesterday, my legs hurt.",
	"The coffee machine broke again.",
	"Is it normal to feel tired after too many video calls?",
	"I started learning to play the piano, slowly.",
	"Someone brought cake to the office, best start of a day.",
	"Do you have a recommendation for a podcast about history?",
	"I'm trying to cut down on screen time in the evenings.",
	"The heating in the meeting room is broken and it's freezing.",
	"What's the best way to organise a messy inbox?",
	"I spent way too long choosing a font for a slide today.",
	"My laptop fan sounds like a jet engine.",
}

var chitAssistant = []string{
	"Sounds like a busy one! I'm here whenever you need a hand.",
	"That happens to everyone. A short walk usually helps more than another coffee.",
	"Ha, I hope the rest of the day is calmer.",
	"Good question. Short blocks of focused time with real breaks tend to work well.",
	"Here's one: why do programmers prefer dark mode? Because light attracts bugs.",
	"That sounds lovely, enjoy it.",
	"Try batching similar tasks together, it reduces the switching cost.",
	"I'd say it depends on the person, but alternating sitting and standing helps many people.",
	"Saying that you want to protect focus time for the project is usually well received.",
	"A water bottle on the desk is a simple reminder that works surprisingly well.",
	"Nice, small wins like that make a week better.",
	"Oh no. Noise-cancelling headphones might save the day.",
	"Pick somewhere with a big table and a short menu, it keeps things easy.",
	"It is very normal. Turning the camera off now and then helps.",
	"Rules and folders help, but archiving aggressively helps most.",
	"Good on you! Consistency beats intensity.",
}

var explainUser = []string{
	"Can you explain %s in a few sentences?",
	"I never really understood %s. What's the gist?",
	"Quick one: why do people care so much about %s?",
	"What should a small team know about %s?",
	"Give me a short overview of %s, please.",
}

var concepts = []string{
	"idempotency keys", "blue-green deployments", "consistent hashing", "event sourcing",
	"feature flags", "rate limiting", "canary releases", "database indexing", "circuit breakers",
	"backpressure", "schema migrations", "observability", "technical debt", "code review",
	"load balancing", "cache invalidation", "incident postmortems", "capacity planning",
}

var explainSentences = []string{
	"{C} is easiest to understand as a trade-off between speed and safety.",
	"Most teams adopt {c} after a painful incident rather than up front.",
	"A good first step is to write down what {c} should guarantee and what it should not.",
	"The cost of {c} usually shows up in operations more than in the code itself.",
	"Measure before and after you introduce {c}, otherwise you are guessing.",
	"When {c} fails, it tends to fail at the boundaries between systems.",
	"Keep the first version of {c} small and boring.",
	"Document the reasoning so that new people understand why {c} exists at all.",
	"{C} works best when one team clearly owns it.",
	"Be careful with defaults, because {c} rarely behaves well out of the box.",
	"The classic mistake with {c} is to treat it as a one-off project instead of a habit.",
	"There is plenty of tooling around {c}, but the concepts matter more than the tools.",
	"If you only remember one thing about {c}, remember that it needs to be tested under load.",
	"People often confuse {c} with related ideas, so agree on the vocabulary first.",
	"In practice {c} is less about technology and more about agreeing on responsibilities.",
	"You can introduce {c} gradually, one service or one team at a time.",
}

var statusUser = []string{
	"Quick status on the {T}: {a} of {b} tasks are done and {c} are blocked.",
	"The {T} team spent most of today on planning, not much visible progress.",
	"I'm a bit nervous about the {T} budget, but it should be fine.",
	"Had a long meeting about the {T} deadline today, nothing new was decided.",
	"Who should I talk to about the {T} lead role? Never mind, I'll ask around.",
	"The {T} demo went okay, {a} people joined and asked about {b} follow-ups.",
	"There were {a} new bugs reported on the {T} this week, mostly cosmetic.",
	"Not much happened on the {T} today, people were out sick.",
	"The decision on the {T} keeps getting postponed, it's frustrating.",
	"We reviewed the {T} tickets this morning and closed {a} of them.",
}

var statusAssistant = []string{
	"Thanks for the update. It might help to list the blockers with an owner next to each one.",
	"Understood. If it keeps slipping, consider cutting scope rather than adding people.",
	"That's a normal phase. A short written summary for stakeholders usually calms things down.",
	"Noted. Let me know if you want help drafting an update for the team.",
	"Sounds like progress, even if slow. Keep the next step small and concrete.",
	"Good to know. A quick check-in with the people involved might unblock things.",
}

var ackAssistant = []string{
	"Noted.",
	"Got it, I'll keep that in mind.",
	"Thanks, I've written that down.",
	"Understood, thanks for letting me know.",
	"Okay, recorded.",
}

var openerUser = []string{
	"(%s) Morning! I'm back, let's pick up where we left off.",
	"(%s) Hi again. New day, lots to do.",
	"(%s) Hello! Back after a few days away.",
	"(%s) Hey, it's me again. Ready for another session?",
}

var openerAssistant = []string{
	"Welcome back! Ready when you are.",
	"Hi! Good to see you again. What's first today?",
	"Hello again. Let's get going.",
}

var closerUser = []string{
	"That's all for today, thanks!",
	"Okay, I need to run. Talk later.",
	"Great, I'll stop here for today.",
}

var closerAssistant = []string{
	"You're welcome. Have a good rest of the day!",
	"Talk soon, good luck with everything.",
	"Sounds good. See you next time.",
}

var docTopics = []string{
	"rotating API keys", "configuring retries", "exporting audit logs", "setting up SSO",
	"tuning connection pools", "archiving old projects",
}

var weatherConditions = []string{"light rain", "sunny", "overcast", "windy", "snow showers", "fog"}
