// Package dialoggen generates LoCoMo-like conversations with questions
// whose evidence turns are known: the question mode of the memory benchmark
// (package membench). It is pure, deterministic Go with no I/O:
// the same Config (seed included) gives the same Conversation.
//
// # A conversation
//
// Two friends, named from a pool, chat over Config.Sittings sittings 3 to 18
// days apart, about Config.TurnsPerSitting turns each. Speaker 0 is the
// user (ROLE_USER), speaker 1 the assistant (ROLE_ASSISTANT); they alternate
// strictly, and both tell their own news. Every message has the time it was
// said (Message.UnixNano, the said_unix_nano of an append); the first turn
// of a sitting names the day ("Saturday, 8 March") in 60 % of the sittings.
//
// A sitting is a greeting, then segments drawn at random, then a goodbye:
//
//   - small talk: one to three turns of two to four sentences from sizable
//     pools (weather, cooking, shows, work, commute, garden, …);
//   - a life event of the speaker whose turn it is, told with a relative
//     time ("yesterday", "last week", "next month"): a hobby class and its
//     teacher, a pet and its name, a relative's move, engagement or degree,
//     a new job, a trip, an injury, a purchase and its price. In 40 % of
//     the hobby and pet events the value comes one turn later, after the
//     friend asks (evidence of two turns). At most a fair share of the
//     facts is planted per sitting, so they spread over the conversation;
//   - a correction, in a later sitting, of a fact planted earlier (a new
//     teacher, a renamed pet, a changed move, job title or price);
//   - in 45 % of the sittings, a task: the user asks the assistant for help,
//     the assistant calls a tool (its call, result and answer are one
//     append), suggests an option and lays out a plan.
//
// Values (names, cities, companies, roles, fields, body parts, prices,
// place names) come from pools the small talk never uses, and each is said
// once, where it is planted or corrected.
//
// Config.Pools "holdout" swaps every pool (values, things and their
// paraphrases, colour) for a held-out set (pools_holdout.go) with other
// items and other paraphrases, written without looking at the search's
// lexicon of related words: the same seed gives the same structure, so the
// benchmark on both sets tells whether a gain tuned on the default pools
// generalizes. The question templates are shared by both sets.
//
// # Questions
//
// Conversation.Questions are asked after the last message, in a seeded
// order: single-hop (one fact), multi-hop (every pet, trip or teacher of a
// speaker: evidence in several sittings), temporal ("When did … ?": the
// answer is the relative time applied to the sitting's date, so the context
// needs the evidence turn and the date), how-long (the time between two
// events of different sittings) and correction (the current value; the
// superseded ones are recorded). A question names what it asks about in
// other words than the evidence turn ("ceramics workshop" for "pottery
// class", "feline" for "Maine Coon") for 60 % of the facts
// (Question.Paraphrased) and in the turn's own words for the rest; it never
// holds the answer.
//
// Conversation.Continuity are asked right after a task (Question.At):
// what the assistant just suggested (last-turns), what else the lookup
// returned (tool-result), and a step of the plan (plan), all within the
// last three exchanges.
//
// Each question records its evidence turns, its answer in words, and Needs:
// the strings a context must hold to answer (one of each group). The tests
// check these invariants on the text itself.
package dialoggen
