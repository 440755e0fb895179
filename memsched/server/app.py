"""The HTTP service: an OpenAI-compatible proxy plus the scheduler's own endpoints.

`create_app()` builds a Starlette app around one `Memory` and one `Scheduler`. Chat apps point
their OpenAI SDK at `/v1`; memsched owns the history, so it takes the client's system message as the
persona and the last user message as the new turn, and replaces the rest with the scheduled context.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, cast

from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from memsched import __version__
from memsched.config import Config
from memsched.errors import (
    BudgetError,
    ConfigError,
    InputError,
    LLMError,
    MemschedError,
    UnknownUserError,
)
from memsched.importers import parse_timestamp
from memsched.memory import Memory
from memsched.model import Role

log = logging.getLogger("memsched.server")
TRACE_HEADER = "X-Memsched-Trace-Id"


class ContextRequest(BaseModel):
    user: str = Field(min_length=1)
    message: str
    session_id: str | None = None
    budget: int | None = Field(default=None, ge=1)
    timestamp: str | None = None
    timezone: str | None = None
    record: bool = False


class TurnRequest(BaseModel):
    user: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    role: str = "assistant"
    content: str
    timestamp: str | None = None


class ChatRequest(BaseModel):
    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    user: str | None = None
    stream: bool = False
    metadata: dict[str, Any] | None = None


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def _status_of(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, UnknownUserError):
        return 404, "not_found"
    if isinstance(exc, BudgetError | InputError | ValidationError):
        return 400, "invalid_request_error"
    if isinstance(exc, ConfigError):
        return 503, "not_configured"
    if isinstance(exc, LLMError):
        return 502, "upstream_error"
    return 500, "internal_error"


async def _body(request: Request, model: type[BaseModel]) -> Any:
    try:
        raw = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"request body is not valid JSON: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise InputError(f"{where}: {first['msg']}") from None


def _when(value: str | None) -> datetime | None:
    return parse_timestamp(value, "timestamp") if value else None


def _text_of(content: Any) -> str:
    """The text of an OpenAI message content (a string, or a list of parts: text parts are joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                parts.append("[image]")
        return "\n".join(p for p in parts if p)
    raise InputError("message content must be a string or a list of content parts")


class Service:
    """What the routes share: the memory, the scheduler, and the config."""

    def __init__(self, config: Config, memory: Memory | None = None, scheduler: Any = None) -> None:
        from memsched.llm.client import client_from_config
        from memsched.scheduler import Scheduler

        self.config = config
        self.memory = memory or Memory(config)
        self.scheduler = scheduler or Scheduler(
            self.memory, llm=client_from_config(config, "upstream"), workers=max(1, config.workers)
        )
        self.started = time.time()

    def warm_up(self) -> None:
        """Load the tokenizer and embedders now, so the first request does not pay for it."""
        self.memory.counter.count("warm up")
        self.memory.retriever.embed_query("warm up", only_weighted=False)

    def close(self) -> None:
        self.scheduler.close()
        self.memory.close()


def create_app(
    config: Config | None = None, *, service: Service | None = None, warm_up: bool = True
) -> Starlette:
    """The ASGI app. Pass a `Service` to share a memory/scheduler with tests or an embedding app."""
    cfg = config or Config.load()
    holder: dict[str, Service] = {}

    def svc() -> Service:
        return holder["service"]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        holder["service"] = service or Service(cfg)
        if warm_up:
            await asyncio.to_thread(holder["service"].warm_up)
        log.info("memsched %s serving %s", __version__, holder["service"].config.db_path)
        try:
            yield
        finally:
            if service is None:
                holder["service"].close()

    async def health(request: Request) -> Response:
        s = svc()
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "db": str(s.config.db_path),
                "embedders": list(s.memory.embedders),
                "upstream": s.scheduler.llm is not None,
                "uptime_s": round(time.time() - s.started, 1),
            }
        )

    async def context(request: Request) -> Response:
        body: ContextRequest = await _body(request, ContextRequest)
        s = svc()
        now = _when(body.timestamp)
        if body.record:
            if not body.session_id:
                raise InputError("record needs session_id: a recorded message belongs to a session")
            result = await s.scheduler.aprepare(
                body.user, body.session_id, body.message, now=now, timezone=body.timezone
            )
            messages, trace = result.messages, result.trace
        else:
            kwargs: dict[str, Any] = {"session_id": body.session_id, "now": now}
            if body.budget is not None:
                kwargs["budget"] = body.budget
            ctx = await asyncio.to_thread(s.memory.context, body.user, body.message, **kwargs)
            messages, trace = ctx.messages, ctx.trace
        return JSONResponse({"messages": messages, "trace": trace}, headers={TRACE_HEADER: str(trace["id"])})

    async def turns(request: Request) -> Response:
        body: TurnRequest = await _body(request, TurnRequest)
        s = svc()
        if body.role not in ("user", "assistant", "system"):
            raise InputError(f"role must be user, assistant or system, got {body.role!r}")
        role = cast(Role, body.role)
        rec = await asyncio.to_thread(
            s.scheduler.record, body.user, body.session_id, role, body.content, now=_when(body.timestamp)
        )
        return JSONResponse(
            {"turn_id": rec.turn.id, "jobs": rec.jobs, "commands": rec.commands}, status_code=201
        )

    async def chat(request: Request) -> Response:
        body: ChatRequest = await _body(request, ChatRequest)
        s = svc()
        if s.scheduler.llm is None:
            raise ConfigError("no upstream LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
        meta = body.metadata or {}
        user = body.user or meta.get("user")
        if not user:
            raise InputError("the `user` field names the user whose memory to use; it is required")
        last_user = next((m for m in reversed(body.messages) if m.get("role") == "user"), None)
        if last_user is None:
            raise InputError("messages must contain a user message")
        message = _text_of(last_user.get("content"))
        session_id = str(meta.get("session_id") or "default")
        # The client's system message is the persona; the rest of its history is replaced by ours.
        persona = "\n\n".join(_text_of(m.get("content")) for m in body.messages if m.get("role") == "system")
        result = await s.scheduler.aturn(
            str(user),
            session_id,
            message,
            now=_when(meta.get("timestamp")),
            timezone=meta.get("timezone"),
            system_prompt=persona or None,
        )
        created = int(time.time())
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        model = body.model or s.config.upstream_model or "memsched"
        headers = {TRACE_HEADER: result.trace_id}
        if body.stream:

            async def events() -> AsyncIterator[str]:
                # The reply is complete when the turn returns; it is sent as one delta, then DONE.
                for delta in ({"role": "assistant", "content": result.reply or ""}, {}):
                    chunk = {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None if delta else "stop"}],
                    }
                    yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream", headers=headers)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": result.reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": result.trace.get("usage", {}),
            },
            headers=headers,
        )

    async def trace(request: Request) -> Response:
        found = await asyncio.to_thread(svc().scheduler.trace, request.path_params["trace_id"])
        if found is None:
            return _error(404, f"no trace {request.path_params['trace_id']!r}", "not_found")
        return JSONResponse(found)

    async def search(request: Request) -> Response:
        s = svc()
        user = request.path_params["user"]
        query = request.query_params.get("q", "")
        if not query.strip():
            raise InputError("query parameter q is required")
        try:
            limit = int(request.query_params.get("limit", "10"))
        except ValueError:
            raise InputError("limit must be an integer") from None
        s.memory.require_user(user)
        hits = await asyncio.to_thread(s.memory.search, user, query, limit)
        return JSONResponse(
            [
                {
                    "turn_id": h.turn.id,
                    "session_id": h.turn.session_id,
                    "created_at": h.turn.created_at.isoformat(),
                    "role": h.turn.role,
                    "content": h.turn.content,
                    "score": h.score,
                    "scores": h.candidate.scores,
                }
                for h in hits
            ]
        )

    async def sessions(request: Request) -> Response:
        s = svc()
        user = request.path_params["user"]
        s.memory.require_user(user)
        return JSONResponse(
            [
                {"id": x.id, "created_at": x.created_at.isoformat(), "turns": x.turn_count}
                for x in s.memory.store.sessions(user)
            ]
        )

    async def jobs(request: Request) -> Response:
        s = svc()
        status = request.query_params.get("status")
        rows = await asyncio.to_thread(s.scheduler.queue.list, status, 100)
        return JSONResponse([_job_dict(j) for j in rows])

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(svc().scheduler.metrics.render(), media_type="text/plain; version=0.0.4")

    routes = [
        Route("/healthz", health),
        Route("/v1/context", context, methods=["POST"]),
        Route("/v1/turns", turns, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/traces/{trace_id}", trace),
        Route("/v1/users/{user}/search", search),
        Route("/v1/users/{user}/sessions", sessions),
        Route("/v1/jobs", jobs),
        Route("/metrics", metrics),
    ]

    async def on_error(request: Request, exc: Exception) -> Response:
        status, kind = _status_of(exc)
        if status >= 500 and not isinstance(exc, MemschedError):
            log.exception("unhandled error on %s", request.url.path)
            return _error(status, "internal error; see the server log", kind)
        return _error(status, str(exc), kind)

    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={MemschedError: on_error, ValidationError: on_error, Exception: on_error},
    )


def _job_dict(job: Any) -> dict[str, Any]:
    out = {}
    for key in ("id", "kind", "user_id", "session_id", "priority", "status", "attempts", "last_error"):
        out[key] = getattr(job, key, None)
    for key in ("run_after", "created_at", "finished_at"):
        value = getattr(job, key, None)
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out
