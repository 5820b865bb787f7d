// MCP conformance run: the official TypeScript SDK client drives
// agentmem-mcp over stdio and over Streamable HTTP, as each agent given,
// against a real node (started by cmd/mcp's Go test, which then checks the
// transcript written here against the service's own API).
//
//   node run.mjs <config.json>
//
// config: {"bin": path of agentmem-mcp, "nats_url": …, "out": transcript path,
//          "agents": [{"agent": "a1", "user": "agent-a1", "password": …}, …]}
//
// For every transport and agent it lists the tools (they must equal
// `agentmem-mcp --print-tools mcp`), calls each tool, reads the context
// resource, and, as every other agent, tries to reach this agent's memory
// and sessions (each attempt must be a tool error). Exit 0 when every
// expectation here held; the transcript has every call and result.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const failures = [];
const transcript = { runs: [] };

function expect(cond, what) {
  if (!cond) failures.push(what);
}

function serverArgs(a) {
  return ['--nats-url', cfg.nats_url, '--nats-user', a.user, '--agent', a.agent];
}

// connect starts agentmem-mcp as agent a over transport and returns
// {client, close}.
async function connect(transport, a) {
  const client = new Client({ name: 'agentmem-conformance', version: '1.0.0' });
  // The password goes by environment, as a desktop client's config would.
  const env = { AGENTMEM_NATS_PASSWORD: a.password };
  if (transport === 'stdio') {
    const t = new StdioClientTransport({ command: cfg.bin, args: serverArgs(a), env, stderr: 'pipe' });
    await client.connect(t);
    return { client, close: () => client.close() };
  }
  const child = spawn(cfg.bin, [...serverArgs(a), '--http', '127.0.0.1:0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const addr = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('agentmem-mcp --http printed no address: ' + buf)), 15000);
    child.stderr.on('data', (d) => {
      buf += d;
      const m = buf.match(/addr=(\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', () => reject(new Error('agentmem-mcp exited: ' + buf)));
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://${addr}/mcp`)));
  return {
    client,
    close: async () => {
      await client.close();
      child.kill('SIGTERM');
      const { code } = await exited;
      expect(code === 0, `http ${a.agent}: agentmem-mcp exited with ${code} on SIGTERM`);
    },
  };
}

// call calls a tool and records it; want: 'ok' or an error {code, field}.
async function call(run, client, name, args, want = 'ok') {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.[0]?.text ?? '';
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  run.calls.push({ tool: name, args, is_error: !!res.isError, result: body });
  const where = `${run.transport} ${run.agent} ${name} ${JSON.stringify(args)}`;
  if (want === 'ok') {
    expect(!res.isError, `${where}: ${text}`);
    expect(res.isError || res.structuredContent && isDeepStrictEqual(res.structuredContent, body), `${where}: structuredContent differs from the text`);
  } else {
    expect(res.isError === true, `${where}: want an error ${JSON.stringify(want)}, got ${text}`);
    if (res.isError) {
      const e = body.error ?? {};
      for (const [k, v] of Object.entries(want)) {
        expect(e[k] === v, `${where}: error.${k} = ${JSON.stringify(e[k])}, want ${JSON.stringify(v)} (${text})`);
      }
    }
  }
  return body;
}

const printed = JSON.parse(spawnSync(cfg.bin, ['--print-tools', 'mcp'], { encoding: 'utf8' }).stdout);

// scenario: every tool, as agent a; s is this run's session id.
async function scenario(run, client, a, s) {
  const key = `profile/${run.transport}/colour`;
  const listed = (await client.listTools()).tools;
  run.tools = listed.map((t) => t.name);
  expect(listed.length === printed.length, `${run.transport} ${a.agent}: ${listed.length} tools listed, --print-tools has ${printed.length}`);
  for (const p of printed) {
    const t = listed.find((x) => x.name === p.name);
    expect(t && t.description === p.description && isDeepStrictEqual(t.inputSchema, p.inputSchema),
      `${run.transport} ${a.agent}: tool ${p.name} differs from --print-tools`);
  }
  const templates = (await client.listResourceTemplates()).resourceTemplates;
  expect(templates.some((t) => t.uriTemplate === 'agentmem://session/{id}/context'), 'no session context resource template');

  await call(run, client, 'session_append', {
    session_id: s,
    system_prompt: 'You are a careful assistant.',
    messages: [
      { role: 'user', content: `My name is Ada and my favourite colour is teal (${a.agent}).` },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'lookup', arguments: '{"q":"colour"}' }] },
      { role: 'tool', tool_call_id: 'c1', content: 'teal is a blue-green' },
    ],
  });
  await call(run, client, 'session_append', { session_id: s, messages: [{ role: 'assistant', content: 'Noted: teal.' }] });
  await call(run, client, 'session_append', { session_id: s, messages: [{ role: 'USER', content: 'x' }] }, { code: 400, field: 'messages[0].role' });
  await call(run, client, 'search_conversation', { session_id: s, query: 'favourite colour', promote: true });
  await call(run, client, 'clear_recalled_context', { session_id: s });
  await call(run, client, 'memory_write', { scope: 'agent', key, value: 'teal', memory_type: 'semantic', tags: ['profile'] });
  await call(run, client, 'memory_write', { scope: 'agent', key, value: 'teal, not green', expected_version: 1 });
  await call(run, client, 'memory_write', { scope: 'agent', key, value: 'lost', expected_version: 1 }, { code: 409 });
  await call(run, client, 'memory_write', { scope: 'agent', key: `secret/${run.transport}/${a.agent}`, value: `only ${a.agent} knows` });
  await call(run, client, 'memory_write', { scope: 'workflow:w1', key: `note-${run.transport}-${a.agent}`, value: `shared by ${a.agent}` });
  await call(run, client, 'memory_write', { scope: 'project:p1', key: 'x', value: 'y' }, { code: 403, field: 'scope' });
  // Reads last, so the Go test can compare them with the service's state.
  run.final = {
    context: await call(run, client, 'session_context', { session_id: s }),
    openai: await call(run, client, 'session_context', { session_id: s, format: 'openai' }),
    anthropic: await call(run, client, 'session_context', { session_id: s, format: 'anthropic' }),
    recall: await call(run, client, 'recall_conversation', { session_id: s, offset: 0, limit: 50 }),
    search: await call(run, client, 'search_conversation', { session_id: s, query: 'teal' }),
    read: await call(run, client, 'memory_read', { scope: 'agent', key }),
    list: await call(run, client, 'memory_list', { scope: 'agent', prefix: `profile/${run.transport}/` }),
    mem_search: await call(run, client, 'memory_search', { scope: 'agent', query: 'teal' }),
    history: await call(run, client, 'memory_history', { scope: 'agent', key }),
  };
  const rr = await client.readResource({ uri: `agentmem://session/${s}/context` });
  run.final.resource = JSON.parse(rr.contents[0].text);
  expect(isDeepStrictEqual(run.final.resource, run.final.context), `${run.transport} ${a.agent}: the context resource differs from session_context`);
}

// intrude: agent b tries to reach agent a's memory and session s.
async function intrude(run, client, a, s) {
  const denied = { code: 403 };
  // Account b does not import mem.v1.agent.<a>.>: nothing answers there.
  const key = `profile/${run.transport}/colour`;
  await call(run, client, 'memory_read', { scope: `agent:${a.agent}`, key }, { code: 503, field: 'scope' });
  await call(run, client, 'memory_write', { scope: `agent:${a.agent}`, key, value: 'hacked' }, { code: 503, field: 'scope' });
  await call(run, client, 'memory_history', { scope: `agent:${a.agent}`, key }, { code: 503, field: 'scope' });
  // Its own "agent" scope is its own memory: a's key is not there.
  await call(run, client, 'memory_read', { scope: 'agent', key: `secret/${run.transport}/${a.agent}` }, { code: 404, field: 'key' });
  const own = await call(run, client, 'memory_list', { scope: 'agent' });
  expect(!JSON.stringify(own).includes(`(${a.agent})`), `${run.agent} lists ${a.agent}'s memory`);
  await call(run, client, 'session_context', { session_id: s }, denied);
  await call(run, client, 'recall_conversation', { session_id: s }, denied);
  await call(run, client, 'search_conversation', { session_id: s, query: 'teal' }, denied);
  await call(run, client, 'session_append', { session_id: s, messages: [{ role: 'user', content: 'hacked' }] }, denied);
  await call(run, client, 'clear_recalled_context', { session_id: s }, denied);
  let read = false;
  try {
    await client.readResource({ uri: `agentmem://session/${s}/context` });
    read = true;
  } catch {
    // refused: what we want
  }
  expect(!read, `${run.agent} read ${a.agent}'s context resource`);
}

for (const transport of ['stdio', 'http']) {
  const conns = [];
  for (const a of cfg.agents) conns.push(await connect(transport, a));
  for (const [i, a] of cfg.agents.entries()) {
    const run = { transport, agent: a.agent, session_id: `mcp-${transport}-${a.agent}`, calls: [] };
    transcript.runs.push(run);
    await scenario(run, conns[i].client, a, run.session_id);
  }
  for (const [i, b] of cfg.agents.entries()) {
    for (const [j, a] of cfg.agents.entries()) {
      if (i === j) continue;
      const run = { transport, agent: b.agent, intruding_on: a.agent, calls: [] };
      transcript.runs.push(run);
      await intrude(run, conns[i].client, a, `mcp-${transport}-${a.agent}`);
    }
  }
  for (const c of conns) await c.close();
}

writeFileSync(cfg.out, JSON.stringify(transcript, null, 2));
const calls = transcript.runs.reduce((n, r) => n + r.calls.length, 0);
for (const f of failures) console.error('FAIL', f);
console.log(`${calls} tool calls over stdio and http, ${failures.length} failed expectations`);
process.exit(failures.length ? 1 : 0);
