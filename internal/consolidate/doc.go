// Package consolidate extracts facts from a session's conversation for
// long-term memory (DESIGN §13): facts and preferences the user states
// ("I moved to Porto last month", "my daughter's name is Ana", "I'm
// allergic to peanuts", "I prefer tea"), decisions ("we decided to ship on
// Friday") and their corrections ("actually, make it Monday"), refined
// instructions ("from now on, answer in Spanish") and episodes ("I tried
// the VPN, it didn't work").
//
// Extract is pure and deterministic: the same messages (and known facts)
// give the same facts, so a re-run after a crash writes the same entries
// with the same command ids, and replay never extracts again (the node
// records the outcome as ordinary scope entry writes).
//
// Precision comes before recall: only the user's own messages are read, a
// question, a hypothetical ("if I move…", "I might…", "I'd like…") or a
// negated statement is no fact, and a value must look like what its rule
// expects (a place or a name is capitalized; a value is a few words, cut
// at the first clause boundary, without time phrases such as "last month").
//
// Each Fact has a subject and an attribute, which make its key
// ("fact/user/home_city", "fact/daughter/name"): a new value for the same
// key is a conflict, resolved by the scope's strategy (the writer in
// package node). A fact whose value names an earlier one's value as
// replaced ("it's Monday now, not Friday", "Mara moved away, so now Jonas
// teaches us") is a Correction of that fact, even across sessions when the
// earlier fact is among the known ones.
package consolidate
