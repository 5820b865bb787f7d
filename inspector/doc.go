// Package inspector serves the web inspector at /ui/ on the node's HTTP
// listener: the sessions, one session's conversation (the
// transcript, with where each message is now), its context as the LLM
// receives it (layer by layer, section by section, with the tokens and the
// source of every item, and the OpenAI and Anthropic renderings), its
// timeline of events, paged and filtered by kind, with time travel, search
// in a session, a directory of the scopes and each scope with its
// versions and diffs, consolidation conflicts and metadata, the removal
// ledger (erasures), and live updates. It changes nothing but by three
// admin forms of a scope page (settle a conflict, edit an entry, erase an
// entry: actions.go), API calls on the viewer's connection, offered and
// accepted only when the viewer may write the scope, each POST checked
// for the viewer's CSRF token (csrf.go).
//
// Every read goes through the memory service's API (mem.v1.*) on a NATS
// connection of the viewer, so a page shows exactly what the viewer could
// read by the API, with the API's authorization, limits and errors: on the
// single-user node the node's own connection (the unrestricted caller), on
// a tenant node a connection opened with the viewer's own NATS credentials
// (HTTP basic auth), which the NATS server verifies and stamps on every
// request. Reads of the log are the exception, each after the API said
// the viewer may read the session (its get): time travel replays the
// session's batches with actors.SessionAt and actors.ContextAt, the
// functions `replay inspect --at-seq` calls; the timeline and the
// conversation page through the session's batches (index.go); live
// updates use the node's watch of the log (Deps.Watcher), which holds none
// of the viewer's API watch slots. The node's log bounds (the time-travel window) and
// its removal ledger (content-free; the Erasures page and the 404 of an
// erased session) are read from the log too (Deps.Reader), and so are the
// names of the scopes the directory lists (Deps.Subjects: names and
// counts, no content; each row is then the API's list of the scope).
//
// Access (access.go): on the single-user node only loopback clients; with
// tenants only principals with the admin role. Every request's Host must be
// a loopback name, the listener's address or an allowed host (DNS
// rebinding), and a browser's Origin, when sent, the inspector's own. No
// secret ever travels in a URL. Pages are server-rendered html/template
// with a little vanilla JavaScript; templates and assets are embedded
// (go:embed): no build step, nothing fetched from the network.
package inspector
