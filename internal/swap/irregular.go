package swap

import "github.com/kljensen/snowball/english"

// irregularVerbs maps the past tense and past participle of common English
// irregular verbs to their base form, which the Snowball stemmer cannot
// find ("led" stays "led", "went" stays "went"): with it "Who leads X?"
// matches "X is led by Y" and "when did she go" matches "she went".
//
// Forms left out on purpose, because another reading of the word is about
// as common in chat: the forms of be, have and do (stop words, and "done"
// means finished), "left" (the direction), "lay", "laid", "lain" (lie or
// lay), "bit" (the unit), "fed" (the Fed), "drew" (a name), "rose" (the
// flower, a name), "bore", "bound", "ground", "wound", "shot", "mistaken",
// "born". Forms equal to their base ("put", "cut", "read", "set", "let",
// "cost", "hit", "quit", "spread") need no entry.
var irregularVerbs = map[string]string{
	"arose": "arise", "arisen": "arise", "awoke": "awake", "awoken": "awake",
	"began": "begin", "begun": "begin", "bent": "bend", "blew": "blow", "blown": "blow",
	"broke": "break", "broken": "break", "brought": "bring", "built": "build", "burnt": "burn",
	"bought": "buy", "caught": "catch", "chose": "choose", "chosen": "choose", "came": "come",
	"crept": "creep", "dealt": "deal", "dug": "dig", "drawn": "draw", "dreamt": "dream",
	"drank": "drink", "drunk": "drink", "drove": "drive", "driven": "drive", "ate": "eat", "eaten": "eat",
	"fell": "fall", "fallen": "fall", "felt": "feel", "fought": "fight", "found": "find",
	"fled": "flee", "flew": "fly", "flown": "fly", "forbade": "forbid", "forbidden": "forbid",
	"forgot": "forget", "forgotten": "forget", "forgave": "forgive", "forgiven": "forgive",
	"froze": "freeze", "frozen": "freeze", "got": "get", "gotten": "get", "gave": "give", "given": "give",
	"went": "go", "gone": "go", "grew": "grow", "grown": "grow", "hung": "hang", "heard": "hear",
	"hid": "hide", "hidden": "hide", "held": "hold", "kept": "keep", "knelt": "kneel",
	"knew": "know", "known": "know", "led": "lead", "leapt": "leap", "learnt": "learn", "lent": "lend",
	"lit": "light", "lost": "lose", "made": "make", "meant": "mean", "met": "meet",
	"overcame": "overcome", "overtook": "overtake", "overtaken": "overtake", "paid": "pay",
	"rode": "ride", "ridden": "ride", "rang": "ring", "rung": "ring", "risen": "rise", "ran": "run",
	"said": "say", "sat": "sit", "saw": "see", "seen": "see", "sought": "seek", "sold": "sell",
	"sent": "send", "shook": "shake", "shaken": "shake", "shone": "shine", "showed": "show", "shown": "show",
	"shrank": "shrink", "shrunk": "shrink", "sang": "sing", "sung": "sing", "sank": "sink", "sunk": "sink",
	"slept": "sleep", "slid": "slide", "spoke": "speak", "spoken": "speak", "sped": "speed",
	"spent": "spend", "spun": "spin", "stood": "stand", "stole": "steal", "stolen": "steal",
	"stuck": "stick", "stung": "sting", "stank": "stink", "struck": "strike", "stricken": "strike",
	"strove": "strive", "striven": "strive", "swore": "swear", "sworn": "swear", "swept": "sweep",
	"swam": "swim", "swum": "swim", "swung": "swing", "took": "take", "taken": "take",
	"taught": "teach", "tore": "tear", "torn": "tear", "told": "tell", "thought": "think",
	"threw": "throw", "thrown": "throw", "trod": "tread", "trodden": "tread",
	"understood": "understand", "undertook": "undertake", "undertaken": "undertake",
	"woke": "wake", "woken": "wake", "wore": "wear", "worn": "wear", "wept": "weep",
	"won": "win", "withdrew": "withdraw", "withdrawn": "withdraw", "wrote": "write", "written": "write",
}

// irregularStems maps each irregularVerbs form to the stem of its base
// ("led" → "lead", "went" → "go"). Built once; never written after init.
var irregularStems = func() map[string]string {
	m := make(map[string]string, len(irregularVerbs))
	for form, base := range irregularVerbs {
		m[form] = english.Stem(base, false)
	}
	return m
}()

// stemWord returns the term of a lower-cased Latin-script word: the stem of
// its base form when it is an irregular verb form (irregularVerbs), else
// its English Snowball stem, stop words left as they are. It is a pure
// function.
func stemWord(w string) string {
	if t, ok := irregularStems[w]; ok {
		return t
	}
	return english.Stem(w, false)
}
