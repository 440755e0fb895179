"""memsched's LLM access: one OpenAI-compatible chat client and a per-purpose call counter."""

from __future__ import annotations

from memsched.llm.client import (
    CALLS,
    PURPOSES,
    ChatClient,
    ChatResult,
    OpenAIChatClient,
    client_from_config,
    complete_json,
    count_call,
    extract_json_object,
    llm_calls,
    reset_llm_calls,
)

__all__ = [
    "CALLS",
    "PURPOSES",
    "ChatClient",
    "ChatResult",
    "OpenAIChatClient",
    "client_from_config",
    "complete_json",
    "count_call",
    "extract_json_object",
    "llm_calls",
    "reset_llm_calls",
]
