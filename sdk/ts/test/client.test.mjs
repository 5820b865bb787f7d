// Tests of the TypeScript SDK against a real node: AGENTMEM_URL names its
// HTTP listener (the Go test TestTypeScriptSDKAgainstNode in node/ starts one
// on a free port and runs node --test here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { AgentmemError, Client, agent, mergeConsistency, scope } from "../src/index.js";
import { generate } from "../scripts/gen-types.mjs";

const URL = process.env.AGENTMEM_URL;
const here = dirname(fileURLToPath(import.meta.url));
const live = { skip: URL ? false : "AGENTMEM_URL is not set (run through the Go test)" };
const id = (p) => `${p}-${Math.random().toString(36).slice(2, 12)}`;
const mem = new Client({ url: URL });

async function rejects(p, code, field) {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AgentmemError, `not an AgentmemError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (field !== undefined) assert.equal(e.field, field, e.message);
    return e;
  }
  assert.fail(`no error, want ${code}`);
}

test("types.d.ts is generated from sdk/openapi.json", () => {
  const doc = JSON.parse(readFileSync(join(here, "..", "..", "openapi.json"), "utf8"));
  assert.equal(readFileSync(join(here, "..", "src", "types.d.ts"), "utf8"), generate(doc));
  // Every type index.d.ts imports is generated.
  const decl = readFileSync(join(here, "..", "src", "index.d.ts"), "utf8");
  const imported = decl.match(/import type \{([^}]*)\}/)[1].split(",").map((s) => s.trim()).filter(Boolean);
  const types = readFileSync(join(here, "..", "src", "types.d.ts"), "utf8");
  for (const t of imported) assert.match(types, new RegExp(`export interface ${t} `), t);
});

test("mergeConsistency keeps the highest sequence per partition", () => {
  assert.equal(mergeConsistency(), "");
  assert.equal(mergeConsistency("k6:p3:40", "k6:p0:12"), "k6:p0:12,k6:p3:40");
  assert.equal(mergeConsistency("k6:p3:40,k6:p0:12", "k6:p3:39", "k6:p0:13"), "k6:p0:13,k6:p3:40");
  assert.equal(mergeConsistency("k1:p0:900", "k6:p2:5"), "k6:p2:5");
  assert.equal(mergeConsistency("k6:p2:5", "garbage", ""), "k6:p2:5");
  assert.equal(mergeConsistency("k6:p9:5"), "");
  assert.equal(mergeConsistency("k1:p0:18446744073709551615", "k1:p0:2"), "k1:p0:18446744073709551615");
});

test("writes' tokens are kept and sent with reads (unless min_seq or consistency is given)", () => {
  const c = new Client({ url: "http://127.0.0.1:1" });
  c.record({ result: { seq: "7", consistency: "k6:p3:7" } });
  c.record({ result: { seq: "4", consistency: "k6:p0:4" } });
  assert.equal(c.consistency, "k6:p0:4,k6:p3:7");
  assert.deepEqual(c.readOwnWrites({ query: "q" }), { query: "q", min_seq: "7", consistency: "k6:p0:4,k6:p3:7" });
  assert.deepEqual(c.readOwnWrites({ min_seq: "2" }), { min_seq: "2" });
  assert.deepEqual(c.readOwnWrites({ consistency: "k6:p3:1" }), { consistency: "k6:p3:1" });
  // An erase's receipt: what it wrote in each partition.
  c.record({ removal_id: "e1", removal_seq: "9", consistency: "k6:p3:9,k6:p5:2" });
  assert.equal(c.consistency, "k6:p0:4,k6:p3:9,k6:p5:2");
  assert.equal(c.lastSeq, 9n);
});

test("the served document is the committed one", live, async () => {
  const served = await (await fetch(`${URL}/v1/openapi.json`)).json();
  const doc = JSON.parse(readFileSync(join(here, "..", "..", "openapi.json"), "utf8"));
  assert.deepEqual(Object.keys(served.paths).sort(), Object.keys(doc.paths).sort());
});

test("a session loop: create, append with tool calls, context in both shapes, search, recall, terminate", live, async () => {
  const s = id("ts");
  await mem.createSession(s, { system_prompt: "You are a weather bot.", user_id: "u1" });
  const r = await mem.append(s, [{ role: "user", content: "What is the weather in Paris? My cat is Tom." }]);
  assert.equal(r.result.duplicate, false);
  assert.equal(r.result.consistency, `k1:p0:${r.result.seq}`); // the test node's log is one stream
  await mem.append(s, [
    { role: "assistant", content: "", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "18C and sunny" },
    { role: "assistant", content: "It is 18C and sunny in Paris." },
  ]);
  const msgs = await mem.openaiMessages(s);
  assert.deepEqual(msgs.map((m) => m.role), ["system", "user", "assistant", "tool", "assistant"]);
  assert.match(msgs[0].content, /weather bot/);
  assert.equal(msgs.find((m) => m.tool_calls?.length).tool_calls[0].function.name, "get_weather");
  assert.equal(msgs.find((m) => m.role === "tool").tool_call_id, "call_1");
  const { system, messages } = await mem.anthropic(s);
  assert.match(system, /weather bot/);
  assert.equal(messages[0].role, "user");
  const hits = await mem.search(s, "cat Tom", { min_seq: r.result.seq });
  assert.equal((await mem.search(s, "cat Tom", { consistency: r.result.consistency })).length > 0, true);
  assert.ok(JSON.stringify(hits).includes("Tom"), JSON.stringify(hits));
  assert.ok("messages" in (await mem.recall(s)));
  await mem.terminate(s, "done");
  await rejects(mem.append(s, [{ role: "user", content: "more" }]), 409);
});

test("what the client kept of its writes, refused (another layout), is forgotten; what the caller gave is not", live, async () => {
  const s = id("ts");
  await mem.createSession(s, { user_id: "u1" });
  await mem.append(s, [{ role: "user", content: "the lighthouse keeper counts gulls" }]);
  mem.consistency = "k6:p3:1"; // kept from a log in six partitions
  assert.equal((await mem.search(s, "lighthouse gulls")).length > 0, true);
  assert.equal(mem.consistency, "");
  await rejects(mem.search(s, "lighthouse", { consistency: "k6:p3:1" }), 400);
});

test("a retry reuses the command id: stored once", live, async () => {
  const s = id("ts");
  await mem.createSession(s);
  const first = await mem.append(s, [{ role: "user", content: "once" }], { command_id: "cmd-1" });
  const again = await mem.append(s, [{ role: "user", content: "once" }], { command_id: "cmd-1" });
  assert.equal(first.result.duplicate, false);
  assert.equal(again.result.duplicate, true);
  assert.equal(again.result.seq, first.result.seq);
});

test("errors carry code and field", live, async () => {
  const s = id("ts");
  await mem.createSession(s);
  await rejects(mem.append(s, [{ role: "wizard", content: "x" }]), 400, "messages[0].role");
  await rejects(mem.context(id("missing")), 404);
  await rejects(mem.call(`session/${s}/apend`), 404, "operation");
});

test("memory entries: put, get, versions, history, delete", live, async () => {
  const where = agent(id("ag"));
  const v1 = await mem.put(where, "pref", "likes tea");
  await mem.put(where, "pref", "likes coffee");
  assert.equal((await mem.get(where, "pref")).text, "likes coffee");
  assert.equal((await mem.get(where, "pref", Number(v1.entry.version))).text, "likes tea");
  assert.deepEqual((await mem.history(where, "pref")).map((e) => e.text), ["likes tea", "likes coffee"]);
  await mem.delete(where, "pref");
  await rejects(mem.get(where, "pref"), 404);
  const u = scope("user", id("u"));
  await mem.put(u, "diet", "vegetarian");
  assert.equal((await mem.get(u, "diet")).text, "vegetarian");
});

test("watch follows a session's changes in order (Server-Sent Events)", live, async () => {
  const s = id("ts");
  await mem.createSession(s);
  for (let i = 0; i < 3; i++) await mem.append(s, [{ role: "user", content: `note ${i}` }]);
  const ac = new AbortController();
  const seen = [];
  for await (const ch of mem.watch(`session/${s}`, { signal: ac.signal })) {
    seen.push(ch);
    if (seen.length === 4) break;
  }
  ac.abort();
  const seqs = seen.map((c) => BigInt(c.seq));
  assert.deepEqual([...seqs].sort((a, b) => (a < b ? -1 : 1)), seqs);
  assert.match(JSON.stringify(seen[3]), /note 2/);
});

test("erase a session and an agent's memory", live, async () => {
  const s = id("ts");
  await mem.createSession(s);
  await mem.append(s, [{ role: "user", content: "forget me" }]);
  const receipt = await mem.erase(`session/${s}`, { reason: "user request" });
  assert.ok(receipt.removal_id, JSON.stringify(receipt));
  await rejects(mem.context(s), 404);
  const where = agent(id("ag"));
  await mem.put(where, "secret", "x");
  await mem.erase(where);
  await rejects(mem.get(where, "secret"), 404);
});

async function converse(userId, ...turns) {
  const s = id("ts");
  await mem.createSession(s, { user_id: userId, agent_id: "helper", system_prompt: "You help." });
  for (const [i, content] of turns.entries()) await mem.append(s, [{ role: i % 2 ? "assistant" : "user", content }]);
  return s;
}

test("consolidate: a dry run writes nothing, then the facts land in the user's scope", live, async () => {
  const u = id("u");
  const s = await converse(u, "I live in Oslo.", "Cool.");
  const dry = await mem.consolidate(s, { dryRun: true });
  assert.ok(dry.extractor);
  assert.deepEqual(dry.facts.map((f) => [f.key, f.outcome]), [["fact/user/home_city", "dry_run"]]);
  await rejects(mem.get(scope("user", u), "fact/user/home_city"), 404);
  const done = await mem.consolidate(s);
  assert.deepEqual(done.facts.map((f) => f.outcome), ["written"]);
  assert.equal(done.facts[0].scope, `user:${u}`);
  const e = await mem.get(scope("user", u), "fact/user/home_city");
  assert.match(e.text, /Oslo/);
  assert.equal(e.metadata["agentmem.source_session"], s);
  assert.ok(!(await mem.consolidate(s)).facts.some((f) => f.outcome === "written"));
  await rejects(mem.consolidate(id("missing")), 404);
});

test("conflicts and settle: review strategy, a retried settle is a duplicate", live, async () => {
  const u = id("u");
  const where = scope("user", u);
  await mem.configure(where, { conflict_strategy: "review" });
  await mem.consolidate(await converse(u, "I live in Oslo.", "Cool."));
  const rep = await mem.consolidate(await converse(u, "Big news: I moved to Bergen last week.", "Congrats!"));
  assert.deepEqual(rep.facts.map((f) => f.outcome), ["review"]);
  const cs = await mem.conflicts(where);
  assert.equal(cs.length, 1, JSON.stringify(cs));
  assert.equal(cs[0].key, "fact/user/home_city");
  assert.match(cs[0].current.text, /Oslo/);
  assert.match(cs[0].proposed.text, /Bergen/);
  const first = await mem.settle(where, cs[0].key, true, { command_id: "settle-1" });
  assert.equal(first.result.duplicate, false);
  const again = await mem.settle(where, cs[0].key, true, { command_id: "settle-1" });
  assert.equal(again.result.duplicate, true);
  await rejects(mem.settle(where, cs[0].key, false), 404, "key");
  const e = await mem.get(where, "fact/user/home_city");
  assert.match(e.text, /Bergen/);
  assert.equal(Number(e.version), 2);
  assert.deepEqual(await mem.conflicts(where), []);
  await rejects(mem.configure(where, { conflict_strategy: "vote" }), 400, "config.conflict_strategy");
  await rejects(mem.settle(where, "", true), 400, "key");
});

test("erase one entry: every version goes, the receipt answers a retry", live, async () => {
  const where = agent(id("ag"));
  await mem.put(where, "secret", "v1");
  await mem.put(where, "secret", "v2");
  await mem.put(where, "keep", "stays");
  const receipt = await mem.eraseEntry(where, "secret", { reason: "user request", command_id: "erase-1" });
  assert.ok(receipt.removal_id, JSON.stringify(receipt));
  assert.match(receipt.target, /secret$/);
  const again = await mem.delete(where, "secret", { erase: true, reason: "user request", command_id: "erase-1" });
  assert.equal(again.removal_id, receipt.removal_id);
  await rejects(mem.get(where, "secret", 1), 404);
  assert.equal((await mem.get(where, "keep")).text, "stays");
  assert.ok((await mem.delete(where, "keep")).result);
  assert.equal((await mem.history(where, "keep"))[0].text, "stays");
  await rejects(mem.eraseEntry(where, "keep", { reason: "x".repeat(300) }), 400, "reason");
});

test("erase a user, an agent, a scope, a session", live, async () => {
  const u = id("u");
  const s = await converse(u, "I live in Oslo.", "Cool.");
  await mem.put(scope("user", u), "diet", "vegetarian");
  const receipt = await mem.eraseUser(u, { reason: "account closed" });
  assert.ok(receipt.sessions.includes(s), JSON.stringify(receipt));
  await rejects(mem.context(s), 404);
  await rejects(mem.get(scope("user", u), "diet"), 404);
  const a = id("ag");
  await mem.put(agent(a), "note", "x");
  assert.ok((await mem.eraseAgent(a)).removal_id);
  await rejects(mem.get(agent(a), "note"), 404);
  const p = id("p");
  await mem.put(scope("project", p), "plan", "ship friday");
  assert.ok((await mem.eraseScope("project", p, { command_id: "erase-p" })).removal_id);
  await rejects(mem.get(scope("project", p), "plan"), 404);
  assert.ok((await mem.eraseSession(await converse(id("u"), "hello", "hi"))).removal_id);
});

test("retries resend the same body, command id included", async () => {
  const bodies = [];
  const srv = createServer((req, res) => {
    let b = "";
    req.on("data", (c) => (b += c));
    req.on("end", () => {
      bodies.push(b);
      if (bodies.length < 3) {
        res.writeHead(503, { "Content-Type": "application/json" }).end('{"code":503,"field":"","message":"busy"}');
      } else {
        res.writeHead(200, { "Content-Type": "application/json" }).end('{"result":{"seq":"7","duplicate":false}}');
      }
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const c = new Client({ url: `http://127.0.0.1:${srv.address().port}`, backoffMs: 5 });
    const r = await c.append("s1", [{ role: "user", content: "hi" }]);
    assert.equal(r.result.seq, "7");
    assert.equal(bodies.length, 3);
    assert.equal(new Set(bodies).size, 1);
    assert.ok(JSON.parse(bodies[0]).command_id);
    bodies.length = 0;
    c.retries = 1;
    await rejects(c.append("s1", [{ role: "user", content: "hi" }]), 503);
    // settle and the erases resend the same command id too
    c.retries = 3;
    for (const send of [() => c.settle("scope/user/u1", "fact/user/home_city", true), () => c.eraseEntry("agent/a1", "secret"), () => c.eraseUser("u1")]) {
      bodies.length = 0;
      await send();
      assert.equal(bodies.length, 3);
      assert.equal(new Set(bodies).size, 1, bodies.join("\n"));
      assert.ok(JSON.parse(bodies[0]).command_id);
    }
  } finally {
    srv.close();
  }
});
