"""Tests of the agentmem Python SDK against a real node.

AGENTMEM_URL names the node's HTTP listener (the Go test
TestPythonSDKAgainstNode in node/ starts one on a free port and runs
these). Standard library only: python3 -m unittest discover -s sdk/python/tests
"""

import base64
import http.server
import json
import os
import threading
import unittest
import uuid

from agentmem import AgentmemError, Client, agent, merge_consistency, scope

URL = os.environ.get("AGENTMEM_URL", "")


def _text(entry: dict) -> str:
    return base64.b64decode(entry["value"]).decode()


def new_id(prefix: str) -> str:
    return prefix + "-" + uuid.uuid4().hex[:10]


class Consistency(unittest.TestCase):
    def test_merge_keeps_the_highest_per_partition(self):
        self.assertEqual(merge_consistency(), "")
        self.assertEqual(merge_consistency("k6:p3:40", "k6:p0:12"), "k6:p0:12,k6:p3:40")
        self.assertEqual(merge_consistency("k6:p3:40,k6:p0:12", "k6:p3:39", "k6:p0:13"), "k6:p0:13,k6:p3:40")
        self.assertEqual(merge_consistency("k1:p0:900", "k6:p2:5"), "k6:p2:5")
        self.assertEqual(merge_consistency("k6:p2:5", "garbage", None), "k6:p2:5")
        self.assertEqual(merge_consistency("k6:p9:5"), "")

    def test_reads_send_the_writes_tokens(self):
        c = Client("http://127.0.0.1:1")
        c._record({"result": {"seq": "7", "consistency": "k6:p3:7"}})
        c._record({"result": {"seq": "4", "consistency": "k6:p0:4"}})
        self.assertEqual(c.consistency, "k6:p0:4,k6:p3:7")
        self.assertEqual(c._read_own_writes({"query": "q"}), {"query": "q", "min_seq": 7, "consistency": "k6:p0:4,k6:p3:7"})
        self.assertEqual(c._read_own_writes({"min_seq": 2}), {"min_seq": 2})
        self.assertEqual(c._read_own_writes({"consistency": "k6:p3:1"}), {"consistency": "k6:p3:1"})
        # An erase's receipt: what it wrote in each partition.
        c._record({"removal_id": "e1", "removal_seq": "9", "consistency": "k6:p3:9,k6:p5:2"})
        self.assertEqual(c.consistency, "k6:p0:4,k6:p3:9,k6:p5:2")
        self.assertEqual(c.last_seq, 9)


@unittest.skipUnless(URL, "AGENTMEM_URL is not set (run through the Go test TestPythonSDKAgainstNode)")
class AgainstNode(unittest.TestCase):
    def setUp(self):
        self.mem = Client(URL)

    def test_session_loop(self):
        s = new_id("py")
        created = self.mem.create_session(s, system_prompt="You are a weather bot.", user_id="u1")
        self.assertIn("result", created)
        r = self.mem.append(s, [{"role": "user", "content": "What is the weather in Paris? My cat is Tom."}])
        self.assertFalse(r["result"]["duplicate"])
        self.mem.append(s, [
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"},
            {"role": "assistant", "content": "It is 18C and sunny in Paris."},
        ])
        msgs = self.mem.openai_messages(s)
        self.assertEqual(msgs[0]["role"], "system")
        self.assertIn("weather bot", msgs[0]["content"])
        roles = [m["role"] for m in msgs]
        self.assertEqual(roles[1:], ["user", "assistant", "tool", "assistant"])
        call = next(m for m in msgs if m.get("tool_calls"))
        self.assertEqual(call["tool_calls"][0]["function"]["name"], "get_weather")
        tool = next(m for m in msgs if m["role"] == "tool")
        self.assertEqual(tool["tool_call_id"], "call_1")
        system, amsgs = self.mem.anthropic(s)
        self.assertIn("weather bot", system)
        self.assertEqual(amsgs[0]["role"], "user")
        hits = self.mem.search(s, "cat Tom", min_seq=r["result"]["seq"])
        self.assertTrue(any("Tom" in json.dumps(h) for h in hits), hits)
        # The test node's log is one stream: the token is k1:p0:<seq>.
        self.assertEqual(r["result"]["consistency"], "k1:p0:" + str(r["result"]["seq"]))
        hits = self.mem.search(s, "cat Tom", consistency=r["result"]["consistency"])
        self.assertTrue(any("Tom" in json.dumps(h) for h in hits), hits)
        self.assertIn("messages", self.mem.recall(s))
        self.mem.terminate(s, reason="done")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.append(s, [{"role": "user", "content": "more"}])
        self.assertEqual(cm.exception.code, 409)

    def test_stale_kept_token_is_forgotten(self):
        # What the client kept of its writes, refused (another layout), is
        # forgotten and the read asked again; what the caller gave is not.
        s = new_id("py")
        self.mem.create_session(s, user_id="u1")
        self.mem.append(s, [{"role": "user", "content": "the lighthouse keeper counts gulls"}])
        self.mem.consistency = "k6:p3:1"  # kept from a log in six partitions
        self.assertTrue(self.mem.search(s, "lighthouse gulls"))
        self.assertEqual(self.mem.consistency, "")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.search(s, "lighthouse", consistency="k6:p3:1")
        self.assertEqual((cm.exception.code, cm.exception.field), (400, "consistency"))

    def test_retry_reuses_the_command_id(self):
        s = new_id("py")
        self.mem.create_session(s)
        first = self.mem.append(s, [{"role": "user", "content": "once"}], command_id="cmd-1")
        again = self.mem.append(s, [{"role": "user", "content": "once"}], command_id="cmd-1")
        self.assertFalse(first["result"]["duplicate"])
        self.assertTrue(again["result"]["duplicate"])
        self.assertEqual(first["result"]["seq"], again["result"]["seq"])

    def test_errors_carry_code_and_field(self):
        s = new_id("py")
        self.mem.create_session(s)
        with self.assertRaises(AgentmemError) as cm:
            self.mem.append(s, [{"role": "wizard", "content": "x"}])
        self.assertEqual(cm.exception.code, 400)
        self.assertEqual(cm.exception.field, "messages[0].role")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.context(new_id("missing"))
        self.assertEqual(cm.exception.code, 404)
        with self.assertRaises(AgentmemError) as cm:
            self.mem.call(f"session/{s}/apend")
        self.assertEqual((cm.exception.code, cm.exception.field), (404, "operation"))

    def test_memory_entries(self):
        where = agent(new_id("ag"))
        v1 = self.mem.put(where, "pref", "likes tea")
        self.mem.put(where, "pref", "likes coffee")
        e = self.mem.get(where, "pref")
        self.assertEqual(e["text"], "likes coffee")
        self.assertEqual(self.mem.get(where, "pref", version=int(v1["entry"]["version"]))["text"], "likes tea")
        self.assertEqual([h["text"] for h in self.mem.history(where, "pref")], ["likes tea", "likes coffee"])
        self.mem.delete(where, "pref")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.get(where, "pref")
        self.assertEqual(cm.exception.code, 404)
        u = scope("user", new_id("u"))
        self.mem.put(u, "diet", "vegetarian, no nuts")
        self.assertEqual(self.mem.get(u, "diet")["text"], "vegetarian, no nuts")

    def test_watch_sees_appends_in_order(self):
        s = new_id("py")
        self.mem.create_session(s)
        for i in range(3):
            self.mem.append(s, [{"role": "user", "content": f"note {i}"}])
        seqs, texts = [], []
        for change in self.mem.watch("session/" + s):
            seqs.append(int(change["seq"]))
            texts.append(json.dumps(change))
            if len(seqs) == 4:  # created, three appends
                break
        self.assertEqual(seqs, sorted(seqs))
        self.assertIn("note 2", texts[3])

    def test_erase(self):
        s = new_id("py")
        self.mem.create_session(s)
        self.mem.append(s, [{"role": "user", "content": "forget me"}])
        receipt = self.mem.erase("session/" + s, reason="user request")
        self.assertTrue(receipt.get("removal_id"), receipt)
        with self.assertRaises(AgentmemError) as cm:
            self.mem.context(s)
        self.assertEqual(cm.exception.code, 404)
        where = agent(new_id("ag"))
        self.mem.put(where, "secret", "x")
        self.mem.erase(where)
        with self.assertRaises(AgentmemError) as cm:
            self.mem.get(where, "secret")
        self.assertEqual(cm.exception.code, 404)

    def converse(self, user_id: str, *turns: str) -> str:
        s = new_id("py")
        self.mem.create_session(s, user_id=user_id, agent_id="helper", system_prompt="You help.")
        for i, text in enumerate(turns):
            self.mem.append(s, [{"role": "assistant" if i % 2 else "user", "content": text}])
        return s

    def test_consolidate_and_dry_run(self):
        u = new_id("u")
        s = self.converse(u, "I live in Oslo.", "Cool.")
        dry = self.mem.consolidate(s, dry_run=True)
        self.assertTrue(dry["extractor"])
        self.assertEqual([(f["key"], f["outcome"]) for f in dry["facts"]], [("fact/user/home_city", "dry_run")])
        with self.assertRaises(AgentmemError) as cm:  # a dry run writes nothing
            self.mem.get(scope("user", u), "fact/user/home_city")
        self.assertEqual(cm.exception.code, 404)
        done = self.mem.consolidate(s)
        self.assertEqual([f["outcome"] for f in done["facts"]], ["written"])
        self.assertEqual(done["facts"][0]["scope"], "user:" + u)
        e = self.mem.get(scope("user", u), "fact/user/home_city")
        self.assertIn("Oslo", e["text"])
        self.assertEqual(e["metadata"]["agentmem.source_session"], s)
        again = self.mem.consolidate(s)  # the same facts: nothing new
        self.assertNotIn("written", [f["outcome"] for f in again["facts"]])
        with self.assertRaises(AgentmemError) as cm:
            self.mem.consolidate(new_id("missing"))
        self.assertEqual(cm.exception.code, 404)

    def test_conflicts_and_settle(self):
        u = new_id("u")
        where = scope("user", u)
        self.mem.configure(where, conflict_strategy="review")
        self.mem.consolidate(self.converse(u, "I live in Oslo.", "Cool."))
        rep = self.mem.consolidate(self.converse(u, "Big news: I moved to Bergen last week.", "Congrats!"))
        self.assertEqual([f["outcome"] for f in rep["facts"]], ["review"])
        cs = self.mem.conflicts(where)
        self.assertEqual(len(cs), 1, cs)
        self.assertEqual(cs[0]["key"], "fact/user/home_city")
        self.assertIn("Oslo", cs[0]["current"]["text"])
        self.assertIn("Bergen", cs[0]["proposed"]["text"])
        settled = self.mem.settle(where, cs[0]["key"], accept=True, command_id="settle-1")
        self.assertFalse(settled["result"]["duplicate"])
        again = self.mem.settle(where, cs[0]["key"], accept=True, command_id="settle-1")
        self.assertTrue(again["result"]["duplicate"])
        self.assertIn("Bergen", again["entry"]["value"] and _text(again["entry"]))
        with self.assertRaises(AgentmemError) as cm:  # another command: nothing waits
            self.mem.settle(where, cs[0]["key"], accept=False)
        self.assertEqual((cm.exception.code, cm.exception.field), (404, "key"))
        e = self.mem.get(where, "fact/user/home_city")
        self.assertIn("Bergen", e["text"])
        self.assertEqual(int(e["version"]), 2)
        self.assertEqual(self.mem.conflicts(where), [])
        with self.assertRaises(AgentmemError) as cm:
            self.mem.configure(where, conflict_strategy="vote")
        self.assertEqual(cm.exception.code, 400)
        self.assertEqual(cm.exception.field, "config.conflict_strategy")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.settle(where, "", accept=True)
        self.assertEqual((cm.exception.code, cm.exception.field), (400, "key"))

    def test_erase_entry(self):
        where = agent(new_id("ag"))
        self.mem.put(where, "secret", "v1")
        self.mem.put(where, "secret", "v2")
        self.mem.put(where, "keep", "stays")
        receipt = self.mem.erase_entry(where, "secret", reason="user request", command_id="erase-1")
        self.assertTrue(receipt["removal_id"], receipt)
        self.assertTrue(receipt["target"].endswith("secret"), receipt)
        again = self.mem.erase_entry(where, "secret", reason="user request", command_id="erase-1")
        self.assertEqual(again["removal_id"], receipt["removal_id"])
        with self.assertRaises(AgentmemError) as cm:
            self.mem.get(where, "secret", version=1)
        self.assertEqual(cm.exception.code, 404)
        self.assertEqual(self.mem.get(where, "keep")["text"], "stays")
        tomb = self.mem.delete(where, "keep")  # without erase: a tombstone, the history stays
        self.assertIn("result", tomb)
        self.assertEqual([h["text"] for h in self.mem.history(where, "keep")][0], "stays")
        with self.assertRaises(AgentmemError) as cm:
            self.mem.erase_entry(where, "keep", reason="x" * 300)
        self.assertEqual((cm.exception.code, cm.exception.field), (400, "reason"))

    def test_erase_user_agent_scope(self):
        u = new_id("u")
        s = self.converse(u, "I live in Oslo.", "Cool.")
        self.mem.put(scope("user", u), "diet", "vegetarian")
        receipt = self.mem.erase_user(u, reason="account closed")
        self.assertIn(s, receipt.get("sessions", []), receipt)
        for call in (lambda: self.mem.context(s), lambda: self.mem.get(scope("user", u), "diet")):
            with self.assertRaises(AgentmemError) as cm:
                call()
            self.assertEqual(cm.exception.code, 404)
        a = new_id("ag")
        self.mem.put(agent(a), "note", "x")
        self.assertTrue(self.mem.erase_agent(a)["removal_id"])
        with self.assertRaises(AgentmemError) as cm:
            self.mem.get(agent(a), "note")
        self.assertEqual(cm.exception.code, 404)
        p = new_id("p")
        self.mem.put(scope("project", p), "plan", "ship friday")
        self.assertTrue(self.mem.erase_scope("project", p, command_id="erase-p")["removal_id"])
        with self.assertRaises(AgentmemError) as cm:
            self.mem.get(scope("project", p), "plan")
        self.assertEqual(cm.exception.code, 404)
        s2 = self.converse(new_id("u"), "hello", "hi")
        self.assertTrue(self.mem.erase_session(s2)["removal_id"])


class Retries(unittest.TestCase):
    """Retries against a local server that fails first: the body sent again
    is the same, command id included."""

    def test_retry_sends_the_same_body(self):
        bodies = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                if len(bodies) < 3:
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(b'{"code":503,"field":"","message":"busy"}')
                    return
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"result":{"seq":"7","duplicate":false}}')

            def log_message(self, *a):
                pass

        srv = http.server.HTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            c = Client(f"http://127.0.0.1:{srv.server_port}", backoff=0.01)
            r = c.append("s1", [{"role": "user", "content": "hi"}])
            self.assertEqual(r["result"]["seq"], "7")
            self.assertEqual(len(bodies), 3)
            self.assertEqual(len(set(bodies)), 1)
            self.assertTrue(json.loads(bodies[0])["command_id"])
            c.retries = 1
            bodies.clear()
            with self.assertRaises(AgentmemError) as cm:
                c.append("s1", [{"role": "user", "content": "hi"}])
            self.assertEqual(cm.exception.code, 503)
            # settle and an entry's erase resend the same command id too
            c.retries = 3
            for send in (lambda: c.settle("scope/user/u1", "fact/user/home_city", True),
                         lambda: c.erase_entry("agent/a1", "secret"),
                         lambda: c.erase_user("u1")):
                bodies.clear()
                send()
                self.assertEqual(len(bodies), 3)
                self.assertEqual(len(set(bodies)), 1, bodies)
                self.assertTrue(json.loads(bodies[0])["command_id"])
        finally:
            srv.shutdown()


if __name__ == "__main__":
    unittest.main()
