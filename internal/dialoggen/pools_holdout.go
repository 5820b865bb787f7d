package dialoggen

// The held-out pools (Config.Pools "holdout"): the same kinds of events as
// the default pools, with other items and other paraphrases, written the
// way people rephrase in everyday speech: a broader word ("instrument
// classes" for "cello lessons"), a synonym ("jacuzzi" for "hot tub"), a
// description ("thing that cleans plates" for "dishwasher"), a colloquial
// variant ("wiener dog" for "dachshund"). They were written without
// looking at the search's lexicon of related words, so the benchmark on
// them measures whether a gain from that lexicon generalizes. No item and
// no question wording is shared with the default pools (the tests check
// it), and the invariants are the same: a pair's ev and q share no content
// word; a value is said only where the generator plants it.
var holdoutPools = &poolSet{
	speakerNames: []string{
		"Bianca", "Declan", "Esther", "Felix", "Greta", "Hugo", "Irene", "Jonah", "Keiko", "Leon",
		"Mabel", "Nolan", "Odette", "Pierre", "Rosa", "Silas", "Tessa", "Victor", "Wanda", "Zara",
	},
	firstNames: []string{
		"Albrecht", "Berenice", "Cordelia", "Dorothea", "Emmerich", "Philippa", "Gwendolyn", "Hyacinth", "Ingeborg", "Jeremiah",
		"Konstantin", "Ludmila", "Maximilian", "Nicoletta", "Octavia", "Percival", "Radomir", "Solveig", "Theodora", "Ulrich",
		"Violetta", "Winifred", "Xavier", "Yolanda", "Zacharias", "Ambrose", "Bartholomew", "Cressida", "Dagmar", "Evander",
		"Fredrika", "Gottfried", "Henrietta", "Ignacio", "Jacinta", "Kunigunde", "Leocadia", "Mortimer", "Narcissa", "Osvaldo",
		"Petronella", "Reginald", "Seraphina", "Tiberius", "Ulrika", "Vladimir", "Wolfgang", "Ysolde", "Zephyrine", "Aurelio",
		"Bettina", "Cornelius", "Drusilla", "Ezekiel", "Filomena", "Godfrey", "Hildegard", "Isadora", "Jovanka", "Marguerite",
	},
	petNames: []string{
		"Buttons", "Tinsel", "Rascal", "Domino", "Pixel", "Bandit", "Cricket", "Marble", "Pebbles", "Sprocket",
		"Widget", "Banjo", "Zeus", "Apollo", "Luna", "Hercules", "Kismet", "Toffee", "Scout", "Jellybean",
		"Figaro", "Sherlock", "Gatsby", "Pumpkin", "Moose", "Bingo", "Rocket", "Smudge", "Whiskers", "Doodle",
	},
	cities: []string{
		"Valencia", "Bologna", "Nagoya", "Busan", "Lyon", "Gdansk", "Riga", "Vilnius", "Bratislava", "Ghent",
		"Aarhus", "Tromso", "Malaga", "Palermo", "Quebec City", "Winnipeg", "Pittsburgh", "Santa Fe", "Charleston", "Duluth",
		"Anchorage", "Honolulu", "Cape Town", "Windhoek", "Accra", "Nairobi", "Lima", "Quito", "Medellin", "Montevideo",
		"Cordoba", "Hoi An", "Penang", "Wellington", "Dunedin", "Perth", "Adelaide", "Jaipur", "Izmir", "Sarajevo",
	},
	companies: []string{
		"Thornbury Logistics", "Calloway Dynamics", "Redfern Pharma", "Oakhaven Studios", "Brisa Energy", "Lattice Works", "Heliograph", "Ironbark Partners", "Palisade Software", "Westmere Clinic",
		"Glasshouse Games", "Fernhollow Bank", "Cindervale", "Tessellate", "Mariner Biotech", "Umbra Security", "Driftwood Hotels", "Kiln & Co", "Paragon Textiles", "Sunfield Dairy",
	},
	roles: []string{
		"speech therapist", "payroll specialist", "machine learning engineer", "social media manager", "fundraising officer", "warehouse supervisor",
		"museum curator", "patent examiner", "flight dispatcher", "city planner", "radiology technologist", "quantity surveyor",
		"brand strategist", "clinical researcher", "actuary", "court stenographer", "dietitian", "IT support lead",
	},
	fields: []string{
		"neuroscience", "economics", "philosophy", "chemical engineering", "journalism", "oceanography", "public health",
		"graphic design", "pharmacology", "anthropology", "geology", "statistics", "zoology", "dentistry",
	},
	bodyParts: []string{"left heel", "forearm", "neck", "right hip", "groin", "Achilles", "jaw", "pinky finger", "tailbone", "quadriceps", "rotator cuff", "middle finger"},
	hobbies: []pair{
		{"cello lessons", "instrument classes"}, {"jiu-jitsu class", "martial arts thing"}, {"tango course", "partner dancing lessons"},
		{"sailing club", "boating group"}, {"embroidery group", "needlework circle"}, {"chess club", "board game meetup"},
		{"Italian cooking course", "pasta class"}, {"Mandarin evening class", "Chinese lessons"}, {"calligraphy workshop", "fancy handwriting class"},
		{"archery sessions", "bow and arrow thing"}, {"birdwatching group", "wildlife spotting meetup"}, {"trapeze class", "circus training"},
		{"scuba certification course", "diving lessons"}, {"bookbinding workshop", "paper crafts course"}, {"aqua aerobics", "exercise class at the pool"},
		{"screen printing studio", "T-shirt design workshop"},
	},
	teacherWords: []string{"trainer", "mentor", "lady in charge", "fellow in charge", "host", "guide"},
	teacherDescr: []string{
		"no-nonsense ex-firefighter", "quiet retired engineer", "hilarious former drama teacher", "tiny but fearless seventy-year-old",
		"laid-back surfer type", "former touring musician", "meticulous old watchmaker", "super upbeat ex-flight attendant",
	},
	pets: []pair{
		{"dachshund", "wiener dog"}, {"Siamese", "kitty"}, {"ferret", "little weasel"}, {"leopard gecko", "reptile"},
		{"golden retriever", "pooch"}, {"chinchilla", "furball"}, {"pug", "flat-faced doggo"}, {"Bengal kitten", "house cat"},
		{"axolotl", "salamander"}, {"canary", "songbird"}, {"pot-bellied pig", "oinker"}, {"tortoise", "shelled critter"},
	},
	petAntics: []string{
		"knocks every glass off the counter", "snores louder than anyone I know", "hides under the bed when the doorbell rings",
		"already has a favorite blanket", "greets me at the door like I've been gone for years", "tried to eat a houseplant",
		"stares at the wall at three in the morning", "loves car rides more than anything",
	},
	shelters: []string{"animal sanctuary", "local pound", "farm two towns over", "coworker who was moving abroad", "rehoming group online"},
	relatives: []pair{
		{"nephew", "brother's son"}, {"stepmom", "father's wife"}, {"baby sister", "youngest sibling"},
		{"nana", "mom's mom"}, {"godmother", "godparent"}, {"brother-in-law", "sister's husband"},
		{"sister-in-law", "spouse's sibling"}, {"great-aunt", "grandpa's sister"}, {"second cousin", "distant relative"},
		{"stepson", "partner's kid"}, {"goddaughter", "godchild"}, {"eldest daughter", "firstborn"},
	},
	occasions: []pair{
		{"for my best friend's wedding", "to see a close pal get married"}, {"for a trade show", "for an industry expo"},
		{"for our honeymoon", "right after tying the knot"}, {"for my dad's retirement party", "for a parent's send-off"},
		{"for a ski week", "to hit the slopes"}, {"for a wine tasting tour", "to visit vineyards"},
		{"for a family funeral", "after a relative passed away"}, {"to watch the football final", "for a soccer game"},
		{"for a job interview", "to meet a potential employer"}, {"for my grandma's ninetieth", "for an elderly relative's celebration"},
		{"for a comic convention", "for a nerdy fan event"}, {"for a volunteering stint", "for a charity project"},
	},
	tripFood: []string{"oysters", "gelato", "barbecue", "ramen", "cheese", "craft beer", "chocolate", "dim sum"},
	activities: []pair{
		{"at the skate park", "skateboarding"}, {"during a tennis match", "playing racket sports"},
		{"carrying groceries up to the flat", "hauling shopping bags"}, {"on the dance floor", "busting moves"},
		{"chasing the bus", "running after public transit"}, {"shoveling snow", "clearing the driveway"},
		{"horseback riding", "equestrian stuff"}, {"snowboarding", "winter sports"}, {"reaching for a high shelf", "grabbing something overhead"},
	},
	purchases: []pair{
		{"used Vespa", "scooter"}, {"Fender guitar", "six-string"}, {"gaming laptop", "computer"},
		{"mid-century armchair", "living room seating"}, {"pressure cooker", "cookware"}, {"DSLR camera", "photo gear"},
		{"treadmill", "running machine"}, {"paddleboard", "surf gear"}, {"dishwasher", "thing that cleans plates"},
		{"hot tub", "jacuzzi"}, {"smartwatch", "fitness tracker"}, {"leather sofa", "couch"},
		{"projector", "home cinema setup"}, {"chainsaw", "power tool"},
	},
	placeFirst: []string{"Maple", "Birch", "Cedar", "Willow", "Poppy", "Clove", "Ginger", "Hazel", "Magnolia", "Lupin", "Myrtle", "Aspen", "Laurel", "Cypress", "Marigold", "Tansy"},
	taskDomains: []taskDomain{
		{"find_cafes", "a quiet spot to study on Sunday", "cafe", "cafes", []string{"Roastery", "Coffee House", "Espresso Bar", "Tea Room"},
			[]string{"the wifi is fast", "there are outlets at every table", "they never rush you out"},
			[]pair{{"grab a sandwich at %s first", "Deli"}, {"print the handouts at %s", "Copy Shop"}}},
		{"find_hotels", "somewhere to stay for my parents' visit", "hotel", "hotels", []string{"Inn", "Lodge", "Guesthouse", "Suites"},
			[]string{"it has step-free access", "breakfast is included", "it is a short stroll from us"},
			[]pair{{"book a table at %s for the first evening", "Diner"}, {"reserve a cab from %s", "Taxis"}}},
		{"find_cinemas", "a film to see on Thursday", "cinema", "cinemas", []string{"Picturehouse", "Screens", "Playhouse", "Film Club"},
			[]string{"the seats recline", "it shows films in the original language", "tickets are half price midweek"},
			[]pair{{"get popcorn at %s beforehand", "Sweets"}, {"have a drink at %s after", "Tavern"}}},
		{"find_campsites", "a campsite for a long weekend", "campsite", "campsites", []string{"Campground", "Lakeside Pitches", "Woods Camp", "Glamping"},
			[]string{"dogs are allowed", "there are hot showers", "every pitch has a fire ring"},
			[]pair{{"buy firewood at %s", "Hardware"}, {"rent a canoe at %s", "Boathouse"}}},
	},
}
