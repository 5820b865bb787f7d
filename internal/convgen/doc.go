// Package convgen generates long, multi-session conversations between a
// user and an assistant with planted facts and questions whose answers are
// known: the input of the memory-quality benchmark (package membench,
// which measures memory quality). It is pure, deterministic Go with no I/O: the same Config
// (seed included) gives the same Conversation, message for message.
//
// # A conversation
//
// Config.Sittings sittings (a user coming back 1 to 9 days later; the
// first user message of each sitting carries the date and time in its text;
// Message.UnixNano is when it was said, the said_unix_nano of Input) of about Config.MessagesPerSitting messages each. A sitting
// is a run of exchanges: one user message (its own append request), then the
// assistant's reply (one append request: the assistant message, its tool
// calls and their results, the final answer). Exchanges are drawn at random
// with fixed weights:
//
//   - filler: small talk, "explain X" with a long generic answer, status
//     updates that name a project and words like budget, deadline or lead
//     without a value (search distractors), weather and documentation tool
//     calls (sometimes both in parallel) with bulky JSON results;
//   - plants: the user states a fact of a project (budget, lead, deadline,
//     decision, ticket id, commitment) or a personal one (dog's name,
//     employee number, flight date); the assistant acknowledges, and about a
//     third of the time repeats the fact;
//   - corrections: the user supersedes a project or personal fact ("Actually,
//     the budget for the Orion migration is 47,500 EUR, not 41,300 EUR.", or
//     without naming the old value);
//   - tool facts: lookup_customer (one or two customers in parallel)
//     returns a customer id, an account manager and an open balance; a later
//     lookup of the same customer returns a new balance and sometimes a new
//     manager, which supersede the old ones; query_orders returns 3 to 6
//     orders, the total of one of them is a fact;
//   - recalls ("Remind me: <question>", the assistant answers with the
//     current value) and restatements ("For the record: ...").
//
// Project topics become active over time (two at the start, one more per
// sitting, more when every slot of the active ones is planted).
//
// # Facts and answers
//
// Every value is unique in the conversation: no value equals, contains or
// is contained in another (values.go), and filler never has a value's shape
// (thousands with commas, ISO dates, XXX-0000 ids, full names, the decision
// and dog-name pools). So a value string found in a text was planted there.
// Each Fact lists its Mentions: every message whose content holds one of
// its values, with how (planted, corrected, restated, echoed, recalled, tool
// result). A mention with a new value is a correction; Fact.At gives the
// value at any point, the latest turn holding it and the values it
// superseded.
//
// # Questions
//
// Questions are asked at checkpoints (Config.CheckpointsPerSitting per
// sitting, the last at the end of the sitting), after Messages[:At]; they
// are probes, not messages of the conversation. At the final checkpoint,
// after the last message, every fact is asked about; at the others, a
// uniform sample of QuestionsPerCheckpoint facts mentioned so far. A
// Question records the accepted answer string(s) (the value current at At),
// AnswerTurn (the index of the latest message before At holding it) and
// the superseded values. The question text never holds the answer.
//
// The tests check all of this against the text itself: the answer turn's
// content holds the answer, no later message before the question does, a
// value appears nowhere but in its fact's mentions, and after a correction
// the answer is the new value.
package convgen
