"""A whole agent conversation through the Python SDK, every reply checked
against the type agentmem.types (generated from sdk/openapi.json by
scripts/gen_types.py) declares for its operation: a tool call and its
result (the assistant message as an OpenAI reply returns it), the OpenAI
and Anthropic contexts, search, memory, consolidation with a conflict,
erase, and the watch resumed after its last change.

AGENTMEM_URL names the node (the Go test TestPythonSDKAgainstNode starts one).
"""

import base64
import os
import typing
import unittest
import uuid

import typed
from agentmem import AgentmemError, Client, agent, scope, types

URL = os.environ.get("AGENTMEM_URL", "")


class CheckedClient(Client):
    """A Client whose every reply is checked against its generated type."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.checked = []
        self.wrong = []

    def call(self, path, body=None):
        reply = super().call(path, body)
        op = typed.operation_of("POST", "/v1/" + path.strip("/"))
        if op is None:
            self.wrong.append(f"{path}: no operation in agentmem.types.OPERATIONS")
            return reply
        name, _, reply_type = op
        self.checked.append(name)
        self.wrong += [f"{name}: {e}" for e in typed.check(reply, reply_type)]
        return reply


@unittest.skipUnless(URL, "AGENTMEM_URL is not set (run through the Go test TestPythonSDKAgainstNode)")
class Conversation(unittest.TestCase):
    def test_conversation(self):
        mem = CheckedClient(URL)
        run = uuid.uuid4().hex[:8]
        s, u, a = f"pyconv-{run}", f"u-{run}", f"a-{run}"
        mem.create_session(s, system_prompt="You are a travel agent.", user_id=u, agent_id=a,
                           max_context_tokens=16384, reserved_output_tokens=1000)

        # A turn with a tool call; the assistant message is an OpenAI
        # choices[0].message as the API returns it.
        reply: types.MessageInput = {
            "role": "assistant", "content": None, "refusal": None, "annotations": [],
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
        }
        turn = [
            {"role": "user", "content": "What's the weather in Paris?"},
            reply,
            {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"},
            {"role": "assistant", "content": "It is 18C and sunny in Paris.", "refusal": None},
        ]
        first = mem.append(s, turn, command_id=f"turn-{run}")
        again = mem.append(s, turn, command_id=f"turn-{run}")
        self.assertFalse(first["result"]["duplicate"])
        self.assertTrue(again["result"]["duplicate"])
        self.assertEqual(first["message_ids"], again["message_ids"])

        # Search right after the append, without min_seq.
        hits = mem.call(f"session/{s}/search", {"query": "weather Paris sunny"})["hits"]
        self.assertTrue(any("sunny" in h["message"]["content"] for h in hits), hits)

        # The contexts.
        oa = mem.openai_messages(s)
        self.assertEqual([m["role"] for m in oa], ["system", "user", "assistant", "tool", "assistant"])
        self.assertEqual(oa[2]["tool_calls"][0]["function"]["name"], "get_weather")
        self.assertEqual(oa[3]["tool_call_id"], "call_1")
        mem.append(s, oa[-1:])  # the context's messages go back in as they are
        system, msgs = mem.anthropic(s)
        self.assertIn("travel agent", system)
        blocks = [b for m in msgs for b in m["content"]]
        use = next(b for b in blocks if b["type"] == "tool_use")
        result = next(b for b in blocks if b["type"] == "tool_result")
        self.assertEqual((use["name"], use["input"]), ("get_weather", {"city": "Paris"}))
        self.assertEqual(result["tool_use_id"], use["id"])
        self.assertEqual(set(use), {"type", "id", "name", "input"})

        # Memory.
        where = agent(a)
        mem.put(where, "travel.preference", "Prefers trains to planes.", importance=0.8)
        self.assertEqual(mem.get(where, "travel.preference")["text"], "Prefers trains to planes.")
        self.assertTrue(any(h["entry"]["key"] == "travel.preference" for h in mem.search_memory(where, "trains")))

        # Consolidation: a fact, then a contradiction filed for review, settled.
        user = scope("user", u)
        mem.configure(user, conflict_strategy="review")

        def said(session_id, *lines):
            mem.create_session(session_id, user_id=u, agent_id=a)
            mem.append(session_id, [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                                    for i, t in enumerate(lines)])
            return session_id

        oslo = said(f"oslo-{run}", "I live in Oslo.", "Cool.")
        self.assertEqual([f["outcome"] for f in mem.consolidate(oslo, dry_run=True)["facts"]], ["dry_run"])
        mem.consolidate(oslo)
        moved = mem.consolidate(said(f"bergen-{run}", "Big news: I moved to Bergen last week.", "Congrats!"))
        self.assertEqual([f["outcome"] for f in moved["facts"]], ["review"])
        conflicts = mem.conflicts(user)
        self.assertEqual([c["key"] for c in conflicts], ["fact/user/home_city"])
        mem.settle(user, "fact/user/home_city", True, command_id=f"settle-{run}")
        self.assertIn("Bergen", mem.get(user, "fact/user/home_city")["text"])

        # Delete and erase an entry: the declared union's two members.
        mem.put(where, "secret", "v1")
        tomb = mem.delete(where, "travel.preference")
        self.assertTrue(tomb["entry"]["deleted"])
        receipt = mem.erase_entry(where, "secret", reason="asked")
        self.assertTrue(receipt["removal_id"])

        # The watch: the first changes, then resumed after the second.
        seqs = []
        for change in mem.watch("session/" + s):
            self.assertEqual(typed.check(change, "WatchChange"), [])
            seqs.append(int(change["seq"]))
            if len(seqs) == 3:
                break
        resumed = next(iter(mem.watch("session/" + s, from_seq=seqs[1])))
        self.assertEqual(int(resumed["seq"]), seqs[2])

        # Erase the session: its context is 404, its watch an error.
        self.assertTrue(mem.erase_session(s, reason="conversation over")["removal_id"])
        for read in (lambda: mem.context(s), lambda: next(iter(mem.watch("session/" + s)))):
            with self.assertRaises(AgentmemError) as cm:
                read()
            self.assertEqual((cm.exception.code, cm.exception.field), (404, "session_id"))

        self.assertEqual(mem.wrong, [])
        self.assertGreaterEqual(len(set(mem.checked)), 14, mem.checked)


class GeneratedTypes(unittest.TestCase):
    def test_types_are_generated_from_the_document(self):
        import subprocess
        import sys
        here = os.path.dirname(os.path.abspath(__file__))
        gen = os.path.join(here, "..", "scripts", "gen_types.py")
        r = subprocess.run([sys.executable, gen, "--check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_every_type_resolves(self):
        n = 0
        for name in dir(types):
            t = getattr(types, name)
            if typing.is_typeddict(t):
                typing.get_type_hints(t, vars(types))
                n += 1
        self.assertGreater(n, 90)
        for name, (method, path, request, reply) in types.OPERATIONS.items():
            for t in (request, reply):
                if t not in ("None", "dict"):
                    typed.resolve(t)


if __name__ == "__main__":
    unittest.main()
