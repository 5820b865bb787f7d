// Package tenancy turns a request's verified NATS identity into a Caller
// and answers what that caller may do.
//
// Identity comes from the NATS server, never from a request body. Tenants
// connect in their own NATS accounts and import the node's mem.v1 service;
// nats-server stamps every request that crosses an import with the
// Nats-Request-Info header ({"acc": <importing account>, "user": <user>,
// …} with share: true), and it removes any header of that name the client
// sent (verified with nats-server 2.15: a forged value never survives an
// import). The header is trusted only because no one but the node itself
// lives in the node's account: a user inside that account could send any
// header it likes (the server does not strip it there), so the node
// account holds the node's users only, and a request without the header
// is refused.
//
// A Directory maps (account, user) to a Principal from one config file
// (Load): its name (the writer of its commands), its agent, its agent
// type, its users, its shared-scope memberships and its role (reader,
// writer, admin). Without a config (the default single-user node) every request is the Unrestricted
// caller, as before tenancy.
//
// Access rules (Caller methods; each refusal is a *DeniedError, 403):
//
//	agent:<id>                       the principal whose agent is id
//	session <id> (conversation)      user_id in the caller's users, or agent_id the caller's agent
//	session:<id> scope               as the session
//	user:<id>                        id in the caller's users
//	global                           everyone reads; writers write
//	workflow/swarm/debate:<id>       members ("workflow:w1" in scopes)
//	app:<name>, project:<id>         members read; admins write
//	agent_type:<type>                principals whose agent_type is type
//	                                 read; its writers write
//	data                             the principal that put it (admins: all)
//	configure a scope                admins; agent:<id> also the agent id
//	create a session                 for the caller's user or agent, naming
//	                                 only a project and app it is a member of
//	                                 and only its own agent_type
//
// Readers read only. Admins may do everything. A read through a session
// (resolve, the context's memory section) reads each of the session's
// user, app, project and agent type scopes only if the reader may read it
// directly.
package tenancy
