package dialoggen

// The word pools. A value pool (names, cities, companies, prices, places)
// never shares a word with the small talk pools, so a value found in a
// context was said where the generator planted it. A pair pool gives the
// words a turn uses ("ev") and the words a question uses ("q") for the same
// thing: they share no content word (the tests check it).

type pair struct{ ev, q string }

var speakerNames = []string{
	"Caroline", "Melanie", "Jolene", "Deborah", "Andrew", "Audrey", "Nathan", "Joanna", "Timothy", "Gina",
	"Evan", "Samantha", "Calvin", "Priya", "Marcus", "Helena", "Rafael", "Yusuf", "Ingrid", "Lorenzo",
}

// firstNames are the names of instructors and relatives (values).
var firstNames = []string{
	"Tomas", "Nadia", "Beatrix", "Oskar", "Lucinda", "Dmitri", "Fenella", "Gustavo", "Harriet", "Ignatius",
	"Juliska", "Kasimir", "Leopold", "Marisol", "Norberto", "Ottilie", "Perpetua", "Quentin", "Rosalind", "Severin",
	"Thaddeus", "Ursula", "Valentin", "Wilhelmina", "Xiomara", "Yevgeny", "Zenobia", "Anselm", "Bronwyn", "Cosimo",
	"Delphine", "Eustace", "Florentina", "Gideon", "Hortense", "Isidore", "Jessamy", "Kallisto", "Lysander", "Mireille",
	"Nikolai", "Ophelia", "Pascual", "Rosamund", "Sigrid", "Tancredi", "Umberto", "Vesna", "Wendeline", "Zoltan",
	"Agatha", "Benedikt", "Clementine", "Desmond", "Eleonora", "Fitzgerald", "Griselda", "Horatio", "Imogen", "Jasper",
}

var petNames = []string{
	"Biscuit", "Pickles", "Mochi", "Snickers", "Pretzel", "Waffles", "Nugget", "Clover", "Ziggy", "Marzipan",
	"Tofu", "Peppercorn", "Olive", "Noodle", "Sprout", "Dumpling", "Pistachio", "Gnocchi", "Bramble", "Wasabi",
	"Chutney", "Pudding", "Sesame", "Rutabaga", "Crumpet", "Falafel", "Parsnip", "Gizmo", "Paprika", "Macaron",
}

var cities = []string{
	"Lisbon", "Denver", "Portland", "Kyoto", "Marrakesh", "Reykjavik", "Tallinn", "Valparaiso", "Ljubljana", "Hanoi",
	"Cartagena", "Edinburgh", "Tbilisi", "Oaxaca", "Bergen", "Seville", "Krakow", "Hobart", "Cusco", "Montreal",
	"Porto", "Dubrovnik", "Savannah", "Asheville", "Sapporo", "Bruges", "Zanzibar", "Halifax", "Salzburg", "Tucson",
	"Galway", "Trieste", "Luang Prabang", "Mendoza", "Antigua", "Plovdiv", "Boise", "Chiang Mai", "Nantes", "Cork",
}

var companies = []string{
	"Brightwave", "Northloop", "Tidewell", "Corvana", "Halcyon Labs", "Quillstone", "Ferrovia", "Lumentis", "Pinecrest Analytics", "Orbitel",
	"Saltmarsh Studio", "Veridian Health", "Kestrel Freight", "Mosaic Robotics", "Ashgrove Bank", "Nimbus Foods", "Copperleaf", "Windrose Media", "Granite Peak Insurance", "Sablewood",
}

var roles = []string{
	"data analyst", "product designer", "project coordinator", "UX researcher", "logistics planner", "account executive",
	"grant writer", "QA engineer", "dental hygienist", "sous-chef", "paralegal", "sound technician",
	"landscape architect", "HR generalist", "pharmacy technician", "copy editor", "claims adjuster", "lab manager",
}

var fields = []string{
	"marine biology", "architecture", "nursing", "accounting", "forensic science", "linguistics", "veterinary medicine",
	"civil engineering", "art history", "occupational therapy", "astrophysics", "agronomy", "criminology", "musicology",
}

var bodyParts = []string{"ankle", "wrist", "knee", "shoulder", "elbow", "lower back", "hamstring", "collarbone", "thumb", "calf muscle", "rib", "big toe"}

// hobbies: the class as a turn says it and as a question says it.
var hobbies = []pair{
	{"pottery class", "ceramics workshop"}, {"salsa lessons", "Latin dance course"}, {"watercolor course", "painting group"},
	{"bouldering gym", "climbing hall"}, {"community choir", "singing ensemble"}, {"woodworking course", "carpentry program"},
	{"improv troupe", "comedy theater group"}, {"knitting circle", "yarn crafts meetup"}, {"photography club", "camera society"},
	{"beekeeping course", "apiary training"}, {"pilates studio", "core fitness sessions"}, {"sourdough baking workshop", "bread making program"},
	{"fencing club", "sword sport"}, {"Spanish conversation class", "language exchange"}, {"ukulele lessons", "string instrument training"},
	{"life drawing sessions", "figure sketching group"},
}

var teacherWords = []string{"instructor", "teacher", "coach", "tutor", "guy running it", "woman who runs it"}
var teacherDescr = []string{
	"retired architect", "former stage actor", "grumpy but brilliant grandpa", "very patient grad student",
	"semi-famous local artist", "cheerful ex-marine", "soft-spoken librarian", "former Olympic hopeful",
}

// pets: the animal as a turn says it and as a question says it.
var pets = []pair{
	{"beagle puppy", "dog"}, {"tabby kitten", "cat"}, {"rescue greyhound", "hound"}, {"budgie", "bird"},
	{"bearded dragon", "lizard"}, {"lop-eared rabbit", "bunny"}, {"Maine Coon", "feline"}, {"hamster", "rodent"},
	{"cockatiel", "parrot"}, {"border collie", "sheepdog"}, {"guinea pig", "cavy"}, {"corgi pup", "canine"},
}
var petAntics = []string{
	"already chewed through a phone charger", "sleeps on my feet every night", "is terrified of the vacuum",
	"steals socks out of the laundry basket", "follows me from room to room", "has claimed the sunny spot by the window",
	"learned to open the treat drawer", "yells at the neighbors' pigeons",
}
var shelters = []string{"shelter", "rescue center", "breeder out in the countryside", "adoption fair at the mall", "neighbor whose litter needed homes"}

// relatives: as a turn says it and as a question says it.
var relatives = []pair{
	{"little brother", "younger sibling"}, {"big sister", "older sibling"}, {"twin sister", "twin"},
	{"grandma", "grandmother"}, {"grandpa", "grandfather"}, {"stepdad", "stepfather"}, {"mom", "mother"},
	{"dad", "father"}, {"aunt", "father's sister"}, {"uncle", "mother's brother"}, {"cousin", "first cousin"},
	{"niece", "sister's daughter"},
}

// occasions of a trip: as a turn says it and as a question says it.
var occasions = []pair{
	{"for our anniversary", "to celebrate years of marriage"}, {"for a work conference", "on business"},
	{"to see my in-laws", "to visit the spouse's family"}, {"for a food festival", "for a culinary event"},
	{"for my birthday", "when turning a year older"}, {"for a friend's bachelorette", "for a pre-wedding party"},
	{"for a half marathon", "to run a race"}, {"for a college reunion", "to meet old classmates"},
	{"for a jazz festival", "for live music"}, {"on a solo backpacking thing", "alone with a rucksack"},
	{"for a cousin's christening", "for a baby's baptism"}, {"for a yoga retreat", "for a wellness getaway"},
}
var tripFood = []string{"seafood", "street food", "pastries", "coffee", "noodles", "wine", "tacos", "dumplings"}

// activities where an injury happens: as a turn says it, as a question.
var activities = []pair{
	{"on the trail", "hiking"}, {"at the rink", "ice skating"}, {"during pickup basketball", "playing hoops"},
	{"moving a couch", "shifting furniture"}, {"at the trampoline park", "jumping around"}, {"slipping on the stairs", "a fall indoors"},
	{"in my spin class", "cycling indoors"}, {"surfing", "riding waves"}, {"gardening", "yard work"},
}

// purchases: the item as a turn says it and as a question says it.
var purchases = []pair{
	{"used Subaru Outback", "car"}, {"secondhand upright piano", "instrument"}, {"standing desk", "office furniture"},
	{"cargo e-bike", "bicycle"}, {"espresso machine", "coffee maker"}, {"inflatable kayak", "boat"},
	{"refractor telescope", "stargazing gear"}, {"robot vacuum", "cleaning gadget"}, {"mechanical keyboard", "computer accessory"},
	{"vintage record player", "turntable"}, {"rooftop tent", "camping equipment"}, {"sewing machine", "tailoring tool"},
	{"air fryer", "kitchen appliance"}, {"drum kit", "percussion set"},
}

// Continuity: what the assistant looks up and suggests.
var placeFirst = []string{"Copper", "Juniper", "Silver", "Heron", "Saffron", "Walnut", "Indigo", "Thistle", "Amber", "Cobalt", "Fennel", "Larch", "Quince", "Rowan", "Sorrel", "Tamarind"}

type taskDomain struct {
	tool, ask, kinds, plural string
	suffixes                 []string
	reasons                  []string
	steps                    []pair // the plan's second step (ev: %s is a place) and the place's suffix (q)
}

var taskDomains = []taskDomain{
	{"find_restaurants", "a place for dinner on Friday", "restaurant", "restaurants", []string{"Bistro", "Kitchen", "Table", "Trattoria"},
		[]string{"the reviews rave about the tasting menu", "they take reservations for big groups", "it is quiet enough to talk"},
		[]pair{{"grab dessert at %s afterwards", "Bakery"}, {"pick up flowers at %s on the way", "Florist"}}},
	{"find_trails", "an easy hike this weekend", "trail", "trails", []string{"Ridge Loop", "Falls Trail", "Meadow Path", "Creek Walk"},
		[]string{"it is mostly shaded", "it is under eight kilometers", "there is parking at the trailhead"},
		[]pair{{"stop for lunch at %s near the start", "Cafe"}, {"rent poles at %s", "Outfitters"}}},
	{"search_gifts", "a birthday present for my dad", "gift shop", "shops", []string{"Mercantile", "Emporium", "Goods", "Trading Post"},
		[]string{"they engrave for free", "they have handmade leather stuff", "they ship overnight"},
		[]pair{{"order a card from %s", "Press"}, {"get it wrapped at %s", "Paperie"}}},
	{"find_recipes", "something to cook for six people", "recipe", "recipes", []string{"Stew", "Tagine", "Bake", "Risotto"},
		[]string{"it scales up easily", "most of it can be made ahead", "it is vegetarian-friendly"},
		[]pair{{"buy the spices at %s", "Market"}, {"borrow a big pot from %s", "Hall"}}},
}

// poolSet is every pool a conversation draws from. Config.Pools selects
// one: the default set above, or the held-out set (pools_holdout.go),
// written apart from the search's lexicon to check that what helps on the
// default pools generalizes.
type poolSet struct {
	speakerNames, firstNames, petNames, cities, companies, roles, fields, bodyParts []string
	hobbies                                                                         []pair
	teacherWords, teacherDescr                                                      []string
	pets                                                                            []pair
	petAntics, shelters                                                             []string
	relatives, occasions                                                            []pair
	tripFood                                                                        []string
	activities, purchases                                                           []pair
	placeFirst                                                                      []string
	taskDomains                                                                     []taskDomain
}

var defaultPools = &poolSet{
	speakerNames: speakerNames, firstNames: firstNames, petNames: petNames, cities: cities, companies: companies,
	roles: roles, fields: fields, bodyParts: bodyParts, hobbies: hobbies, teacherWords: teacherWords, teacherDescr: teacherDescr,
	pets: pets, petAntics: petAntics, shelters: shelters, relatives: relatives, occasions: occasions, tripFood: tripFood,
	activities: activities, purchases: purchases, placeFirst: placeFirst, taskDomains: taskDomains,
}

// PoolSets are the valid values of Config.Pools.
var PoolSets = []string{"", "holdout"}

// poolsOf is the pool set of a Config.Pools (Validate checks the name).
func poolsOf(name string) *poolSet {
	if name == "holdout" {
		return holdoutPools
	}
	return defaultPools
}
