"""Exact token counts for OpenAI-style BPE tokenizers, offline (bpe-openai ships the tables)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from memsched.errors import ConfigError

# OpenAI's chat format costs a few tokens per message beyond its content, plus the reply primer.
# Counting them keeps "never exceeds the budget" true for what is actually sent.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMER = 3

_lock = threading.Lock()
_counters: dict[str, TokenCounter] = {}


class TokenCounter:
    """Counts tokens of one encoding; counts of repeated texts come from a cache."""

    def __init__(self, encoding: str) -> None:
        import bpe_openai

        try:
            self._enc = bpe_openai.get_encoding(encoding)
        except Exception as exc:  # bpe_openai raises its own UnsupportedModelError
            names = ", ".join(bpe_openai.list_encoding_names())
            raise ConfigError(f"unknown tokenizer {encoding!r}; choose from {names}") from exc
        self.encoding = encoding
        self.count = lru_cache(maxsize=200_000)(self._count)

    def _count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._enc.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` tokens."""
        if max_tokens <= 0:
            return ""
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        return self._enc.decode(ids[:max_tokens])

    def message_tokens(self, message: Mapping[str, Any]) -> int:
        """Tokens one chat message costs: its text content, name and the per-message overhead."""
        n = TOKENS_PER_MESSAGE + self.count(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, str):
            n += self.count(content)
        elif isinstance(content, list):  # OpenAI content parts; only text parts are counted here
            n += sum(self.count(part.get("text", "")) for part in content if isinstance(part, dict))
        if message.get("name"):
            n += TOKENS_PER_NAME + self.count(str(message["name"]))
        return n

    def messages_tokens(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Tokens of a whole request's messages, reply primer included."""
        return REPLY_PRIMER + sum(self.message_tokens(m) for m in messages)


def get_counter(encoding: str) -> TokenCounter:
    """A shared counter per encoding (loading the tables takes ~0.4 s, so it is done once)."""
    with _lock:
        counter = _counters.get(encoding)
        if counter is None:
            counter = _counters[encoding] = TokenCounter(encoding)
        return counter
