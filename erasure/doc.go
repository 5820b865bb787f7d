// Package erasure owns the removal of data on request and by policy: what
// an erase covers (Plan, pure), the plan's records in the removal ledger
// and their completion (Coordinator.Erase), the log-window compaction of a
// scope (Coordinator.Compact), and what a crash left half done
// (Coordinator.Resume). Its port is narrow: the API calls Erase once it has
// checked who may erase; the node calls Erase for retention (delete-after),
// Compact for the bounded log, and Resume at start and every so often. It
// talks to the actors (Actors), the large-data store (Data) and the
// projection (ReadModel) through interfaces declared here.
//
// # What an erase covers
//
// A Target names what was asked: a session, a user, a scope or an entry.
// Plan turns it, with what the read model lists, into Items, each removed
// by a removal of its own:
//
//   - a session: the session, its session scope, the large data it owns,
//     then every entry of another scope whose metadata names it as its
//     source (SessionSources: published values, extracted facts, episodes
//     and their summaries);
//   - a user: each of the user's sessions as above, the user's scope, then
//     every entry naming the user (UserSources);
//   - a scope: the scope whole; an entry: every version of its key.
//
// An entry of a scope the plan removes whole is not listed on its own. A
// retention erase (reason RETENTION) of a session covers its own data
// only: what was extracted from it into long-term memory stays.
//
// The metadata naming a source is one key per source, SourceSessionKey
// and SourceUserKey, written by every path that copies content out of a
// session; LegacySourceSessionKey is still read for entries written
// before.
//
// # Format
//
// Everything is recorded in the removal ledger (events.KindRemoval: one
// subject per removal, mem.ev.removal.<id>, holding a LogRemoval and then a
// LogRemovalCompleted; proto/memory/v1/erasure.proto). Nothing recorded
// holds erased content. An erase request writes:
//
//  1. the plan: a LogRemoval with the request's id, reason, target
//     (Target.String: "session:<id>", "user:<id>", "scope:<kind>:<id>",
//     "entry:<kind>:<id>:<key>"), requester, why and time, and planned =
//     its items (Item.String: "session.<id>", "<scope log kind>.<id>",
//     "data.<id>", "entry:<kind>:<id>:<key>"); it removes nothing itself;
//  2. for each item in order, the item's own removal, id
//     ItemRemovalID(plan id, item) (events.PlannedRemovalID), written by
//     the actor of the aggregate (or the large-data store): a LogRemoval
//     naming the sequences that go and the aggregate erased or rewritten,
//     the messages purged, the snapshot deleted or replaced, then its
//     LogRemovalCompleted;
//  3. the plan's LogRemovalCompleted.
//
// A compaction is one removal of its own (reason COMPACT, id
// CompactionID), written by the scope's actor.
//
// Removal ids are derived from what is removed whenever the same removal
// may be asked again: RequestID (target, requester, command id),
// RetentionID (the session), CompactionID (the subject and its first
// sequence). An erase request without a command id gets a fresh id.
//
// # Recovery rule
//
// The ledger is the coordinator's only state. A removal whose LogRemoval
// has no LogRemovalCompleted is pending; a pending plan is finished, never
// planned again:
//
//   - the same request again (same id) finds the plan recorded and runs it
//     as recorded, whatever the read model lists now;
//   - Resume, at node start (before the API serves) and every 30 s after,
//     reads the ledger and, in log order, finishes each pending plan (every
//     item again, then the completion) and sends each other pending removal
//     (a compaction, or an item whose plan completed) to the actor of its
//     aggregate.
//
// Doing an item again is a no-op when it went: its actor finds its removal
// completed, or the aggregate empty; an entry no longer there (404) is
// skipped. An item's own removal resumes from its records (the actor
// records nothing twice), wherever it stopped: the actor serves a
// whole-aggregate erase without activating the aggregate (a purge done
// before the snapshot's delete leaves a snapshot past the log), and
// activates a scope from a ScopeBaseline however its older messages went. So a crash anywhere — before the plan, after it,
// between items, inside an item, before the completion — ends with every
// planned item removed and one plan, completed, in the ledger; an erase
// answers only once its completion is recorded and the read model applied
// it. A timeout does not say an erase failed: it may be done, or finished
// later by Resume.
package erasure
