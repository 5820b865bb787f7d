// Compiled with tsc --noEmit (npm run typecheck): the SDK's declarations
// and the generated message types agree with how the README uses them.
import { AgentmemError, Client, agent, scope, type Operations, type ContextReply, type EntryReply, type EraseReceipt } from "../src/index.js";

async function quickStart(): Promise<void> {
  const mem = new Client({ url: "http://127.0.0.1:9090" });
  await mem.createSession("s1", { system_prompt: "You are helpful.", user_id: "u1" });
  const r = await mem.append("s1", [{ role: "user", content: "My cat is called Tom." }]);
  const seq: string | number | undefined = r.result?.seq;
  // An OpenAI Chat Completions reply (choices[0].message) is appended as it
  // comes: content null, refusal null, typed tool calls.
  const reply = {
    role: "assistant" as const, content: null, refusal: null, annotations: [],
    tool_calls: [{ id: "call_1", type: "function" as const, function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }],
  };
  await mem.append("s1", [reply, { role: "tool", tool_call_id: "call_1", content: "18C" }]);
  const msgs = await mem.openaiMessages("s1");
  // The context's own messages go back in as they are.
  await mem.append("s1", msgs.slice(-1));
  const first: string | undefined = msgs[0]?.role;
  const ctx: ContextReply = await mem.context("s1", "anthropic");
  const hits = await mem.search("s1", "cat", { limit: 5 });
  await mem.put(agent("a1"), "pref", "likes tea");
  const e = await mem.get(scope("user", "u1"), "diet");
  const text: string | undefined = e.text;
  const op: Operations["session_append"]["request"] = { messages: [{ role: "user", content: "x" }] };
  for await (const ch of mem.watch("session/s1", { fromSeq: 0 })) {
    const s: string | number | undefined = ch.seq;
    void s;
    break;
  }
  const facts = (await mem.consolidate("s1", { dryRun: true })).facts ?? [];
  const outcome: string | undefined = facts[0]?.outcome;
  await mem.configure(scope("user", "u1"), { conflict_strategy: "review" });
  const cs = await mem.conflicts(scope("user", "u1"));
  const proposed: string | undefined = cs[0]?.proposed?.text;
  const settled: EntryReply = await mem.settle(scope("user", "u1"), "fact/user/home_city", true);
  const receipt: EraseReceipt = await mem.eraseEntry(agent("a1"), "pref", { reason: "asked" });
  const viaDelete: EraseReceipt = await mem.delete(agent("a1"), "pref", { erase: true });
  const tomb: EntryReply = await mem.delete(agent("a1"), "pref");
  const gone: Array<string> | undefined = (await mem.eraseUser("u1")).sessions;
  await mem.eraseSession("s1");
  await mem.eraseAgent("a1");
  await mem.eraseScope("project", "p1");
  void outcome, proposed, settled, receipt, viaDelete, tomb, gone;
  try {
    await mem.terminate("s1");
  } catch (err) {
    if (err instanceof AgentmemError) console.log(err.code, err.field);
  }
  void seq, first, ctx, hits, text, op;
}
void quickStart;
