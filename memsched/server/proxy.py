"""One proxied chat completion: what the client sent, the scheduled context, the upstream calls (with the
`recall` tool loop), and what is recorded at the end.

The turn goes through the Scheduler's prepare/record split: `aprepare` records the user's message and
returns the scheduled context; the upstream is called (and streamed) outside the session's lock; the
reply is recorded with `record`, and the turn's trace is completed with every upstream call.

* Fields memsched does not own (temperature, top_p, max_tokens, stop, seed, tools, tool_choice,
  response_format, logit_bias, n, ...) are forwarded as the client sent them. memsched owns `messages`
  (replaced by the scheduled context), `user` and `metadata` (whose memory, which session), `model`
  (the configured upstream model) and `stream`.
* Tools: the upstream's tool calls to the client's tools go back to the client unchanged. The user's
  turn is then marked `awaiting_tools`; the client's follow-up (the same user message, then the
  assistant's tool calls and the tool results) replaces that pending turn instead of adding one, and
  its trailing exchange is forwarded verbatim after the scheduled context. The final reply is stored
  with the tool exchange summarised in it, so the turn is recorded once.
* `recall(page_id)` (paging modes `tools` and `both`): offered next to the client's tools when the
  context carries a bookmark index. memsched answers the model's recall calls itself — the page within
  `recall_max_tokens`, an unknown page as an error the model can read — and calls the upstream again,
  at most `recall_rounds` times; the client never sees these rounds. Every call is in the trace and
  counts in the pages' LFU statistics.
* `usage` is the upstream's, summed over the rounds; where the upstream gives none it is counted with
  memsched's tokenizer (the trace says which).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from starlette.responses import JSONResponse

from memsched.commands import UNRECORDED_KINDS
from memsched.errors import InputError, LLMError
from memsched.memory import Memory
from memsched.model import storable
from memsched.scheduler import TurnResult
from memsched.server.service import Service
from memsched.server.upstream import Upstream
from memsched.server.validate import READABLE_PARTS
from memsched.sessions import SessionHold
from memsched.tools import INDEX_HEADER, recall_tool, resolve_recall
from memsched.vision import Image

log = logging.getLogger("memsched.server.proxy")

OWNED = frozenset({"messages", "user", "metadata", "stream", "model", "stream_options"})
RECALL = "recall"
TOOL_SUMMARY_CHARS = 200  # of each tool result, in the stored reply's summary line
TOOL_META_CHARS = 2000  # of each tool result, in the stored turn's meta


class UpstreamJSONResponse(JSONResponse):
    """The upstream's completion as it came: NaN or Infinity kept (as in logprobs of some servers;
    JSON readers such as Python's take them), an unpaired UTF-16 surrogate sent escaped ("\\ud83d")
    where Starlette's JSONResponse would fail to encode it."""

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def text_of(content: Any) -> str:
    """The text of an OpenAI message content (a string, or a list of parts: text parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                parts.append(str(part.get("text", "")))
        # Image parts are not text: the scheduler describes them (`memsched.vision`).
        return "\n".join(p for p in parts if p)
    raise InputError("message content must be a string or a list of content parts")


def unread_parts(content: Any) -> list[dict[str, Any]]:
    """The parts of a message's content memsched does not read (not text or an image: `input_audio`,
    `file`, the Responses API's `input_file`), which go to the upstream with the message as sent."""
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") not in READABLE_PARTS]


def prefill_of(trailing: list[dict[str, Any]]) -> str:
    """The text of a trailing assistant message without tool calls — a prefill that steers the start
    of the reply — or "" when the request does not end with one."""
    last = trailing[-1] if trailing else {}
    if last.get("role") != "assistant" or last.get("tool_calls") or last.get("function_call"):
        return ""
    if last.get("type", "message") != "message":
        return ""
    content = last.get("content")
    if isinstance(content, list):  # chat `text` parts, or the Responses API's output_text/input_text
        return "".join(
            str(p.get("text") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "output_text", "input_text")
        )
    return content if isinstance(content, str) else ""


def answer_recall(
    memory: Memory, user_id: str, call: dict[str, Any], max_tokens: int
) -> tuple[str, dict[str, Any]]:
    """(the tool message content, a trace entry) for one `recall` call: the page's turns cut to
    `max_tokens` (0: no limit), or an `error: ...` the model can read. Counts the page's use (LFU)."""
    function = call.get("function") or {}
    entry: dict[str, Any] = {"call_id": call.get("id"), "arguments": function.get("arguments")}
    try:
        args = function.get("arguments") or "{}"
        parsed = json.loads(args) if isinstance(args, str) else dict(args)
        if not isinstance(parsed, dict):
            raise InputError('recall takes {"page_id": <number>}')
        page = parsed.get("page_id")
        if isinstance(page, str):
            page = page.strip().lstrip("pP")
        if page is None or page == "":
            raise InputError('recall needs a page_id, e.g. {"page_id": 12} for [p12 ...]')
        entry["page_id"] = int(page)
        text = resolve_recall(memory, user_id, int(page))
        counter = memory.counter
        tokens = counter.count(text)
        if max_tokens > 0 and tokens > max_tokens:
            text = counter.truncate(text, max_tokens) + "\n[... page cut to fit the recall budget]"
            entry["truncated"] = True
            tokens = max_tokens
        entry.update(ok=True, tokens=tokens)
        return text, entry
    except (InputError, ValueError, TypeError) as exc:
        entry.update(ok=False, error=str(exc))
        return f"error: {exc}", entry


@dataclass
class ProxyTurn:
    """One request to /v1/chat/completions, from parsing to recording."""

    svc: Service
    upstream: Upstream
    user: str
    session_id: str
    message: str
    persona: str | None
    now: datetime | None
    timezone: str | None
    forward: dict[str, Any]  # the client's fields that go to the upstream as they are
    user_message: dict[str, Any]  # the client's last user message (content parts kept)
    trailing: list[dict[str, Any]]  # the tool exchange after it, forwarded verbatim
    stream: bool
    include_usage: bool
    prepared: TurnResult | None = None
    # The session, held from preparing the context until the reply is recorded (the route takes and
    # releases it), so no other turn of the session, in any process, comes in between.
    hold: SessionHold | None = None
    images: list[Image] = field(default_factory=list)  # the image parts of the last user message
    # The client's earlier user/assistant messages, as (role, text): memsched shows those it never
    # recorded (a conversation it joined midway) and ignores the rest (`memsched.client_history`).
    history: list[tuple[str, str]] = field(default_factory=list)
    offer_recall: bool = False
    # The calls the pending turn waits for (`{"id", "name", "arguments"}`, kept in its meta): a
    # Responses follow-up chained by previous_response_id sends only their outputs, not the calls.
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    # The text of a trailing assistant message (forwarded last, in `trailing`): the upstream continues
    # it, so the reply recorded starts with it. No recall tool is offered with one.
    prefill: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)  # one entry per upstream call
    recalls: list[dict[str, Any]] = field(default_factory=list)  # one entry per recall call
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    usage_counted: bool = False
    started: float = field(default_factory=time.perf_counter)

    # -- the request ------------------------------------------------------------------------------

    @property
    def client_tools(self) -> list[dict[str, Any]]:
        return list(self.forward.get("tools") or [])

    def tools_for(self, recall: bool) -> list[dict[str, Any]]:
        return [*self.client_tools, recall_tool()] if recall else self.client_tools

    def body(self, messages: list[dict[str, Any]], *, recall: bool) -> dict[str, Any]:
        """The upstream request: the client's own fields, the scheduled messages, the tools."""
        body = {
            k: v for k, v in self.forward.items() if k not in ("tools", "tool_choice", "parallel_tool_calls")
        }
        body["model"] = self.upstream.model
        body["messages"] = messages
        tools = self.tools_for(recall)
        if tools:
            body["tools"] = tools
            for key in ("tool_choice", "parallel_tool_calls"):
                if key in self.forward:
                    body[key] = self.forward[key]
        if self.stream:
            body["stream"] = True
            if "stream_options" in self.forward:
                body["stream_options"] = self.forward["stream_options"]
        return body

    # -- prepare ----------------------------------------------------------------------------------

    async def prepare(self) -> list[dict[str, Any]]:
        """Record the user's message, build the scheduled context; returns the first upstream messages.

        Without a `hold` yet, the session is taken in the same worker-thread trip (`aprepare_held`)
        and stays held (`self.hold`) until the reply is recorded."""
        sched, args = self.svc.scheduler, (self.user, self.session_id, self.message)
        turn: dict[str, Any] = {
            "now": self.now,
            "timezone": self.timezone,
            "system_prompt": self.persona,
            "images": self.images,
            "history": self.history,
        }
        if self.hold is None:
            self.hold, self.prepared = await sched.aprepare_held(*args, **turn)
        else:
            self.prepared = await sched.aprepare(*args, **turn, hold=self.hold)
        messages = [dict(m) for m in self.prepared.messages]
        if (
            self.images
            and self.svc.config.upstream_vision
            and messages
            and messages[-1].get("role") == "user"
        ):
            # A vision upstream gets the images themselves beside their captions.
            text = {"type": "text", "text": str(messages[-1].get("content") or "")}
            messages[-1] = {**messages[-1], "content": [text, *(i.part() for i in self.images)]}
        unread = unread_parts(self.user_message.get("content"))
        if unread and messages and messages[-1].get("role") == "user":
            # Audio, a file: memsched cannot read them, but the model may; they go with the message.
            content = messages[-1].get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
            messages[-1] = {**messages[-1], "content": [*parts, *unread]}
        paging = self.prepared.trace.get("paging_tools") or {}
        has_index = bool(paging.get("index_pages")) or any(
            INDEX_HEADER in str(m.get("content") or "") for m in messages if m.get("role") == "system"
        )
        clashes = any((t.get("function") or {}).get("name") == RECALL for t in self.client_tools)
        n = self.forward.get("n")
        self.offer_recall = (
            self.svc.config.paging_mode in ("tools", "both")
            and has_index
            and not clashes
            and self.forward.get("tool_choice") != "none"
            # With n > 1 the choices would need a recall loop each: they get the index only.
            and not (isinstance(n, int) and n > 1)
            # A prefill is the start of the reply: a recall round would come between it and the rest.
            and not self.prefill
        )
        return [*messages, *self.trailing]

    # -- usage ------------------------------------------------------------------------------------

    def add_usage(
        self,
        usage: dict[str, Any] | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        out: dict[str, Any],
    ) -> dict[str, Any]:
        """Add one call's usage (the upstream's, or counted when it gave none); returns what was added."""
        if usage and isinstance(usage.get("prompt_tokens"), int):
            got = {
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
            }
        else:
            counter = self.svc.memory.counter
            prompt = counter.messages_tokens(messages)
            if tools:
                prompt += counter.count(json.dumps(tools, ensure_ascii=False))
            completion = counter.count(str(out.get("content") or ""))
            for call in out.get("tool_calls") or []:
                fn = call.get("function") or {}
                completion += counter.count(str(fn.get("name", ""))) + counter.count(
                    str(fn.get("arguments", ""))
                )
            got = {"prompt_tokens": prompt, "completion_tokens": completion}
            self.usage_counted = True
        for k, v in got.items():
            self.usage[k] += v
        return got

    def usage_out(self) -> dict[str, int]:
        p, c = self.usage["prompt_tokens"], self.usage["completion_tokens"]
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    # -- recall -----------------------------------------------------------------------------------

    def split_calls(self, calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(recall calls memsched answers, the client's calls)."""
        if not self.offer_recall:
            return [], list(calls)
        mine = [c for c in calls if (c.get("function") or {}).get("name") == RECALL]
        return mine, [c for c in calls if (c.get("function") or {}).get("name") != RECALL]

    def _resolve(self, call: dict[str, Any], round_no: int) -> dict[str, Any]:
        content, entry = answer_recall(self.svc.memory, self.user, call, self.svc.config.recall_max_tokens)
        self.recalls.append({"round": round_no, **entry})
        return {"role": "tool", "tool_call_id": call.get("id", ""), "content": content}

    async def answer_recalls(self, calls: list[dict[str, Any]], round_no: int) -> list[dict[str, Any]]:
        """The tool messages answering the model's recall calls (the pages, or errors it can read)."""
        return await asyncio.to_thread(lambda: [self._resolve(c, round_no) for c in calls])

    # -- recording --------------------------------------------------------------------------------

    def _tool_exchange(self) -> list[dict[str, Any]]:
        """The client's tool calls and their results from the trailing exchange, in order."""
        # Chat: assistant `tool_calls` and `tool` messages; the Responses API: `function_call` and
        # `function_call_output` items (the calls may be upstream state, by previous_response_id).
        results: dict[Any, str] = {}
        calls: list[tuple[Any, Any, Any]] = []
        for m in self.trailing:
            if m.get("role") == "tool":
                results[m.get("tool_call_id")] = text_of(m.get("content"))
            elif m.get("type") == "function_call_output":
                output = m.get("output")
                results[m.get("call_id")] = output if isinstance(output, str) else json.dumps(output)
            elif m.get("type") == "function_call":
                calls.append((m.get("call_id"), m.get("name"), m.get("arguments")))
            for call in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
                fn = call.get("function") or {}
                calls.append((call.get("id"), fn.get("name"), fn.get("arguments")))
        known = {c[0] for c in calls}
        asked = {c.get("id"): c for c in self.pending_calls}
        calls += [
            (call_id, asked.get(call_id, {}).get("name"), asked.get(call_id, {}).get("arguments"))
            for call_id in results
            if call_id not in known
        ]
        return [
            {
                "id": call_id,
                "name": name,
                "arguments": arguments,
                "result": results.get(call_id, "")[:TOOL_META_CHARS],
            }
            for call_id, name, arguments in calls
        ]

    def finish(
        self,
        reply: str,
        *,
        outcome: str,
        client_calls: list[dict[str, Any]] | None = None,
        error: str | None = None,
        partial: str | None = None,
    ) -> None:
        """Record the reply and complete the trace (runs in a worker thread).

        `outcome`: "ok" (a reply), "tool_calls" (the client's tools were called: the turn waits for the
        client's follow-up), "error" (the upstream failed), "partial" (the stream was cut off: `partial`
        says why; what had been sent is recorded, marked as such).
        """
        assert self.prepared is not None
        svc = self.svc
        store = svc.memory.store
        trace = self.prepared.trace
        turn_ids = list(trace.get("turn_ids") or [])
        user_turn = turn_ids[0] if turn_ids else None
        applied = [c.get("kind") for c in trace.get("commands") or []]
        if any(kind in UNRECORDED_KINDS for kind in applied):
            # "forget everything about my ex" / "delete everything you know about me": the exchange
            # names what was forgotten, so neither the reply nor the trace is stored.
            svc.scheduler.metrics.turns.labels(entry="proxy", outcome=outcome).inc()
            return
        if user_turn is not None and not store.get_turns(self.user, [user_turn]):
            # The message was deleted while the upstream answered (DELETE of the user, the session or
            # the turn): its reply and trace would bring the deleted exchange back. Neither is stored.
            log.info(
                "the message of trace %s was deleted during its reply: nothing recorded", trace.get("id")
            )
            svc.scheduler.metrics.turns.labels(entry="proxy", outcome=outcome).inc()
            return
        trace["llm"] = {
            "model": next(
                (c.get("model") for c in reversed(self.calls) if c.get("model")), self.upstream.model
            ),
            "usage": {**self.usage_out(), "counted": self.usage_counted},
            "calls": self.calls,
            "recall": self.recalls,
            "rounds": len(self.calls),
            "stream": self.stream,
            "outcome": outcome,
            "client_tool_calls": [c.get("function", {}).get("name") for c in client_calls or []],
            "ms": round((time.perf_counter() - self.started) * 1000.0, 3),
        }
        if partial:
            trace["llm"]["partial"] = partial
        if error:
            trace["error"] = error
        stored = False
        if outcome == "tool_calls" or (outcome == "error" and not reply.strip()):
            if user_turn is not None:
                mark = "awaiting_tools" if outcome == "tool_calls" else "reply_failed"
                found = store.get_turns(self.user, [user_turn])
                meta_now = dict(found[0].meta) if found else {}  # keep what is there (e.g. its dates)
                meta_now.update({mark: True, "applied": applied})
                if outcome == "tool_calls":  # what the follow-up's tool results answer
                    meta_now["tool_calls"] = [
                        {
                            "id": c.get("id"),
                            "name": (c.get("function") or {}).get("name"),
                            "arguments": str((c.get("function") or {}).get("arguments") or "")[
                                :TOOL_META_CHARS
                            ],
                        }
                        for c in client_calls or []
                    ]
                with store.transaction() as tx:
                    store.turn_meta_update(tx, self.user, user_turn, meta_now)
        else:
            exchange = self._tool_exchange()
            content = storable(reply)  # the upstream's text: a NUL in it is no reason to lose the reply
            meta: dict[str, Any] = {}
            if self.prefill and not reply.startswith(self.prefill):
                # The upstream continued the client's prefill: what the user sees is both.
                content = self.prefill + reply
                meta["prefill_chars"] = len(self.prefill)
            if exchange:
                meta["tool_exchange"] = exchange
                summary = "; ".join(
                    f"{x['name'] or 'tool'}({x['arguments'] or ''}) → {x['result'][:TOOL_SUMMARY_CHARS]}"
                    for x in exchange
                )
                content = f"{content}\n\n[tools: {summary}]" if content.strip() else f"[tools: {summary}]"
            if partial:
                meta.update(partial=True, partial_reason=partial)
            if self.recalls:
                meta["recalled_pages"] = [r["page_id"] for r in self.recalls if r.get("ok")]
            if content.strip():
                svc.scheduler.record(
                    self.user,
                    self.session_id,
                    "assistant",
                    content,
                    now=self.now,
                    timezone=self.timezone,
                    meta=meta,
                    index_after=True,  # the client gets the reply while its vectors are computed
                    hold=self.hold,  # released by the route, or after the vectors with index_after
                    trace=trace,  # completed with the reply's turn and jobs, in the same transaction
                )
                stored = True
        if not stored:
            with store.transaction() as tx:
                store.trace_put(
                    tx,
                    str(trace["id"]),
                    self.user,
                    self.session_id,
                    created_at=datetime.fromisoformat(str(trace["at"])).timestamp(),
                    turn_ids=turn_ids,
                    data=trace,
                )
        svc.scheduler.metrics.turns.labels(entry="proxy", outcome=outcome).inc()


def mark_undelivered(turn: ProxyTurn) -> None:
    """The client hung up before its reply was sent (an SDK's timeout, which it retries with the same
    message): the reply is marked `undelivered` (and the message with the commands it applied), so
    that the retry replaces this exchange instead of adding a second (`Scheduler._take_failed_turn`)."""
    assert turn.prepared is not None
    ids = list(turn.prepared.trace.get("turn_ids") or [])
    if len(ids) != 2:  # no reply was recorded (a forget command's, or none)
        return
    store = turn.svc.memory.store
    found = {t.id: t for t in store.get_turns(turn.user, ids)}
    message, reply = found.get(ids[0]), found.get(ids[1])
    if message is None or reply is None or reply.role != "assistant":
        return
    applied = [c.get("kind") for c in turn.prepared.trace.get("commands") or []]
    with store.transaction() as tx:
        store.turn_meta_update(tx, turn.user, ids[0], {**message.meta, "applied": applied})
        store.turn_meta_update(tx, turn.user, ids[1], {**reply.meta, "undelivered": True})


async def complete(turn: ProxyTurn, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-streaming turn: upstream calls (answering recall calls in between), then the client's reply."""
    rounds = 0
    recall = turn.offer_recall
    while True:
        body = turn.body(messages, recall=recall)
        t0 = time.perf_counter()
        data = await turn.upstream.complete(body)
        choice = data["choices"][0] if isinstance(data["choices"][0], dict) else {}
        message = dict(choice.get("message") or {})
        calls = list(message.get("tool_calls") or [])
        mine, theirs = turn.split_calls(calls) if recall else ([], calls)
        got = turn.add_usage(data.get("usage"), messages, body.get("tools") or [], message)
        turn.calls.append(
            {
                "round": rounds,
                "model": data.get("model"),
                "finish_reason": choice.get("finish_reason"),
                "usage": got,
                "recall_calls": len(mine),
                "tool_calls": len(theirs),
                "ms": round((time.perf_counter() - t0) * 1000.0, 3),
            }
        )
        if mine and not theirs and rounds < turn.svc.config.recall_rounds:
            rounds += 1
            answers = await turn.answer_recalls(mine, rounds)
            messages = [
                *messages,
                {"role": "assistant", "content": message.get("content"), "tool_calls": mine},
                *answers,
            ]
            recall = rounds < turn.svc.config.recall_rounds  # the last call gets no recall tool
            continue
        if mine:  # the model mixed recall with the client's tools, or ran out of rounds: not the client's
            if theirs:
                message["tool_calls"] = theirs
            else:
                message.pop("tool_calls", None)
                choice["finish_reason"] = "stop"
        choice["message"] = message
        data["choices"][0] = choice
        data["usage"] = turn.usage_out()
        return data


async def _fail(turn: ProxyTurn, exc: LLMError, reply: str = "", partial: str | None = None) -> None:
    outcome = "partial" if partial else "error"
    await asyncio.to_thread(
        turn.finish, reply, outcome=outcome, error=f"{type(exc).__name__}: {exc}", partial=partial
    )


async def run_blocking(turn: ProxyTurn, messages: list[dict[str, Any]]) -> dict[str, Any]:
    try:
        data = await complete(turn, messages)
    except LLMError as exc:
        await _fail(turn, exc)
        raise
    message = data["choices"][0].get("message") or {}
    calls = list(message.get("tool_calls") or [])
    outcome = "tool_calls" if calls else "ok"
    await asyncio.to_thread(turn.finish, text_of(message.get("content")), outcome=outcome, client_calls=calls)
    return data
