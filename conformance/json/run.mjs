// A whole agent loop in JSON over NATS, as a Node.js agent worker would
// write it from the README: the official NATS client, no protobuf library,
// no zstd. Usage: node run.mjs <nats-url>. Exits non-zero on the first
// step that does not hold; prints a one-line JSON summary when all do.
import { connect, headers } from "@nats-io/transport-node";
import assert from "node:assert/strict";

const nc = await connect({ servers: process.argv[2] });

async function call(subject, body) {
  const h = headers();
  h.set("Content-Type", "application/json");
  const m = await nc.request(subject, JSON.stringify(body), { timeout: 10000, headers: h });
  const code = m.headers?.get("Nats-Service-Error-Code");
  if (code) {
    const err = new Error(`${subject}: ${code} ${m.headers.get("Nats-Service-Error")}`);
    err.code = Number(code);
    throw err;
  }
  return m.json();
}

const S = "js-e2e";
const A = "a-js";
const steps = [];

// 1. Create the session.
const created = await call(`mem.v1.session.${S}.create`, {
  user_id: "u-js", agent_id: A, max_context_tokens: 8000, reserved_output_tokens: 1000,
  system_prompt: "You are a travel agent.",
});
assert.equal(created.session.session_id, S);
steps.push("create");

// 2. Append a turn in the OpenAI message shape, tool call and result included,
//    exactly as Chat Completions returns them.
const turn = {
  command_id: "js-turn-1",
  messages: [
    { role: "user", content: "What's the weather in Paris? My budget is 4000 EUR." },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }] },
    { role: "tool", tool_call_id: "call_1", content: "18C and sunny" },
    { role: "assistant", content: "It is 18C and sunny in Paris." },
  ],
};
const appended = await call(`mem.v1.session.${S}.append`, turn);
assert.equal(appended.message_ids.length, 4);
assert.equal(appended.tokens.length, 4);
assert.equal(appended.result.duplicate, false);
steps.push("append openai shape");

// A retry after a timeout learns the ids the first attempt was given.
const retried = await call(`mem.v1.session.${S}.append`, turn);
assert.equal(retried.result.duplicate, true);
assert.deepEqual(retried.message_ids, appended.message_ids);
assert.equal(retried.result.seq, appended.result.seq);
steps.push("retry is a full duplicate");

// 3. The context, ready for either chat API.
const oa = (await call(`mem.v1.session.${S}.context`, { format: "openai" })).rendered.openai;
assert.deepEqual(oa.map((m) => m.role), ["system", "user", "assistant", "tool", "assistant"]);
assert.match(oa[0].content, /travel agent/);
assert.equal(oa[2].tool_calls[0].function.name, "get_weather");
assert.equal(oa[3].tool_call_id, "call_1");
const an = (await call(`mem.v1.session.${S}.context`, { format: "anthropic" })).rendered;
assert.match(an.system, /travel agent/);
const roles = an.anthropic.map((m) => m.role);
roles.forEach((r, i) => assert.equal(r, i % 2 === 0 ? "user" : "assistant"));
const blocks = an.anthropic.flatMap((m) => m.content.map((b) => b.type));
assert.ok(blocks.includes("tool_use") && blocks.includes("tool_result"), `blocks ${blocks}`);
steps.push("context openai + anthropic");

// 4. Search what was said (read your own write: min_seq).
const found = await call(`mem.v1.session.${S}.search`, { query: "weather in Paris sunny", min_seq: appended.result.seq });
assert.ok(found.hits.some((h) => h.message.content.includes("sunny")), JSON.stringify(found));
steps.push("search");

// 5. Long-term memory: write, read back.
const value = "Prefers trains to planes. ".repeat(60); // over 1 KiB: stored compressed
const put = await call(`mem.v1.agent.${A}.put`, { key: "travel.preference", value: Buffer.from(value).toString("base64"), content_type: "text/plain", importance: 0.8 });
const got = await call(`mem.v1.agent.${A}.get`, { key: "travel.preference" });
assert.equal(Buffer.from(got.entry.value, "base64").toString(), value);
assert.equal(got.entry.version, put.entry.version);
steps.push("memory write/read");

// 6. Watch its own changes in JSON, in order, values decompressed.
const sw = await call(`mem.v1.session.${S}.watch`, { from_seq: 0, max_changes: 64, wait_ms: 0 });
const seqs = sw.changes.map((c) => BigInt(c.seq));
seqs.forEach((s, i) => i === 0 || assert.ok(s > seqs[i - 1], "watch out of order"));
assert.deepEqual(seqs, [BigInt(created.result.seq), BigInt(appended.result.seq)]);
const types = sw.changes.flatMap((c) => c.batch.events.map((e) => e["@type"].split(".").pop()));
assert.ok(types.includes("SessionCreated") && types.includes("MessagesAppended"), `types ${types}`);
const aw = await call(`mem.v1.agent.${A}.watch`, { from_seq: 0, wait_ms: 0 });
const entry = aw.changes.at(-1).batch.events[0].entry;
assert.equal(Buffer.from(entry.value, "base64").toString(), value);
assert.notEqual(entry.compressed, true);
steps.push("json watch");

// A change made while a watch waits arrives in it.
const waiting = call(`mem.v1.session.${S}.watch`, { from_seq: sw.last_seq, wait_ms: 5000 });
const next = await call(`mem.v1.session.${S}.append`, { messages: [{ role: "user", content: "Book the train." }] });
const woke = await waiting;
assert.equal(woke.changes[0].seq, next.result.seq);
steps.push("watch wakes");

await nc.close();
console.log(JSON.stringify({ ok: true, steps }));
