// Tests of the TypeScript SDK against a real node: AGENTMEM_URL names its
// HTTP listener (the Go test TestTypeScriptSDKAgainstNode in node/ starts one
// on a free port and runs node --test here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { AgentmemError, Client, agent, scope } from "../src/index.js";
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
  assert.ok(JSON.stringify(hits).includes("Tom"), JSON.stringify(hits));
  assert.ok("messages" in (await mem.recall(s)));
  await mem.terminate(s, "done");
  await rejects(mem.append(s, [{ role: "user", content: "more" }]), 409);
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
  } finally {
    srv.close();
  }
});
