// Compiled with tsc --noEmit (npm run typecheck): the SDK's declarations
// and the generated message types agree with how the README uses them.
import { AgentmemError, Client, agent, scope, type Operations, type ContextReply } from "../src/index.js";

async function quickStart(): Promise<void> {
  const mem = new Client({ url: "http://127.0.0.1:9090" });
  await mem.createSession("s1", { system_prompt: "You are helpful.", user_id: "u1" });
  const r = await mem.append("s1", [{ role: "user", content: "My cat is called Tom." }]);
  const seq: string | number | undefined = r.result?.seq;
  const msgs = await mem.openaiMessages("s1");
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
  try {
    await mem.terminate("s1");
  } catch (err) {
    if (err instanceof AgentmemError) console.log(err.code, err.field);
  }
  void seq, first, ctx, hits, text, op;
}
void quickStart;
