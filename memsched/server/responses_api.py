"""One proxied Responses API request (`POST /v1/responses`): the client's input read as a turn, the
scheduled context sent as `instructions` and input items, the upstream's response relayed.

It is the chat proxy's turn (`memsched.server.proxy.ProxyTurn`: prepare, call, record) in the
Responses API's shapes:

* `input` is a string (the user's message) or a list of items. Message items (role user, assistant,
  system or developer; content a string or `input_text`/`input_image`/`output_text` parts) are read
  like chat messages: `instructions` and the system/developer messages are the persona, the last user
  message is the new turn, the user/assistant messages before it are the client's history
  (`memsched.client_history`). Items after the last user message (`function_call`,
  `function_call_output`, `reasoning`, an assistant prefill) are forwarded verbatim after the
  scheduled context, as the chat proxy forwards a trailing tool exchange.
* Upstream, `instructions` is the scheduled system message (persona, memory, profile) and `input`
  the scheduled messages, then those trailing items. Every other field (tools, temperature,
  `max_output_tokens`, `text`, `reasoning`, `previous_response_id`, `store`, ...) is forwarded as the
  client sent it; memsched owns `input`, `instructions`, `user`, `metadata`, `model` and `stream`.
* `previous_response_id` and `store` are the upstream's own conversation state: memsched passes them
  on and builds its context the same way with or without them (the upstream then adds its stored
  copy of the earlier exchange to what memsched sends). A follow-up whose input is only
  `function_call_output` items (the tool results of a response chained by `previous_response_id`)
  completes the session's turn that waits for them.
* The reply recorded is the text of the response's `output_text` parts; `function_call` outputs are
  the client's tools (the turn waits for their results, as in chat). Streaming relays the
  upstream's events unchanged and records the text at `response.completed`. The `recall` tool loop
  is chat-completions only: here the bookmark index stays in the context.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from memsched.errors import InputError, LLMError, UpstreamStatusError
from memsched.server import proxy
from memsched.server.proxy import ProxyTurn
from memsched.server.relay import RelayResponse
from memsched.server.upstream import SSEvent
from memsched.server.validate import empty_message
from memsched.vision import Image, image_parts

OWNED = frozenset({"input", "instructions", "user", "metadata", "stream", "model"})
MESSAGE_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")
# Output items that are the client's tools to run (the upstream runs its built-in ones itself).
CLIENT_CALLS = ("function_call", "custom_tool_call")


@dataclass
class ParsedInput:
    """The client's `input` read as a turn."""

    items: list[dict[str, Any]]
    last_user: int | None  # None: no user message (tool results for a pending turn)
    message: str = ""
    images: list[Image] = field(default_factory=list)
    persona: str = ""
    history: list[tuple[str, str]] = field(default_factory=list)
    trailing: list[dict[str, Any]] = field(default_factory=list)
    # every message's (field as sent, text), for the size limit
    texts: list[tuple[str, str]] = field(default_factory=list)
    chat_view: list[dict[str, Any]] = field(default_factory=list)  # image parts in chat form


def is_message(item: dict[str, Any]) -> bool:
    return item.get("type", "message") == "message" and "role" in item


def text_of(content: Any) -> str:
    """The text of a Responses message content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") in TEXT_PARTS and p.get("text")
        )
    return ""


def _chat_image(part: dict[str, Any]) -> dict[str, Any] | None:
    """An `input_image` part as a chat `image_url` part (None: an uploaded file memsched cannot see)."""
    url = part.get("image_url")
    if isinstance(url, dict):  # tolerated: the chat form inside a Responses part
        url = url.get("url")
    if not isinstance(url, str) or not url:
        return None
    spec: dict[str, Any] = {"url": url}
    if isinstance(part.get("detail"), str) and part["detail"] != "auto":
        spec["detail"] = part["detail"]
    return {"type": "image_url", "image_url": spec}


def parse_input(value: Any, instructions: str | None) -> ParsedInput:
    """Read `input` (a string or a list of items); raises `InputError` naming the item at fault."""
    whole = isinstance(value, str)  # the message itself: errors name `input`, not an item of it
    if whole:
        value = [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise InputError("input: expected a string or a non-empty list of input items")
    items: list[dict[str, Any]] = []
    chat_view: list[dict[str, Any]] = []
    texts: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(f"input.{i}: expected an object (a message or another input item)")
        items.append(item)
        if not is_message(item):
            if item.get("type") is None:
                raise InputError(f"input.{i}: an input item needs a `type` or a message `role`")
            chat_view.append({})
            continue
        role, content = item.get("role"), item.get("content")
        if role not in MESSAGE_ROLES:
            raise InputError(f"input.{i}.role: expected one of {', '.join(MESSAGE_ROLES)}, got {role!r}")
        if not isinstance(content, str | list):
            raise InputError(f"input.{i}.content: expected a string or a list of content parts")
        parts: list[dict[str, Any]] = []
        for j, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InputError(f"input.{i}.content.{j}: expected a content part with a `type`")
            if part["type"] == "input_image":
                as_chat = _chat_image(part)
                if as_chat is None and not part.get("file_id"):
                    raise InputError(f"input.{i}.content.{j}.image_url: an image part needs a url or file_id")
                parts.append(as_chat or {"type": "file"})
            else:
                parts.append(part)
        chat_view.append({"role": role, "content": parts})
        texts.append(("input" if whole else f"input.{i}.content", text_of(content)))
    users = [i for i, it in enumerate(items) if is_message(it) and it.get("role") == "user"]
    last = users[-1] if users else None
    persona = [instructions] if instructions and instructions.strip() else []
    persona += [
        text_of(it.get("content"))
        for it in items
        if is_message(it) and it.get("role") in ("system", "developer")
    ]
    parsed = ParsedInput(
        items=items,
        last_user=last,
        persona="\n\n".join(p for p in persona if p.strip()),
        texts=texts,
        chat_view=chat_view,
    )
    if last is None:
        # Only tool results (a response chained by previous_response_id): the route finds the turn.
        parsed.trailing = [it for it in items if not is_message(it)]
        if not any(it.get("type") == "function_call_output" for it in parsed.trailing):
            raise InputError("input: must contain a user message")
        return parsed
    parsed.message = text_of(items[last].get("content"))
    parsed.images = image_parts(chat_view[last].get("content"))
    if not parsed.message.strip():
        if not parsed.images:
            raise empty_message("input" if whole else f"input.{last}.content", items[last].get("content"))
        parsed.message = ""  # blank text beside an image: the image alone is the message
    for it in items[:last]:
        if is_message(it) and it.get("role") in ("user", "assistant"):
            text = text_of(it.get("content"))
            if text.strip():
                parsed.history.append((str(it["role"]), text))
    parsed.trailing = [
        it for it in items[last + 1 :] if not (is_message(it) and it.get("role") in ("system", "developer"))
    ]
    return parsed


def upstream_input(
    messages: list[dict[str, Any]], trailing: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """(instructions, input items) for the upstream from the scheduled chat messages."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "system":
            continue
        content = m.get("content")
        if isinstance(content, list):  # a vision upstream gets the images beside their captions
            parts: list[dict[str, Any]] = []
            for part in content:
                if part.get("type") == "image_url":
                    spec = part.get("image_url") or {}
                    parts.append(
                        {
                            "type": "input_image",
                            "image_url": spec.get("url"),
                            "detail": spec.get("detail", "auto"),
                        }
                    )
                elif part.get("type") == "text":
                    parts.append({"type": "input_text", "text": str(part.get("text") or "")})
                else:  # a part memsched does not read (input_file, input_audio): as the client sent it
                    parts.append(part)
            content = parts
        out.append({"role": m.get("role"), "content": content if content is not None else ""})
    return system, [*out, *trailing]


def output_text(response: dict[str, Any]) -> str:
    """The reply's text: the `output_text` parts of the response's message items."""
    texts = []
    for item in response.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
    return "".join(texts)


def client_calls(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The response's calls to the client's tools, in the chat form `ProxyTurn.finish` records."""
    return [
        {"id": it.get("call_id"), "function": {"name": it.get("name"), "arguments": it.get("arguments")}}
        for it in response.get("output") or []
        if isinstance(it, dict) and it.get("type") in CLIENT_CALLS
    ]


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict) or not isinstance(usage.get("input_tokens"), int):
        return None
    return {"prompt_tokens": usage["input_tokens"], "completion_tokens": int(usage.get("output_tokens") or 0)}


def no_responses_api(exc: UpstreamStatusError, base_url: str) -> UpstreamStatusError:
    """An upstream 404 on /responses, said plainly (it may also be a model the upstream lacks)."""
    return UpstreamStatusError(
        f"the upstream answered 404 to the Responses API: {exc}. If {base_url} does not serve"
        " /responses (most OpenAI-compatible servers serve only /chat/completions), use"
        " /v1/chat/completions, which memsched serves with memory from any OpenAI-compatible upstream",
        404,
    )


@dataclass
class ResponsesCall:
    """The upstream request of one Responses turn and what the turn records of it."""

    turn: ProxyTurn
    body: dict[str, Any]
    messages: list[dict[str, Any]]  # the scheduled chat messages (to count usage when none is given)
    t0: float = field(default_factory=time.perf_counter)

    def account(self, response: dict[str, Any], *, stream: bool) -> None:
        text = output_text(response)
        calls = client_calls(response)
        got = self.turn.add_usage(
            _usage(response.get("usage")),
            self.messages,
            list(self.body.get("tools") or []),
            {"content": text, "tool_calls": calls},
        )
        self.turn.calls.append(
            {
                "round": 0,
                "api": "responses",
                "model": response.get("model"),
                "status": response.get("status"),
                "usage": got,
                "recall_calls": 0,
                "tool_calls": len(calls),
                "ms": round((time.perf_counter() - self.t0) * 1000.0, 3),
                **({"stream": True} if stream else {}),
            }
        )

    def translate(self, exc: LLMError) -> LLMError:
        if isinstance(exc, UpstreamStatusError) and exc.status == 404:
            return no_responses_api(exc, self.turn.upstream.base_url)
        return exc


async def run_blocking(call: ResponsesCall) -> dict[str, Any]:
    """The non-streaming turn: the upstream's response, recorded, handed back as it came."""
    turn = call.turn
    try:
        data = await turn.upstream.respond(call.body)
    except LLMError as exc:
        exc = call.translate(exc)
        await proxy._fail(turn, exc)
        raise exc from None
    call.account(data, stream=False)
    calls = client_calls(data)
    outcome = "tool_calls" if calls else "ok"
    await asyncio.to_thread(turn.finish, output_text(data), outcome=outcome, client_calls=calls)
    return data


# -- streaming ------------------------------------------------------------------------------------


@dataclass
class ResponsesStreamState:
    """What the relayed stream has carried so far."""

    deltas: list[str] = field(default_factory=list)
    final: str | None = None  # the text of response.completed / response.incomplete
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    failed: str | None = None  # the upstream's own `response.failed` / `error` event, relayed
    finished: bool = False

    @property
    def reply(self) -> str:
        return self.final if self.final is not None else "".join(self.deltas)


class ResponsesRelay(RelayResponse):
    """The chat relay's recording and hang-up handling, with the Responses API's events: no `[DONE]`,
    and a failure mid-stream is an `error` event (unless the upstream already sent its own)."""

    done = b""

    def error_event(self, error: LLMError) -> bytes:
        state = self.state
        if isinstance(state, ResponsesStreamState) and state.failed is not None:
            return b""
        data = {
            "type": "error",
            "code": "upstream_error",
            "message": f"the upstream failed mid-stream: {error}",
            "param": None,
            "sequence_number": None,
        }
        return f"event: error\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _synthesized(whole: dict[str, Any]) -> list[bytes]:
    """The events of a whole response (an upstream that ignored `stream`), as OpenAI streams them."""

    def event(kind: str, seq: int, **data: Any) -> bytes:
        payload = json.dumps({"type": kind, "sequence_number": seq, **data}, ensure_ascii=False)
        return f"event: {kind}\ndata: {payload}\n\n".encode()

    out = [event("response.created", 0, response={**whole, "status": "in_progress", "output": []})]
    for index, item in enumerate(whole.get("output") or []):
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for k, part in enumerate(item.get("content") or []):
            if isinstance(part, dict) and part.get("type") == "output_text":
                out.append(
                    event(
                        "response.output_text.delta",
                        len(out),
                        item_id=item.get("id"),
                        output_index=index,
                        content_index=k,
                        delta=str(part.get("text") or ""),
                    )
                )
    out.append(event("response.completed", len(out), response=whole))
    return out


async def _events(call: ResponsesCall, state: ResponsesStreamState) -> AsyncIterator[bytes]:
    """The upstream's events as sent, tracking the reply; raises LLMError if the stream ends unfinished."""
    turn = call.turn
    url = f"{turn.upstream.base_url}/responses"
    stream = turn.upstream.events("responses", call.body)
    async with contextlib.aclosing(stream) as events:
        async for ev in events:
            if ev.whole and ev.data is not None:
                if not isinstance(ev.data.get("output"), list):
                    raise LLMError(f"invalid response from {url}: no output list")
                for raw in _synthesized(ev.data):
                    yield raw
                _completed(call, state, ev.data)
                return
            _track(call, state, ev)
            yield ev.raw
    if not state.finished:
        raise LLMError(f"the stream from {url} ended before response.completed")


def _track(call: ResponsesCall, state: ResponsesStreamState, ev: SSEvent) -> None:
    data = ev.data or {}
    kind = data.get("type") or ev.name
    if kind == "response.output_text.delta":
        state.deltas.append(str(data.get("delta") or ""))
    elif kind in ("response.completed", "response.incomplete") and isinstance(data.get("response"), dict):
        _completed(call, state, data["response"])
    elif kind in ("response.failed", "error"):
        error = (data.get("response") or {}).get("error") if kind == "response.failed" else data
        state.failed = json.dumps(error, ensure_ascii=False)[:300] if error else kind
        state.finished = True


def _completed(call: ResponsesCall, state: ResponsesStreamState, response: dict[str, Any]) -> None:
    state.final = output_text(response)
    state.client_calls = client_calls(response)
    state.finished = True
    call.account(response, stream=True)


class _Failed(LLMError):
    """The upstream reported its own failure in the stream (relayed to the client as it was)."""


async def _checked(events: AsyncIterator[bytes], state: ResponsesStreamState) -> AsyncIterator[bytes]:
    # aclosing: when the client hangs up this generator is closed, and with it at once the upstream's.
    async with contextlib.aclosing(events) as inner:  # type: ignore[type-var]
        async for raw in inner:
            yield raw
            if state.failed is not None:
                raise _Failed(f"the upstream's stream reported a failure: {state.failed}")


async def start(
    call: ResponsesCall, headers: dict[str, str], on_done: Callable[[], None] | None = None
) -> RelayResponse:
    """Call the upstream and wait for its first event; then relay the rest (or raise: a clean 4xx/5xx)."""
    turn = call.turn
    state = ResponsesStreamState()
    events = _checked(_events(call, state), state)
    try:
        first = await events.__anext__()
    except StopAsyncIteration:
        first = b""
    except LLMError as exc:
        exc = call.translate(exc)
        await asyncio.to_thread(turn.finish, "", outcome="error", error=f"{type(exc).__name__}: {exc}")
        raise exc from None
    return ResponsesRelay(turn, first, events, state, headers, on_done)
