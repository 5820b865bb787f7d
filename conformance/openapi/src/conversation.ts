// A whole agent conversation through a client generated from the node's
// /v1/openapi.json alone: types by openapi-typescript (generated/schema.d.ts),
// requests by openapi-fetch. Nothing here knows the API beyond what the
// document says: no SDK, no min_seq. Every JSON reply is validated with ajv
// against the schema the document declares for its operation and status.
//
// Usage: node src/conversation.js <base-url>. Prints one JSON line
// {"ok":true,...} when every step holds; exits 1 on the first that does not.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "../generated/schema.js";
import { contract } from "./validate.mjs";

declare const process: { argv: string[]; exit(code: number): never };

type Schemas = components["schemas"];

function check(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error("step failed: " + what);
}

const base = process.argv[2];
check(base, "usage: conversation.js <base-url>");
const doc: unknown = await (await fetch(base + "/v1/openapi.json")).json();
const schema = contract(doc);

// Every JSON reply, errors included, must be what the document declares.
const validated: string[] = [];
const invalid: string[] = [];
const validating: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return;
    const body: unknown = await response.clone().json();
    const bad = schema.reply(request.method.toLowerCase(), schemaPath, response.status, body);
    validated.push(`${request.method} ${schemaPath} ${response.status}`);
    if (bad) invalid.push(bad);
  },
};
const api = createClient<paths>({ baseUrl: base });
api.use(validating);

/** The data of a reply that must succeed. */
function ok<T>(r: { data?: T; error?: unknown; response: Response }, what: string): T {
  check(r.data !== undefined && r.response.ok, `${what}: ${r.response.status} ${JSON.stringify(r.error)}`);
  return r.data;
}

const run = Math.random().toString(36).slice(2, 8);
const S = `conv-${run}`;
const U = `u-${run}`;
const A = `a-${run}`;
const steps: string[] = [];
const session = { params: { path: { session_id: S } } };

// 1. A session for user U with agent A.
const created = ok(await api.POST("/v1/session/{session_id}/create", {
  ...session,
  body: { user_id: U, agent_id: A, system_prompt: "You are a travel agent.", max_context_tokens: 8000, reserved_output_tokens: 1000 },
}), "create");
check(created.session.session_id === S && created.result.duplicate === false, "create reply");
steps.push("create");

// 2. A turn with a tool call, each message as the chat API returns it. The
// assistant's message is an OpenAI Chat Completions choices[0].message,
// typed as the OpenAI SDK types it (its function_call aside, which is
// deprecated).
interface ChatCompletionMessage {
  role: "assistant";
  content: string | null;
  refusal: string | null;
  annotations?: Array<{ type: "url_citation"; url_citation: { url: string; title: string; start_index: number; end_index: number } }>;
  audio?: { id: string; data: string; expires_at: number; transcript: string } | null;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
}
const choice: ChatCompletionMessage = {
  role: "assistant", content: null, refusal: null, annotations: [],
  tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
};
const turn = {
  command_id: `turn-${run}`,
  messages: [
    { role: "user" as const, content: "What's the weather in Paris? My budget is 4000 EUR." },
    choice,
    { role: "tool" as const, tool_call_id: "call_1", content: "18C and sunny" },
    { role: "assistant" as const, content: "It is 18C and sunny in Paris.", refusal: null },
  ],
};
const appended = ok(await api.POST("/v1/session/{session_id}/append", { ...session, body: turn }), "append");
check(appended.message_ids.length === 4 && appended.result.duplicate === false, "append reply");
steps.push("append an OpenAI reply as it comes");

// A retry (same command_id) is stored once and answers the first reply.
const retried = ok(await api.POST("/v1/session/{session_id}/append", { ...session, body: turn }), "retry");
check(retried.result.duplicate && retried.result.seq === appended.result.seq, "retry is a duplicate");
check(JSON.stringify(retried.message_ids) === JSON.stringify(appended.message_ids), "retry keeps the ids");
steps.push("retry");

// 3. Search right after the append, without min_seq: the node waits for
// the session's own write.
const found = ok(await api.POST("/v1/session/{session_id}/search", { ...session, body: { query: "weather Paris sunny" } }), "search");
check(found.hits.some((h) => (h.message?.content ?? "").includes("sunny")), "search finds the tool result");
steps.push("search reads its own write");

// 4. The context as each chat API takes it.
const oa = ok(await api.POST("/v1/session/{session_id}/context", { ...session, body: { format: "openai" } }), "context openai");
const openai: Schemas["OpenAIMessage"][] = oa.rendered?.openai ?? [];
check(openai.map((m) => m.role).join() === "system,user,assistant,tool,assistant", "openai roles " + openai.map((m) => m.role));
check(openai[2]?.tool_calls?.[0]?.function.name === "get_weather" && openai[2]?.tool_calls?.[0]?.type === "function", "openai tool call");
check(openai[3]?.tool_call_id === "call_1", "openai tool result");
check(openai[1]?.tool_calls === undefined && openai[1]?.name === undefined, "no empty tool_calls or name");
// The next turn: the model's reply to that context goes back in as it is.
const next: ChatCompletionMessage = { role: "assistant", content: "Shall I book a train?", refusal: null };
ok(await api.POST("/v1/session/{session_id}/append", { ...session, body: { messages: [next] } }), "append next");
const an = ok(await api.POST("/v1/session/{session_id}/context", { ...session, body: { format: "anthropic" } }), "context anthropic");
const anthropic: Schemas["AnthropicMessage"][] = an.rendered?.anthropic ?? [];
check((an.rendered?.system ?? "").includes("travel agent"), "anthropic system");
anthropic.forEach((m, i) => check(m.role === (i % 2 === 0 ? "user" : "assistant"), "anthropic roles alternate"));
const blocks = anthropic.flatMap((m) => m.content);
const use = blocks.find((b): b is Schemas["AnthropicToolUseBlock"] => b.type === "tool_use");
const result = blocks.find((b): b is Schemas["AnthropicToolResultBlock"] => b.type === "tool_result");
check(use?.name === "get_weather" && use.input["city"] === "Paris", "anthropic tool_use " + JSON.stringify(use));
check(result?.tool_use_id === use.id && result.content.includes("sunny"), "anthropic tool_result");
check(blocks.every((b) => Object.keys(b).every((k) => k === "type" || k in ({ text: { text: 1 }, tool_use: { id: 1, name: 1, input: 1 }, tool_result: { tool_use_id: 1, content: 1 } } as Record<string, object>)[b.type]!)),
  "anthropic blocks carry their type's members only");
steps.push("context openai + anthropic");

// 5. Memory: the agent's own, then the user's facts by consolidation.
const agentMem = { params: { path: { agent_id: A } } };
const value = btoa("Prefers trains to planes.");
const put = ok(await api.POST("/v1/agent/{agent_id}/put", { ...agentMem, body: { key: "travel.preference", value, importance: 0.8, tags: ["travel"] } }), "put");
check(put.entry?.version === "1", "put version");
const got = ok(await api.POST("/v1/agent/{agent_id}/get", { ...agentMem, body: { key: "travel.preference" } }), "get");
check(got.entry?.value === value, "get value");
const hits = ok(await api.POST("/v1/agent/{agent_id}/search", { ...agentMem, body: { query: "trains" } }), "search memory");
check(hits.hits.some((h) => h.entry?.key === "travel.preference"), "memory search right after the put");
steps.push("agent memory");

const userScope = { params: { path: { kind: "user" as const, scope_id: U } } };
ok(await api.POST("/v1/scope/{kind}/{scope_id}/configure", { ...userScope, body: { config: { conflict_strategy: "review" } } }), "configure");
const facts = async (session_id: string, said: string[], dry_run = false) => {
  ok(await api.POST("/v1/session/{session_id}/create", { params: { path: { session_id } }, body: { user_id: U, agent_id: A } }), "create " + session_id);
  ok(await api.POST("/v1/session/{session_id}/append", { params: { path: { session_id } }, body: { messages: said.map((content, i) => ({ role: i % 2 ? "assistant" as const : "user" as const, content })) } }), "append " + session_id);
  return ok(await api.POST("/v1/session/{session_id}/consolidate", { params: { path: { session_id } }, body: { dry_run } }), "consolidate " + session_id);
};
const dry = await facts(`oslo-${run}`, ["I live in Oslo.", "Cool."], true);
check(dry.facts.length === 1 && dry.facts[0]?.outcome === "dry_run", "dry run " + JSON.stringify(dry));
ok(await api.POST("/v1/session/{session_id}/consolidate", { params: { path: { session_id: `oslo-${run}` } }, body: {} }), "consolidate");
const moved = await facts(`bergen-${run}`, ["Big news: I moved to Bergen last week.", "Congrats!"]);
check(moved.facts[0]?.outcome === "review", "a contradicting fact waits for review");
const conflicts = ok(await api.POST("/v1/scope/{kind}/{scope_id}/conflicts", { ...userScope, body: {} }), "conflicts");
check(conflicts.conflicts.length === 1 && conflicts.conflicts[0]?.key === "fact/user/home_city", "one conflict");
const settled = ok(await api.POST("/v1/scope/{kind}/{scope_id}/settle", { ...userScope, body: { command_id: `settle-${run}`, key: "fact/user/home_city", accept: true } }), "settle");
check(settled.result?.duplicate === false, "settled");
const city = ok(await api.POST("/v1/scope/{kind}/{scope_id}/get", { ...userScope, body: { key: "fact/user/home_city" } }), "get fact");
check(atob(city.entry?.value ?? "").includes("Bergen"), "the accepted value");
steps.push("consolidate, conflict, settle");

// 6. A delete answers an EntryReply, a delete with erase: true an
// EraseReceipt: one declared union, told apart by their members.
ok(await api.POST("/v1/agent/{agent_id}/put", { ...agentMem, body: { key: "secret", value: btoa("v1") } }), "put secret");
const tomb = ok(await api.POST("/v1/agent/{agent_id}/delete", { ...agentMem, body: { key: "travel.preference" } }), "delete");
check("result" in tomb && tomb.entry?.deleted === true, "delete answers the tombstone");
const erased = ok(await api.POST("/v1/agent/{agent_id}/delete", { ...agentMem, body: { key: "secret", erase: true, reason: "asked" } }), "erase entry");
check("removal_id" in erased && erased.removal_id !== "", "delete with erase answers a receipt");
steps.push("delete and erase an entry");

// 7. Watch: the long poll, then Server-Sent Events resumed with
// Last-Event-ID.
const polled = ok(await api.POST("/v1/session/{session_id}/watch", { ...session, body: { from_seq: 0, max_changes: 2 } }), "watch poll");
check(polled.changes.length === 2 && polled.changes[0]?.batch?.events[0]?.["@type"]?.includes("SessionCreated"), "long poll " + JSON.stringify(polled.changes[0]?.batch?.events[0]));

interface Event { id: string; event: string; data: string }
async function readEvents(stream: ReadableStream<Uint8Array>, n: number, signal: AbortController): Promise<Event[]> {
  const reader = stream.getReader();
  const dec = new TextDecoder();
  let buf = "";
  const out: Event[] = [];
  while (out.length < n) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0 && out.length < n) {
      const e: Event = { id: "", event: "message", data: "" };
      for (const line of buf.slice(0, i).split("\n")) {
        if (line.startsWith("id: ")) e.id = line.slice(4);
        else if (line.startsWith("event: ")) e.event = line.slice(7);
        else if (line.startsWith("data: ")) e.data = line.slice(6);
      }
      buf = buf.slice(i + 2);
      if (e.data) out.push(e);
    }
  }
  signal.abort();
  return out;
}
const first = new AbortController();
const sse = await api.GET("/v1/session/{session_id}/watch", { ...session, params: { ...session.params, query: { from_seq: 0 } }, parseAs: "stream", signal: first.signal });
check(sse.response.headers.get("content-type") === "text/event-stream" && sse.data, "watch stream");
const three = await readEvents(sse.data, 3, first);
check(three.length === 3 && three.every((e) => e.event === "change"), "three changes");
const change: Schemas["WatchChange"] = JSON.parse(three[2]!.data);
check(change.seq === three[2]!.id, "event id is the change's seq");
const resume = new AbortController();
const again = await api.GET("/v1/session/{session_id}/watch", { params: { path: { session_id: S }, header: { "Last-Event-ID": three[1]!.id } }, parseAs: "stream", signal: resume.signal });
check(again.data, "resumed stream");
const resumed = await readEvents(again.data, 1, resume);
check(resumed[0]?.id === three[2]!.id, `resumed at ${resumed[0]?.id}, want ${three[2]!.id}`);
steps.push("watch: long poll, SSE, resume with Last-Event-ID");

// 8. Erase the session; its watch then says so.
const receipt = ok(await api.POST("/v1/session/{session_id}/erase", { ...session, body: { reason: "conversation over" } }), "erase session");
check(receipt.removal_id !== "" && receipt.target.includes(S), "erase receipt");
const gone = await api.POST("/v1/session/{session_id}/context", { ...session, body: {} });
check(gone.response.status === 404 && gone.error?.code === 404, "an erased session is 404");
const after = new AbortController();
const closed = await api.GET("/v1/session/{session_id}/watch", { ...session, parseAs: "stream", signal: after.signal });
check(closed.data, "watch of an erased session");
const ended = await readEvents(closed.data, 1, after);
check(ended[0]?.event === "error" && (JSON.parse(ended[0].data) as Schemas["ErrorDetail"]).code === 404, "the watch of an erased session is an error event");
steps.push("erase");

// 9. Errors are typed too: an ErrorDetail naming the field.
const bad = await api.POST("/v1/session/{session_id}/append", { params: { path: { session_id: `x-${run}` } }, body: { messages: [] } });
check(bad.error && bad.response.status === 400 && bad.error.field === "messages", "an empty append names messages " + JSON.stringify(bad.error));
steps.push("errors");

if (invalid.length > 0) {
  console.error(JSON.stringify({ ok: false, invalid }, null, 1));
  process.exit(1);
}
console.log(JSON.stringify({ ok: true, steps, validated: validated.length, operations: [...new Set(validated)].sort() }));
