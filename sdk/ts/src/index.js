// agentmem: a thin client of the agentmem HTTP API (no dependencies; Node
// 20+ or a browser: fetch and web streams). Every call is
// POST /v1/<kind>/<id>/<op> with the JSON body and reply of the same
// operation over NATS (the node's /v1/openapi.json; types in types.d.ts are
// generated from it). Writes carry a command id, generated when not given
// and reused by every retry, so a retried write is stored once.

/** Codes worth a retry: busy (429), cannot write now or stopping (503), no reply in time (504). */
export const RETRY_CODES = [429, 503, 504];

/** An error reply: code is the HTTP status, field the input at fault. */
export class AgentmemError extends Error {
  constructor(code, field, message) {
    super(field ? `${code} ${field}: ${message}` : `${code}: ${message}`);
    this.name = "AgentmemError";
    this.code = code;
    this.field = field;
    this.detail = message;
  }
}

/** The path of an agent's private memory. */
export const agent = (id) => `agent/${id}`;
/** The path of a shared scope (user, session, workflow, swarm, debate, app, project, agent_type, global). */
export const scope = (kind, id) => `scope/${kind}/${id}`;

/**
 * Merges consistency token lists ("k6:p3:1842,k6:p0:12", a write reply's
 * result.consistency joined by ","): the highest sequence per partition,
 * partitions in order. Tokens of another partition count than the last
 * list's (a log laid out before) and malformed ones are dropped.
 */
export function mergeConsistency(...lists) {
  const parse = (t) => {
    const m = /^k(\d{1,6}):p(\d{1,6}):(\d{1,20})$/.exec(t.trim());
    if (!m || BigInt(m[3]) === 0n || Number(m[2]) >= Number(m[1]) || Number(m[1]) < 1) return null;
    return { k: Number(m[1]), p: Number(m[2]), seq: BigInt(m[3]) };
  };
  const tokens = lists.map((l) => (l || "").split(",").map(parse).filter(Boolean));
  const last = tokens.findLast((ts) => ts.length > 0);
  if (!last) return "";
  const k = last[0].k;
  const best = new Map();
  for (const t of tokens.flat()) if (t.k === k && (!best.has(t.p) || t.seq > best.get(t.p))) best.set(t.p, t.seq);
  return [...best.keys()].sort((a, b) => a - b).map((p) => `k${k}:p${p}:${best.get(p)}`).join(",");
}

const commandId = (given) => given || globalThis.crypto.randomUUID().replaceAll("-", "");
const b64 = (v) => (typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v)).toString("base64");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function decodeEntry(e = {}) {
  if (typeof e.value === "string") {
    const raw = Buffer.from(e.value, "base64");
    e.bytes = new Uint8Array(raw);
    e.text = raw.toString("utf8");
  }
  return e;
}

async function errorOf(resp) {
  const text = await resp.text();
  try {
    const d = JSON.parse(text);
    return new AgentmemError(Number(d.code ?? resp.status), d.field ?? "", d.message ?? "");
  } catch {
    return new AgentmemError(resp.status, "", text.slice(0, 500));
  }
}

export class Client {
  /**
   * @param {object} [opts]
   * @param {string} [opts.url] the node's HTTP listener (default http://127.0.0.1:9090)
   * @param {string} [opts.token] bearer token of a node with tenants
   * @param {number} [opts.timeoutMs] per request (default 30000)
   * @param {number} [opts.retries] resends after a connection error, 429, 503 or 504 (default 3)
   * @param {number} [opts.backoffMs] first pause between tries, doubled each time (default 200)
   */
  constructor({ url = "http://127.0.0.1:9090", token, timeoutMs = 30000, retries = 3, backoffMs = 200 } = {}) {
    this.url = url.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.backoffMs = backoffMs;
    /** The stream sequence of this client's last write: searches and recalls pass it as min_seq (unless given), so they see the client's own writes. */
    this.lastSeq = 0n;
    /** The consistency tokens of this client's writes, merged (mergeConsistency): searches and recalls pass them as consistency (unless min_seq or consistency is given), so they see the client's own writes on any node of a log in partitions. */
    this.consistency = "";
  }

  record(reply) {
    // A write's result, or an erase's receipt (removal_id): what it wrote.
    const written = reply?.removal_id !== undefined ? reply : reply?.result;
    const seq = written?.seq ?? written?.removal_seq;
    if (seq && BigInt(seq) > this.lastSeq) this.lastSeq = BigInt(seq);
    const token = written?.consistency;
    if (token) this.consistency = mergeConsistency(this.consistency, token);
    return reply;
  }

  readOwnWrites(body) {
    if (body.min_seq !== undefined || body.consistency !== undefined) return body;
    const out = { ...body };
    if (this.lastSeq > 0n) out.min_seq = String(this.lastSeq);
    if (this.consistency) out.consistency = this.consistency;
    return out;
  }

  /**
   * POST a read that waits for this client's writes unless fields name
   * min_seq or consistency. Refused for what the client kept (400 min_seq or
   * consistency: the log moved to another layout), the client forgets it and
   * asks once more without; a value the caller gave is refused as it is.
   */
  async readAfter(path, fields) {
    const own = fields.min_seq === undefined && fields.consistency === undefined;
    try {
      return await this.call(path, this.readOwnWrites(fields));
    } catch (e) {
      if (!own || !(e instanceof AgentmemError) || e.code !== 400 || (e.field !== "min_seq" && e.field !== "consistency")) throw e;
      this.lastSeq = 0n;
      this.consistency = "";
      return this.call(path, fields);
    }
  }

  headers(accept = "application/json") {
    const h = { "Content-Type": "application/json", Accept: accept };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  /** POST /v1/<path> with body; the reply, or an AgentmemError after the retries. */
  async call(path, body = {}) {
    const data = JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      let err;
      try {
        const resp = await fetch(`${this.url}/v1/${path.replace(/^\/+|\/+$/g, "")}`, {
          method: "POST", headers: this.headers(), body: data, signal: AbortSignal.timeout(this.timeoutMs),
        });
        if (resp.ok) return this.record(await resp.json());
        err = await errorOf(resp);
        if (!RETRY_CODES.includes(err.code)) throw err;
      } catch (e) {
        if (e instanceof AgentmemError && !RETRY_CODES.includes(e.code)) throw e;
        err = e instanceof AgentmemError ? e : new AgentmemError(0, "", `cannot reach ${this.url}: ${e.message}`);
      }
      if (attempt >= this.retries) throw err;
      await sleep(this.backoffMs * 2 ** attempt);
    }
  }

  // --- sessions ---
  createSession(id, fields = {}) {
    return this.call(`session/${id}/create`, { ...fields, command_id: commandId(fields.command_id) });
  }
  append(id, messages, fields = {}) {
    return this.call(`session/${id}/append`, { ...fields, messages, command_id: commandId(fields.command_id) });
  }
  terminate(id, reason = "", fields = {}) {
    return this.call(`session/${id}/status`, { ...fields, action: "terminate", reason, command_id: commandId(fields.command_id) });
  }
  getSession(id) {
    return this.call(`session/${id}/get`);
  }
  context(id, format) {
    return this.call(`session/${id}/context`, format ? { format } : {});
  }
  async openaiMessages(id) {
    return (await this.context(id, "openai")).rendered?.openai ?? [];
  }
  async anthropic(id) {
    const r = (await this.context(id, "anthropic")).rendered ?? {};
    return { system: r.system ?? "", messages: r.anthropic ?? [] };
  }
  async search(id, query, fields = {}) {
    return (await this.readAfter(`session/${id}/search`, { ...fields, query })).hits ?? [];
  }
  recall(id, fields = {}) {
    return this.readAfter(`session/${id}/recall`, fields);
  }

  // --- memory entries ---
  put(where, key, value, fields = {}) {
    return this.call(`${where}/put`, { ...fields, key, value: b64(value), command_id: commandId(fields.command_id) });
  }
  async get(where, key, version) {
    return decodeEntry((await this.call(`${where}/get`, version ? { key, version } : { key })).entry);
  }
  /** A tombstone (the history stays); with fields.erase true every version goes and the reply is the EraseReceipt. */
  delete(where, key, fields = {}) {
    return this.call(`${where}/delete`, { ...fields, key, command_id: commandId(fields.command_id) });
  }
  /** config: max_entries, episodic_ttl_seconds, conflict_strategy ("last_write_wins", "review", "llm"). */
  configure(where, config, fields = {}) {
    return this.call(`${where}/configure`, { ...fields, config, command_id: commandId(fields.command_id) });
  }
  async history(where, key) {
    return ((await this.call(`${where}/history`, { key })).versions ?? []).map(decodeEntry);
  }
  async searchMemory(where, query, fields = {}) {
    return (await this.readAfter(`${where}/search`, { ...fields, query })).hits ?? [];
  }

  // --- erase ---
  /** target: "session/<id>", "agent/<id>", "user/<id>" or "scope/<kind>/<id>". */
  erase(target, fields = {}) {
    return this.call(`${target}/erase`, { ...fields, command_id: commandId(fields.command_id) });
  }
  eraseSession(id, fields = {}) {
    return this.erase(`session/${id}`, fields);
  }
  eraseUser(id, fields = {}) {
    return this.erase(`user/${id}`, fields);
  }
  eraseAgent(id, fields = {}) {
    return this.erase(agent(id), fields);
  }
  eraseScope(kind, id, fields = {}) {
    return this.erase(scope(kind, id), fields);
  }
  /** Every version of key leaves the log, snapshots and read models (delete with erase: true); the receipt. */
  eraseEntry(where, key, fields = {}) {
    return this.delete(where, key, { ...fields, erase: true });
  }

  // --- consolidation ---
  /** The facts the user stated in session id, into long-term memory now; dryRun writes nothing. */
  consolidate(id, { dryRun = false } = {}) {
    return this.call(`session/${id}/consolidate`, dryRun ? { dry_run: true } : {});
  }
  /** The values filed for review in where ({key, current, proposed}, entries decoded as by get). */
  async conflicts(where, fields = {}) {
    const cs = (await this.call(`${where}/conflicts`, fields)).conflicts ?? [];
    for (const c of cs) {
      if (c.current) decodeEntry(c.current);
      if (c.proposed) decodeEntry(c.proposed);
    }
    return cs;
  }
  /** Take (accept: the key's next version) or drop the value proposed for key. */
  settle(where, key, accept, fields = {}) {
    return this.call(`${where}/settle`, { ...fields, key, accept, command_id: commandId(fields.command_id) });
  }

  // --- watch ---
  /**
   * Follows target's changes as Server-Sent Events, resuming after the last
   * change seen when the connection drops. Stop with opts.signal or by
   * leaving the for await loop.
   */
  async *watch(target, { fromSeq = 0, maxChanges, signal } = {}) {
    let last = BigInt(fromSeq);
    for (let attempt = 0; ; attempt++) {
      const q = `?from_seq=${last}` + (maxChanges ? `&max_changes=${maxChanges}` : "");
      let resp;
      try {
        resp = await fetch(`${this.url}/v1/${target.replace(/^\/+|\/+$/g, "")}/watch${q}`, {
          headers: this.headers("text/event-stream"), signal,
        });
      } catch (e) {
        if (signal?.aborted) return;
        if (attempt >= this.retries) throw new AgentmemError(0, "", `cannot reach ${this.url}: ${e.message}`);
        await sleep(this.backoffMs * 2 ** attempt);
        continue;
      }
      if (!resp.ok) {
        const err = await errorOf(resp);
        if (!RETRY_CODES.includes(err.code) || attempt >= this.retries) throw err;
        await sleep(this.backoffMs * 2 ** attempt);
        continue;
      }
      attempt = 0;
      try {
        for await (const ev of events(resp.body)) {
          if (ev.event === "change") {
            const change = JSON.parse(ev.data);
            last = BigInt(change.seq);
            yield change;
          } else if (ev.event === "error") {
            const d = JSON.parse(ev.data);
            throw new AgentmemError(Number(d.code), d.field ?? "", d.message ?? "");
          }
        }
      } catch (e) {
        if (e instanceof AgentmemError || signal?.aborted) throw e;
        // the stream broke: resume after the last change
      }
      if (signal?.aborted) return;
    }
  }
}

/** The events of a text/event-stream body. */
async function* events(body) {
  const dec = new TextDecoder();
  let buf = "";
  let ev = { event: "", data: [] };
  for await (const chunk of body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, "");
      buf = buf.slice(i + 1);
      if (line === "") {
        if (ev.event || ev.data.length) yield { event: ev.event || "message", data: ev.data.join("\n") };
        ev = { event: "", data: [] };
      } else if (line.startsWith(":")) {
        continue;
      } else if (line.startsWith("event:")) {
        ev.event = line.slice(6).trim();
      } else if (line.startsWith("data:")) {
        ev.data.push(line.slice(5).replace(/^ /, ""));
      }
    }
  }
}
