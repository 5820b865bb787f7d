// Package consolidate reads, from a session's conversation, the facts a
// user states about themselves, for long-term memory: who they are and
// what they do ("I'm a nurse", "I work at Acme", "I drive a tram in
// Lisbon"), where they live, their family and pets with names ("my son
// Leo", "our beagle, Biscuit", "Leo turns 6 on March 3rd"), allergies and
// diet, hobbies, plans with dates, preferences, what happened to them
// and when ("I joined a running club last Tuesday"), decisions and their
// corrections, standing instructions to the assistant ("please always
// answer in French") and episodes ("I tried restarting the router, it
// didn't help"). SessionDigest writes, besides, one dated digest of the
// session: a few of the user's most informative sentences.
//
// Extract is pure and deterministic: the same messages (and known facts)
// give the same facts, so a re-run after a crash writes the same entries
// with the same command ids, and replay never extracts again.
//
// Precision comes before recall, because an entry is shown in every
// context of its user and a wrong one does more harm than a missing one:
//   - only the user's own messages are read (an answer with the question
//     it answers: "What do you do?" "Tram driver.");
//   - a statement starts its clause ("I think I'm …", "she said I …",
//     "if I move …" are not the user's facts), and questions, quotations,
//     text the user asks for and hypotheticals state nothing;
//   - a subject is named in the sentence, or by a name the conversation
//     or memory knows ("Leo"); a pronoun's referent is never guessed from
//     another sentence;
//   - a value is a noun phrase of the user's words ("Weight Watchers
//     coach"), never a pronoun, a word about the other speaker ("I love
//     how you …"), an adjective alone ("fulfilling") or a compliment's
//     object ("I love the thought, Nate");
//   - an instruction is an imperative to the assistant about how to help
//     that says it lasts; a pleasantry ("Never give up!") is none;
//   - a value replaces an earlier one only when the message says so
//     ("actually", "not X but Y", "anymore", "I quit X", "these days I'm
//     at Y", "scratch that", "I meant" …), never because a later sentence
//     starts with "It's".
//
// Each Fact has a subject and an attribute, which make its key
// ("fact/user/home_city", "fact/son/birthday"): a new value for the same
// key is a new version, the old one kept in the key's history. Its Text
// says what the value is of, the date it names, when it was said and the
// sentence whole: `works as: nurse (said 2023-05-08): "I'm a nurse."`.
// Relative dates ("yesterday", "last week", "two years ago", "next
// month", "in June") are resolved against the time the message was said
// (Message.Said) into absolute dates (Fact.Date).
package consolidate
