// A schema-driven fuzz of the HTTP API, bounded: for every POST operation
// of the node's /v1/openapi.json it generates request bodies from the
// operation's request schema (random members, lengths, numbers, enum
// values, strings of each pattern), keeps those ajv finds valid by that
// schema, sends them, and checks what the contract promises:
//
//   - no reply is a 5xx;
//   - every 4xx is a JSON ErrorDetail whose code is the status and whose
//     field names the input at fault;
//   - at least MIN_ACCEPTED of the schema-valid bodies are accepted: not
//     refused as a bad body (400, 413, 415). A 404 or 409 about the state
//     (the key the random body names does not exist, the version differs)
//     is no refusal of the body and is counted apart, as is a 400 of a
//     page_token the server did not issue, of a min_seq past the log's
//     end or of a consistency token of another deployment's layout or past
//     its stream's end (values only a reply gives).
//
// Before each body the target exists: a fresh session is created for a
// session operation (but create), and the key a body names is put first in
// an agent or scope, so most bodies reach the operation itself.
//
// Usage: node fuzz.mjs <base-url> [seed] [bodies per operation]. Prints a
// JSON summary; exits 1 when a promise does not hold.
import RandExp from "randexp";
import { contract } from "./src/validate.mjs";

const MIN_ACCEPTED = 0.95;
const base = process.argv[2];
const seed = Number(process.argv[3] ?? 1);
const perOp = Number(process.argv[4] ?? 6);
if (!base) {
  console.error("usage: node fuzz.mjs <base-url> [seed] [bodies per operation]");
  process.exit(2);
}

// mulberry32: a small seeded generator, so a seed replays a run.
function rng32(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng32(seed);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[int(0, xs.length - 1)];

const doc = await (await fetch(base + "/v1/openapi.json")).json();
const schema = contract(doc);
const deref = (s) => (s?.$ref ? doc.components.schemas[s.$ref.split("/").pop()] : s);

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;!?/'\"é日本語🙂\u00a0";
function randomString(min, max) {
  const n = int(min, max);
  let s = "";
  for (let i = 0; i < n; i++) s += pick([...alphabet]);
  return s;
}

function fromPattern(pattern, maxLength) {
  const re = new RandExp(pattern);
  re.max = 12; // * and + repeat at most this often
  re.randInt = (a, b) => int(a, Math.min(b, a + 40));
  const s = re.gen();
  return maxLength !== undefined ? s.slice(0, maxLength) : s;
}

function number(s, integer) {
  const lo = s.minimum ?? (integer ? -1e6 : -1e6);
  const hi = s.maximum ?? lo + 1e6;
  // Half the values near the bounds, half anywhere between.
  const r = rand();
  let v = r < 0.2 ? lo : r < 0.4 ? hi : r < 0.6 ? lo + (hi - lo) * rand() * 0.01 : lo + (hi - lo) * rand();
  if (integer) v = Math.min(hi, Math.max(lo, Math.round(v)));
  return v;
}

/** A random value of schema s (not always valid: the caller filters). */
function gen(s, depth = 0) {
  s = deref(s) ?? {};
  if (s.allOf && !s.type && !s.properties) return gen(s.allOf[0], depth);
  if (s.oneOf || s.anyOf) return gen(pick(s.oneOf ?? s.anyOf), depth);
  if (s.const !== undefined) return s.const;
  if (s.enum) return pick(s.enum);
  let type = s.type;
  if (Array.isArray(type)) type = pick(type);
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return rand() < 0.5;
    case "integer":
      return number(s, true);
    case "number":
      return number(s, false);
    case "string":
      if (s.pattern) return fromPattern(s.pattern, s.maxLength);
      return randomString(s.minLength ?? 0, Math.min(s.maxLength ?? 40, 40));
    case "array": {
      if (depth > 4) return [];
      const n = int(s.minItems ?? 0, Math.min(s.maxItems ?? 3, (s.minItems ?? 0) + 3));
      return Array.from({ length: n }, () => gen(s.items ?? {}, depth + 1));
    }
    case "object": {
      const out = {};
      if (s.properties) {
        const required = new Set(s.required ?? []);
        for (const [k, v] of Object.entries(s.properties)) {
          if (required.has(k) || (depth < 4 && rand() < 0.5)) out[k] = gen(v, depth + 1);
        }
      } else if (s.additionalProperties && typeof s.additionalProperties === "object") {
        for (let i = int(0, 2); i > 0; i--) out[fromPattern("^[a-z_]{1,8}$")] = gen(s.additionalProperties, depth + 1);
      }
      satisfy(out, s, s, depth);
      return out;
    }
  }
  return null;
}

// satisfy bends obj towards the object-level conditions of sub (a part of
// the object schema whole): if/then/else, allOf, anyOf, not of required
// members, required members, member schemas. What it cannot bend the ajv
// filter drops.
const compiled = new Map();
function holds(sub, value) {
  const key = JSON.stringify(sub);
  if (!compiled.has(key)) compiled.set(key, schema.compile(sub));
  return compiled.get(key)(value);
}
function satisfy(obj, sub, whole, depth) {
  if (!sub || typeof sub !== "object") return;
  for (const part of sub.allOf ?? []) satisfy(obj, part, whole, depth);
  if (sub.anyOf && !sub.anyOf.some((b) => holds(b, obj))) satisfy(obj, pick(sub.anyOf), whole, depth);
  if (sub.if) satisfy(obj, holds(sub.if, obj) ? sub.then : sub.else, whole, depth);
  if (sub.not) {
    const bad = sub.not.anyOf ?? [sub.not];
    for (const b of bad) {
      if (b.required && holds(b, obj)) delete obj[pick(b.required)];
    }
  }
  if (sub === whole) return; // the object's own members are generated above
  for (const k of sub.required ?? []) {
    if (!(k in obj) && whole.properties?.[k]) obj[k] = gen(whole.properties[k], depth + 1);
  }
  for (const [k, p] of Object.entries(sub.properties ?? {})) {
    if (k in obj && !holds(p, obj[k]) && whole.properties?.[k]) {
      for (let i = 0; i < 20 && !holds(p, obj[k]); i++) obj[k] = gen(whole.properties[k], depth + 1);
    }
  }
}

/** A body valid by the operation's schema, or undefined after many tries. */
function validBody(path, tries) {
  const s = schema.requestSchema(path);
  for (let i = 0; i < 200; i++) {
    tries.n++;
    const b = gen(s);
    tries.last = schema.request(path, b);
    if (tries.last === "") return b;
    tries.body = b;
  }
  return undefined;
}

async function post(path, body) {
  const resp = await fetch(base + path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" }, signal: AbortSignal.timeout(40000) });
  const text = await resp.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: resp.status, json, text };
}

let unique = 0;
const fresh = (p) => `${p}${seed}x${++unique}`;

// setup makes what the body names exist, and returns the concrete path.
async function setup(template, body) {
  const params = {};
  let path = template;
  const kinds = doc.paths[template].post.parameters?.find((p) => p.name === "kind")?.schema.enum;
  if (template.includes("{kind}")) params.kind = pick(kinds);
  if (template.includes("{scope_id}")) params.scope_id = params.kind === "global" ? "global" : fresh("fs");
  if (template.includes("{agent_id}")) params.agent_id = fresh("fa");
  if (template.includes("{user_id}")) params.user_id = fresh("fu");
  if (template.includes("{session_id}")) {
    params.session_id = fresh("fz");
    if (!template.endsWith("/create")) {
      const r = await post(`/v1/session/${params.session_id}/create`, { user_id: fresh("fu") });
      if (r.status !== 200) throw new Error("setup create: " + r.text);
      await post(`/v1/session/${params.session_id}/append`, { messages: [{ role: "user", content: "hello there" }] });
    }
  }
  if (params.kind === "session") {
    // A session's scope is the session's: it exists with the session (with
    // a user and a project, where publish sends an entry).
    await post(`/v1/session/${params.scope_id}/create`, { user_id: fresh("fu"), project: fresh("fp") });
  }
  for (const [k, v] of Object.entries(params)) path = path.replace(`{${k}}`, v);
  const where = path.split("/").slice(0, -1).join("/");
  if ((template.startsWith("/v1/agent/") || template.startsWith("/v1/scope/")) && typeof body?.key === "string" && !template.endsWith("/put")) {
    await post(`${where}/put`, { key: body.key, value: btoa("a value to work on") });
  }
  return path;
}

const summary = { seed, perOp, generated: 0, sent: 0, accepted: 0, refused: 0, state: 0, opaque: 0, byStatus: {}, byOperation: {}, refusals: {}, problems: [] };
const ops = Object.entries(doc.paths).filter(([, item]) => item.post).map(([p]) => p).sort();

async function one(template) {
  const tries = { n: 0 };
  const body = validBody(template, tries);
  summary.generated += tries.n;
  if (body === undefined) {
    summary.problems.push(`${template}: no schema-valid body in 200 tries (the last: ${tries.last.slice(0, 300)} in ${JSON.stringify(tries.body).slice(0, 300)})`);
    return;
  }
  const path = await setup(template, body);
  const r = await post(path, body);
  summary.sent++;
  summary.byStatus[r.status] = (summary.byStatus[r.status] ?? 0) + 1;
  const op = (summary.byOperation[template] ??= {});
  const why = r.status >= 400 ? `${r.status} ${r.json?.field ?? ""}` : String(r.status);
  op[why] = (op[why] ?? 0) + 1;
  const show = `${path} ${JSON.stringify(body).slice(0, 300)} -> ${r.status} ${r.text.slice(0, 300)}`;
  if (r.status >= 500) {
    summary.problems.push("5xx: " + show);
  } else if (r.status >= 400) {
    const e = r.json;
    if (!e || e.code !== r.status || typeof e.field !== "string" || e.field === "" || typeof e.message !== "string") {
      summary.problems.push("an error without its field: " + show);
    }
    const bad = schema.reply("post", template, r.status, e);
    if (bad) summary.problems.push("error reply not as declared: " + bad);
  } else {
    const bad = schema.reply("post", template, r.status, r.json);
    if (bad) summary.problems.push("reply not as declared: " + bad + " for " + show);
  }
  if (r.status === 400 && ["page_token", "min_seq", "consistency"].includes(r.json?.field)) {
    // A page token the server did not issue, a min_seq past the log's end,
    // a consistency token of another layout or past its stream's end:
    // values only a reply gives, like a key that does not exist. Counted
    // apart, not as accepted.
    summary.opaque++;
  } else if (r.status === 400 || r.status === 413 || r.status === 415) {
    summary.refused++;
    const key = `${template} ${r.status} ${r.json?.field}`;
    summary.refusals[key] = summary.refusals[key] ?? [];
    if (summary.refusals[key].length < 2) summary.refusals[key].push(show);
  } else if (r.status === 404 || r.status === 409) {
    summary.state++;
  } else if (r.status < 300) {
    summary.accepted++;
  }
}

// A few requests at once: the watch polls wait up to their wait_ms.
const queue = ops.flatMap((op) => Array.from({ length: perOp }, () => op));
const workers = Array.from({ length: 6 }, async () => {
  while (queue.length > 0) await one(queue.shift());
});
await Promise.all(workers);

const valid = summary.sent;
summary.acceptedShare = valid ? (valid - summary.refused) / valid : 0;
const ok = summary.problems.length === 0 && summary.acceptedShare >= MIN_ACCEPTED;
console.log(JSON.stringify({ ok, ...summary }, null, 1));
process.exit(ok ? 0 : 1);
