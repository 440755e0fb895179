"""Streaming: the upstream is called with `stream: true` and its chunks reach the client as they arrive.

`rounds()` yields the chunks to send: content deltas at once; tool-call deltas once their name shows
whose tool it is (the client's are relayed, re-indexed; `recall` calls are held back and answered by
memsched, and the upstream is streamed again — the client sees one completion). `RelayResponse`
sends them as server-sent events and records the turn at the end: the whole reply, before
`data: [DONE]`; or, when the client hangs up (or the upstream breaks off) mid-stream, what had been
sent so far, marked as partial. The first chunk is awaited before the response starts, so an upstream
that fails at once is still a clean 502.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from memsched.errors import LLMError
from memsched.server import proxy
from memsched.server.proxy import ProxyTurn

log = logging.getLogger("memsched.server.relay")


def sse(data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    try:
        return f"data: {payload}\n\n".encode()
    except UnicodeEncodeError:  # an unpaired surrogate from the upstream: sent escaped, as it came
        return f"data: {json.dumps(data)}\n\n".encode()


@dataclass
class _Call:
    id: str | None
    name: str
    arguments: str = ""
    mine: bool = False  # a recall call memsched answers
    index: int = 0  # the index the client sees


@dataclass
class StreamState:
    """What has been streamed to the client so far."""

    content: list[str] = field(default_factory=list)
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    completion_id: str | None = None
    model: str | None = None
    created: int | None = None
    role_sent: bool = False

    @property
    def reply(self) -> str:
        return "".join(self.content)


async def rounds(turn: ProxyTurn, messages: list[dict[str, Any]], state: StreamState) -> AsyncIterator[bytes]:
    """The SSE events of the whole turn (without the final `[DONE]`), recall rounds included."""
    round_no = 0
    recall = turn.offer_recall
    while True:
        body = turn.body(messages, recall=recall)
        t0 = time.perf_counter()
        calls: dict[int, _Call] = {}
        content: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] | None = None
        last_chunk: dict[str, Any] = {}
        # aclosing: however this generator ends, the upstream connection is closed at once.
        async with contextlib.aclosing(turn.upstream.stream(body)) as chunks:
            async for chunk in chunks:
                if chunk.get("usage"):
                    usage = chunk["usage"]
                state.completion_id = state.completion_id or chunk.get("id")
                state.model = state.model or chunk.get("model")
                state.created = state.created or chunk.get("created")
                choices = [c for c in chunk.get("choices") or [] if isinstance(c, dict)]
                if not choices:
                    continue  # the usage chunk: summed and sent at the end
                # With `n` > 1 the other choices (index > 0) are relayed as they come, finish included;
                # choice 0 is the reply memsched records (and the only one in recall rounds).
                others = [dict(c) for c in choices if c.get("index", 0) not in (0, None)]
                first = next((c for c in choices if c.get("index", 0) in (0, None)), None)
                if first is None:
                    if others:
                        yield sse(_rewrite(chunk, None, state, others))
                    continue
                last_chunk = chunk
                choice = dict(first)
                delta = dict(choice.get("delta") or {})
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
                if delta.get("content"):
                    content.append(delta["content"])
                    state.content.append(delta["content"])
                relayed: list[dict[str, Any]] = []
                for part in delta.pop("tool_calls", None) or []:
                    idx = int(part.get("index", 0))
                    fn = part.get("function") or {}
                    call = calls.get(idx)
                    if call is None:
                        name = str(fn.get("name") or "")
                        call = calls[idx] = _Call(id=part.get("id"), name=name)
                        call.mine = recall and name == "recall"
                        if not call.mine:
                            call.index = len(state.client_calls)
                            state.client_calls.append(
                                {
                                    "id": part.get("id"),
                                    "type": "function",
                                    "function": {"name": name, "arguments": ""},
                                }
                            )
                    call.arguments += str(fn.get("arguments") or "")
                    if not call.mine:
                        state.client_calls[call.index]["function"]["arguments"] += str(
                            fn.get("arguments") or ""
                        )
                        relayed.append({**part, "index": call.index})
                if relayed:
                    delta["tool_calls"] = relayed
                if "role" in delta:
                    if state.role_sent:
                        del delta["role"]
                    state.role_sent = True
                choice["delta"] = delta
                choice["finish_reason"] = None  # sent once, at the very end
                if delta or others:
                    yield sse(_rewrite(chunk, choice if delta else None, state, others))
        mine = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls.values()
            if c.mine
        ]
        theirs = [c for c in calls.values() if not c.mine]
        out = {
            "content": "".join(content),
            "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls.values()],
        }
        got = turn.add_usage(usage, messages, body.get("tools") or [], out)
        turn.calls.append(
            {
                "round": round_no,
                "model": state.model,
                "finish_reason": finish,
                "usage": got,
                "recall_calls": len(mine),
                "tool_calls": len(theirs),
                "ms": round((time.perf_counter() - t0) * 1000.0, 3),
                "stream": True,
            }
        )
        if mine and not theirs and round_no < turn.svc.config.recall_rounds:
            round_no += 1
            answers = await turn.answer_recalls(mine, round_no)
            messages = [
                *messages,
                {"role": "assistant", "content": out["content"] or None, "tool_calls": mine},
                *answers,
            ]
            recall = round_no < turn.svc.config.recall_rounds
            continue
        reason = (
            "tool_calls" if state.client_calls else (finish if finish and finish != "tool_calls" else "stop")
        )
        end = {"index": 0, "delta": {}, "finish_reason": reason}
        yield sse(_rewrite(last_chunk, end, state))
        if turn.include_usage:
            usage_chunk = _rewrite(last_chunk, None, state)
            usage_chunk["choices"] = []
            usage_chunk["usage"] = turn.usage_out()
            yield sse(usage_chunk)
        return


def _rewrite(
    chunk: dict[str, Any],
    choice: dict[str, Any] | None,
    state: StreamState,
    others: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The upstream chunk as the client sees it: one id across the rounds, usage sent once at the end;
    `others` are the choices of index > 0 (`n` > 1), relayed unchanged."""
    out = {k: v for k, v in chunk.items() if k != "usage"}
    out["id"] = state.completion_id or out.get("id")
    out.setdefault("object", "chat.completion.chunk")
    if state.model:
        out["model"] = state.model
    if state.created:
        out["created"] = state.created
    out["choices"] = [*([choice] if choice is not None else []), *(others or [])]
    return out


class Relayed(Protocol):
    """What a relayed stream has carried: the reply's text and the client's tool calls."""

    @property
    def reply(self) -> str: ...

    client_calls: list[dict[str, Any]]


class RelayResponse(Response):
    """Sends the turn's SSE events as they come; records the turn however the stream ends.

    `done` is sent after the last event (chat's `data: [DONE]`); `error_event` tells the client the
    upstream failed mid-stream (the Responses API relay overrides both)."""

    media_type = "text/event-stream"
    done = b"data: [DONE]\n\n"

    def error_event(self, error: LLMError) -> bytes:
        message = {
            "message": f"the upstream failed mid-stream: {error}",
            "type": "upstream_error",
            "code": None,
        }
        return sse({"error": message})

    def __init__(
        self,
        turn: ProxyTurn,
        first: bytes,
        events: AsyncIterator[bytes],
        state: Relayed,
        headers: dict[str, str],
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.on_done = on_done
        self.turn = turn
        self.first = first
        # The client hung up before the response started (an SDK's timeout, which it retries with
        # the same message): set by the route; the reply recorded is marked undelivered.
        self.undelivered = False
        self.events = events
        self.state = state
        self.status_code = 200
        self.background = None
        self.init_headers({**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _pump(self, send: Send) -> None:
        await send({"type": "http.response.body", "body": self.first, "more_body": True})
        async for data in self.events:
            await send({"type": "http.response.body", "body": data, "more_body": True})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._relay(receive, send)
        finally:
            if self.on_done is not None:
                self.on_done()

    async def _relay(self, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        async def disconnected() -> None:
            if self.undelivered:  # the route saw the client leave (and took its disconnect message)
                return
            while (await receive())["type"] != "http.disconnect":
                pass

        pump = asyncio.ensure_future(self._pump(send))
        listener = asyncio.ensure_future(disconnected())
        partial: str | None = None
        error: LLMError | None = None
        try:
            await asyncio.wait({pump, listener}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():
                partial = "client_disconnected"
                pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        except LLMError as exc:
            error, partial = exc, "upstream_error"
        except OSError:  # the client's connection broke while sending
            partial = "client_disconnected"
        finally:
            listener.cancel()
            with contextlib.suppress(BaseException):
                await self.events.aclose()  # type: ignore[attr-defined]
        if error is not None:
            log.warning(
                "the upstream stream failed for trace %s: %s",
                self.turn.prepared and self.turn.prepared.trace_id,
                error,
            )
            event = self.error_event(error)
            with contextlib.suppress(OSError):
                if event:
                    await send({"type": "http.response.body", "body": event, "more_body": True})
        outcome = "partial" if partial else ("tool_calls" if self.state.client_calls else "ok")
        if (error is not None or partial) and not self.state.reply.strip() and not self.state.client_calls:
            # Nothing of a reply (the upstream failed, or the client left first: an SDK that timed out,
            # which sends the message again): the user's message is kept, marked reply_failed.
            outcome = "error"
        await asyncio.to_thread(
            self.turn.finish,
            self.state.reply,
            outcome=outcome,
            client_calls=self.state.client_calls,
            error=f"{type(error).__name__}: {error}" if error else None,
            partial=partial,
        )
        if self.undelivered:
            await asyncio.to_thread(proxy.mark_undelivered, self.turn)
        with contextlib.suppress(OSError):
            if partial != "client_disconnected" and self.done:
                await send({"type": "http.response.body", "body": self.done, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def start(
    turn: ProxyTurn,
    messages: list[dict[str, Any]],
    headers: dict[str, str],
    on_done: Callable[[], None] | None = None,
) -> RelayResponse:
    """Call the upstream and wait for the first event; then stream the rest (or raise LLMError → 502)."""
    state = StreamState()
    events = rounds(turn, messages, state)
    try:
        first = await events.__anext__()
    except StopAsyncIteration:
        first = b""
    except LLMError as exc:
        await asyncio.to_thread(turn.finish, "", outcome="error", error=f"{type(exc).__name__}: {exc}")
        raise
    return RelayResponse(turn, first, events, state, headers, on_done)
