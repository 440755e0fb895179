"""Size limits: a body over `MEMSCHED_MAX_BODY_BYTES` or a message over `MEMSCHED_MAX_MESSAGE_TOKENS` is a 413.

Both are checked before anything is stored. The body limit is enforced while the body is read (a
declared Content-Length over the limit is refused before reading; a chunked body is cut off as soon as
it passes the limit). Token counts are bounded by characters first: a text of n characters has at
most n*4 UTF-8 bytes and at least one byte per token, so short texts are never tokenised here, and a
long one is counted chunk by chunk, stopping as soon as the limit is passed (the BPE tokenizer refuses
very long inputs outright, and a 1.5-million-character message must cost no more than a few chunks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memsched.server.errors import LimitError, error_response
from memsched.text.tokens import TokenCounter

CHUNK_CHARS = 20_000
# POST /v1/users/{user}/import: its 413 names the CLI, which imports an export of any size.
IMPORT_PATH = re.compile(r"^/v1/users/.+/import/?$")


class BodyLimitMiddleware:
    """Refuses request bodies over `max_bytes` with a 413 in OpenAI format."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self, scope: Scope) -> str:
        said = f"request body is over MEMSCHED_MAX_BODY_BYTES={self.max_bytes} bytes"
        if scope.get("method") == "POST" and IMPORT_PATH.match(scope.get("path", "")):
            # An export can be bigger than any chat request: the CLI reads a file of any size.
            said += (
                "; import a bigger export with the CLI (`memsched import FILE --user USER`,"
                " against the server's home or database), or raise MEMSCHED_MAX_BODY_BYTES"
            )
        return said

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await error_response(
                        413, self._message(scope), "invalid_request_error", "body_too_large"
                    )(scope, receive, send)
                    return
        # Read the body here (it is small by construction) and replay it: a body over the limit is
        # refused before the app sees any of it.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await error_response(413, self._message(scope), "invalid_request_error", "body_too_large")(
                    scope, receive, send
                )
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def tokens_over(counter: TokenCounter, text: str, limit: int) -> int | None:
    """The token count of `text` when it is over `limit` (a lower bound once past it), else None."""
    if limit <= 0 or len(text) * 4 <= limit:
        return None
    if len(text) <= CHUNK_CHARS:
        n = counter.count(text)
        return n if n > limit else None
    total = 0
    for start in range(0, len(text), CHUNK_CHARS):
        total += counter.count(text[start : start + CHUNK_CHARS])
        if total > limit:
            return total
    return None


def check_message_tokens(counter: TokenCounter, texts: Iterable[tuple[str, str]], limit: int) -> None:
    """Raise a 413 `LimitError` when one of `texts` ((field as sent, text) pairs) is over `limit`
    tokens; it names the field (`messages.3.content`), the message's size and the limit."""
    for field, text in texts:
        n = tokens_over(counter, text, limit)
        if n is not None:
            more = "+" if len(text) > CHUNK_CHARS else ""
            raise LimitError(
                f"{field}: the message is {n}{more} tokens, over the limit of {limit}"
                f" (MEMSCHED_MAX_MESSAGE_TOKENS={limit}); split it or send less",
                "message_too_long",
            )


def message_texts(messages: Iterable[Mapping[str, Any]], field: str = "messages") -> list[tuple[str, str]]:
    """(`messages.<i>.content`, text) of each chat message (string content or its text parts)."""
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, str):
            out.append((f"{field}.{i}.content", content))
        elif isinstance(content, list):
            text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
            out.append((f"{field}.{i}.content", text))
    return out


class JsonBodyMiddleware:
    """memsched's API takes JSON bodies only: a body sent without a JSON content type (curl -d sends
    form encoding) is read as JSON (multipart bodies are left alone), so a wrong header never turns a good request into a 400."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") in ("POST", "PUT", "PATCH"):
            headers = [(k, v) for k, v in scope.get("headers", []) if k != b"content-type"]
            current = next((v for k, v in scope.get("headers", []) if k == b"content-type"), b"")
            if not current or current.lower().startswith(
                (b"application/x-www-form-urlencoded", b"text/plain")
            ):
                scope = dict(scope)
                scope["headers"] = [*headers, (b"content-type", b"application/json")]
        await self.app(scope, receive, send)
