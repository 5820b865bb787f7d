"""The agentmem HTTP client. See the package docstring."""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Iterator, List, Optional, Tuple, Union

from .types import (AnthropicMessage, AppendReply, ConfigureScopeReply, Conflict, ConsolidateReply,
                    ContextReply, CreateSessionReply, Entry, EntryHit, EntryReply, EraseReceipt,
                    GetSessionReply, MessageInput, OpenAIMessage, RecallReply, SearchHit, StatusReply,
                    WatchChange)

# Codes worth a retry: the node is busy (429), cannot write now or is
# stopping (503), or did not answer in time (504). A retry of a write
# reuses its command id, so it is stored at most once.
RETRY_CODES = (429, 503, 504)


class AgentmemError(Exception):
    """An error reply: code is the HTTP status (the API's code), field the
    input at fault ("" when none), message the reason."""

    def __init__(self, code: int, field: str, message: str):
        super().__init__(f"{code} {field}: {message}" if field else f"{code}: {message}")
        self.code = code
        self.field = field
        self.message = message


def agent(agent_id: str) -> str:
    """The path of an agent's private memory: agent/<id>."""
    return "agent/" + agent_id


def scope(kind: str, scope_id: str) -> str:
    """The path of a shared scope: scope/<kind>/<id> (kind: user, session,
    workflow, swarm, debate, app, project, agent_type, global)."""
    return f"scope/{kind}/{scope_id}"


def merge_consistency(*lists: Optional[str]) -> str:
    """Merge consistency token lists ("k6:p3:1842,k6:p0:12", a write
    reply's result.consistency joined by ","): the highest sequence per log
    partition, partitions in order. Tokens of another partition count than
    the last list's (a log laid out before) and malformed ones are
    dropped."""
    parsed = []
    for lst in lists:
        toks = []
        for t in (lst or "").split(","):
            m = re.fullmatch(r"k(\d{1,6}):p(\d{1,6}):(\d{1,20})", t.strip())
            if m and int(m.group(3)) > 0 and 1 <= int(m.group(1)) and int(m.group(2)) < int(m.group(1)):
                toks.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
        parsed.append(toks)
    last = next((toks for toks in reversed(parsed) if toks), None)
    if not last:
        return ""
    k = last[0][0]
    best: dict = {}
    for toks in parsed:
        for tk, p, seq in toks:
            if tk == k:
                best[p] = max(best.get(p, 0), seq)
    return ",".join(f"k{k}:p{p}:{best[p]}" for p in sorted(best))


def _command_id(given: Optional[str]) -> str:
    return given or uuid.uuid4().hex


def _b64(value: Union[str, bytes]) -> str:
    if isinstance(value, str):
        value = value.encode()
    return base64.b64encode(value).decode()


class Client:
    """A client of one node's HTTP API.

    url: the node's HTTP listener (--http, default http://127.0.0.1:9090).
    token: the bearer token of a node with tenants (None on the single-user
    node, which serves loopback clients only). retries: how many times a
    request is sent again after a connection error, 429, 503 or 504.
    """

    def __init__(self, url: str = "http://127.0.0.1:9090", token: Optional[str] = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.2):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        # The stream sequence of this client's last write: searches and
        # recalls pass it as min_seq (unless given), so they see the
        # client's own writes (the projection may lag them by milliseconds).
        self.last_seq = 0
        # The consistency tokens of this client's writes, merged
        # (merge_consistency): searches and recalls pass them as
        # consistency with min_seq (unless either is given), so they see
        # the client's own writes on any node of a log in partitions.
        self.consistency = ""

    # --- the one request path -------------------------------------------

    def _headers(self, accept: str = "application/json") -> dict:
        h = {"Content-Type": "application/json", "Accept": accept}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def call(self, path: str, body: Optional[dict] = None) -> dict:
        """POST /v1/<path> with body (JSON) and return the reply (a dict).
        Raises AgentmemError on an error reply, after the retries."""
        data = json.dumps(body or {}).encode()
        attempt = 0
        while True:
            req = urllib.request.Request(self.url + "/v1/" + path.strip("/"), data=data,
                                         headers=self._headers(), method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    reply = json.loads(resp.read() or b"{}")
                    self._record(reply)
                    return reply
            except urllib.error.HTTPError as e:
                err = _error_of(e.code, e.read())
                if e.code not in RETRY_CODES or attempt >= self.retries:
                    raise err from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if attempt >= self.retries:
                    raise AgentmemError(0, "", f"cannot reach {self.url}: {e}") from e
            time.sleep(self.backoff * (2 ** attempt))
            attempt += 1

    def _record(self, reply: dict) -> None:
        # A write's result, or an erase's receipt (removal_id): what it wrote.
        res = reply.get("result") if isinstance(reply, dict) else None
        if isinstance(reply, dict) and "removal_id" in reply:
            res = dict(reply, seq=reply.get("removal_seq"))
        if isinstance(res, dict) and res.get("seq"):
            self.last_seq = max(self.last_seq, int(res["seq"]))
        if isinstance(res, dict) and res.get("consistency"):
            self.consistency = merge_consistency(self.consistency, res["consistency"])

    def _read_own_writes(self, body: dict) -> dict:
        if "min_seq" in body or "consistency" in body:
            return body
        if self.last_seq:
            body["min_seq"] = self.last_seq
        if self.consistency:
            body["consistency"] = self.consistency
        return body

    def _read_after(self, path: str, body: dict) -> dict:
        """POST a read that waits for this client's writes unless body names
        min_seq or consistency. Refused for what the client kept (400 min_seq
        or consistency: the log moved to another layout), the client forgets
        it and asks once more without; a value the caller gave is refused as
        it is."""
        own = "min_seq" not in body and "consistency" not in body
        try:
            return self.call(path, self._read_own_writes(dict(body)))
        except AgentmemError as e:
            if not own or e.code != 400 or e.field not in ("min_seq", "consistency"):
                raise
            self.last_seq, self.consistency = 0, ""
            return self.call(path, body)

    # --- sessions -----------------------------------------------------------

    def create_session(self, session_id: str, command_id: Optional[str] = None, **fields: Any) -> CreateSessionReply:
        """Create a session (fields: system_prompt, user_id, agent_id, app,
        project, profile, max_context_tokens, ...)."""
        return self.call(f"session/{session_id}/create", {"command_id": _command_id(command_id), **fields})

    def append(self, session_id: str, messages: List[Union[MessageInput, OpenAIMessage]], command_id: Optional[str] = None,
               **fields: Any) -> AppendReply:
        """Append messages: OpenAI-shaped dicts (role, content, name,
        tool_calls, tool_call_id). The reply's result.seq is the write's
        stream sequence, result.duplicate true for a retry."""
        return self.call(f"session/{session_id}/append",
                         {"command_id": _command_id(command_id), "messages": messages, **fields})

    def terminate(self, session_id: str, reason: str = "", command_id: Optional[str] = None) -> StatusReply:
        """End a session (it is read-only afterwards)."""
        return self.call(f"session/{session_id}/status",
                         {"command_id": _command_id(command_id), "action": "terminate", "reason": reason})

    def get_session(self, session_id: str) -> GetSessionReply:
        return self.call(f"session/{session_id}/get")

    def context(self, session_id: str, format: Optional[str] = None) -> ContextReply:
        """The session's context (format: "openai", "anthropic" or None for
        the layered messages only)."""
        return self.call(f"session/{session_id}/context", {"format": format} if format else {})

    def openai_messages(self, session_id: str) -> List[OpenAIMessage]:
        """The context as a Chat Completions messages array."""
        return self.context(session_id, "openai").get("rendered", {}).get("openai", [])

    def anthropic(self, session_id: str) -> Tuple[str, List[AnthropicMessage]]:
        """The context for the Messages API: (system, messages)."""
        r = self.context(session_id, "anthropic").get("rendered", {})
        return r.get("system", ""), r.get("anthropic", [])

    def search(self, session_id: str, query: str, limit: Optional[int] = None, **fields: Any) -> List[SearchHit]:
        """Search the session's messages; returns the hits."""
        body = {"query": query, **fields}
        if limit is not None:
            body["limit"] = limit
        return self._read_after(f"session/{session_id}/search", body).get("hits", [])

    def recall(self, session_id: str, offset: int = 0, limit: Optional[int] = None, **fields: Any) -> RecallReply:
        """Page through what compression moved out of the context."""
        body = {"offset": offset, **fields}
        if limit is not None:
            body["limit"] = limit
        return self._read_after(f"session/{session_id}/recall", body)

    # --- memory entries ---------------------------------------------------

    def put(self, where: str, key: str, value: Union[str, bytes], command_id: Optional[str] = None,
            **fields: Any) -> EntryReply:
        """Write an entry into agent(id) or scope(kind, id)."""
        return self.call(f"{where}/put", {"command_id": _command_id(command_id), "key": key,
                                          "value": _b64(value), **fields})

    def get(self, where: str, key: str, version: int = 0) -> Entry:
        """Read an entry; entry["value"] is decoded to bytes, entry["text"]
        to str when it is UTF-8."""
        body = {"key": key}
        if version:
            body["version"] = version
        return _decode_entry(self.call(f"{where}/get", body).get("entry", {}))

    def delete(self, where: str, key: str, command_id: Optional[str] = None, erase: bool = False,
               **fields: Any) -> Union[EntryReply, EraseReceipt]:
        """Delete an entry: a tombstone, the value stays in its history (the
        reply is an EntryReply). erase=True removes every version instead
        (see erase_entry; the reply is the EraseReceipt). fields:
        expected_version, by, reason."""
        body = {"command_id": _command_id(command_id), "key": key, **fields}
        if erase:
            body["erase"] = True
        return self.call(f"{where}/delete", body)

    def configure(self, where: str, command_id: Optional[str] = None, **config: Any) -> ConfigureScopeReply:
        """Configure agent(id) or scope(kind, id): config fields max_entries,
        episodic_ttl_seconds, conflict_strategy ("last_write_wins", "review",
        "llm")."""
        return self.call(f"{where}/configure", {"command_id": _command_id(command_id), "config": config})

    def history(self, where: str, key: str) -> List[Entry]:
        """Every version of an entry, oldest first."""
        return [_decode_entry(e) for e in self.call(f"{where}/history", {"key": key}).get("versions", [])]

    def search_memory(self, where: str, query: str, limit: Optional[int] = None) -> List[EntryHit]:
        body = {"query": query}
        if limit is not None:
            body["limit"] = limit
        return self._read_after(f"{where}/search", body).get("hits", [])

    # --- erase ------------------------------------------------------------

    def erase(self, target: str, command_id: Optional[str] = None, **fields: Any) -> EraseReceipt:
        """Erase what target names: "session/<id>", "agent/<id>", "user/<id>"
        or "scope/<kind>/<id>" (POST /v1/<target>/erase; fields: reason).
        Returns the receipt (removal_id, what went)."""
        return self.call(f"{target}/erase", {"command_id": _command_id(command_id), **fields})

    def erase_session(self, session_id: str, reason: str = "", command_id: Optional[str] = None) -> EraseReceipt:
        """Erase a session, its session scope, the data it stored and what
        came from it into other scopes; returns the receipt."""
        return self.erase(f"session/{session_id}", command_id, reason=reason)

    def erase_user(self, user_id: str, reason: str = "", command_id: Optional[str] = None) -> EraseReceipt:
        """Erase a user: their sessions and their user scope."""
        return self.erase(f"user/{user_id}", command_id, reason=reason)

    def erase_agent(self, agent_id: str, reason: str = "", command_id: Optional[str] = None) -> EraseReceipt:
        """Erase an agent's private memory."""
        return self.erase(agent(agent_id), command_id, reason=reason)

    def erase_scope(self, kind: str, scope_id: str, reason: str = "", command_id: Optional[str] = None) -> EraseReceipt:
        """Erase a shared scope (an admin's call on a node with tenants)."""
        return self.erase(scope(kind, scope_id), command_id, reason=reason)

    def erase_entry(self, where: str, key: str, reason: str = "", command_id: Optional[str] = None) -> EraseReceipt:
        """Erase one entry of agent(id) or scope(kind, id): every version of
        key leaves the log, the snapshots and the read models (a delete with
        erase: true). Returns the receipt (removal_id, entries, ...); a
        retry with the same command_id answers the same receipt."""
        return self.delete(where, key, command_id, erase=True, reason=reason)

    # --- consolidation -----------------------------------------------------

    def consolidate(self, session_id: str, dry_run: bool = False) -> ConsolidateReply:
        """Extract the facts the user stated in a session into long-term
        memory now (user:<id>, agent:<id> scopes). Returns {facts,
        extractor}; each fact has key, value, scope and outcome ("written",
        "duplicate", "unchanged", "review", "retracted", "skipped",
        "dry_run"). dry_run=True writes nothing."""
        return self.call(f"session/{session_id}/consolidate", {"dry_run": True} if dry_run else {})

    def conflicts(self, where: str, limit: Optional[int] = None) -> List[Conflict]:
        """The values consolidation filed for review in where (a scope with
        conflict_strategy "review"): each {key, current, proposed}, the
        entries decoded as by get."""
        body = {"limit": limit} if limit is not None else {}
        out = self.call(f"{where}/conflicts", body).get("conflicts", [])
        for c in out:
            for side in ("current", "proposed"):
                if isinstance(c.get(side), dict):
                    _decode_entry(c[side])
        return out

    def settle(self, where: str, key: str, accept: bool, command_id: Optional[str] = None,
               by: str = "") -> EntryReply:
        """Take (accept=True: it becomes key's next version) or drop the
        value proposed for key. Returns the EntryReply."""
        body = {"command_id": _command_id(command_id), "key": key, "accept": accept}
        if by:
            body["by"] = by
        return self.call(f"{where}/settle", body)

    # --- watch ------------------------------------------------------------

    def watch(self, target: str, from_seq: int = 0, max_changes: Optional[int] = None) -> Iterator[WatchChange]:
        """Follow target's changes ("session/<id>", "agent/<id>",
        "scope/<kind>/<id>") as Server-Sent Events; yields each change (a
        dict with seq and batch). A dropped connection is resumed after the
        last change seen. Stop by breaking out of the loop."""
        last = from_seq
        attempt = 0
        while True:
            q = f"?from_seq={last}" + (f"&max_changes={max_changes}" if max_changes else "")
            req = urllib.request.Request(self.url + "/v1/" + target.strip("/") + "/watch" + q,
                                         headers=self._headers("text/event-stream"), method="GET")
            try:
                with urllib.request.urlopen(req, timeout=max(self.timeout, 60)) as resp:
                    attempt = 0
                    for event, data in _sse(resp):
                        if event == "change":
                            change = json.loads(data)
                            last = int(change.get("seq", last))
                            yield change
                        elif event == "error":
                            d = json.loads(data)
                            raise AgentmemError(int(d.get("code", 0)), d.get("field", ""), d.get("message", ""))
            except urllib.error.HTTPError as e:
                err = _error_of(e.code, e.read())
                if e.code not in RETRY_CODES or attempt >= self.retries:
                    raise err from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if attempt >= self.retries:
                    raise AgentmemError(0, "", f"cannot reach {self.url}: {e}") from e
            time.sleep(self.backoff * (2 ** attempt))
            attempt += 1


def _sse(resp) -> Iterator[tuple]:
    """The (event, data) pairs of a text/event-stream response."""
    event, data = "", []
    for raw in resp:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if event or data:
                yield event or "message", "\n".join(data)
            event, data = "", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def _error_of(status: int, body: bytes) -> AgentmemError:
    try:
        d = json.loads(body)
        return AgentmemError(int(d.get("code", status)), d.get("field", ""), d.get("message", ""))
    except (ValueError, AttributeError):
        return AgentmemError(status, "", body.decode(errors="replace")[:500])


def _decode_entry(e: dict) -> dict:
    if "value" in e:
        raw = base64.b64decode(e["value"])
        e["value"] = raw
        try:
            e["text"] = raw.decode()
        except UnicodeDecodeError:
            pass
    return e
