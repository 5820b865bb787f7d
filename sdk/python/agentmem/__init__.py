"""agentmem: a thin client of the agentmem HTTP API (standard library only).

    from agentmem import Client
    mem = Client("http://127.0.0.1:9090")
    mem.create_session("s1", system_prompt="You are helpful.")
    mem.append("s1", [{"role": "user", "content": "My cat is called Tom."}])
    messages = mem.openai_messages("s1")   # ready for Chat Completions

Every call is POST /v1/<kind>/<id>/<op> with the JSON body and reply of the
same operation over NATS (the node's /v1/openapi.json lists them). Writes
carry a command id, generated when not given and reused by every retry, so
a retried write is stored once (the reply says duplicate: true).

agentmem.types holds every request and reply shape as a TypedDict,
generated from the same document (scripts/gen_types.py).
"""

from . import types
from .client import AgentmemError, Client, agent, merge_consistency, scope

__all__ = ["AgentmemError", "Client", "agent", "merge_consistency", "scope", "types", "__version__"]
__version__ = "0.2.0"
