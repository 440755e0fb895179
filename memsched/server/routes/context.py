"""POST /v1/context (the scheduled context for a message, for apps that call their own LLM) and
POST /v1/turns (record a turn, e.g. that app's reply)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import cast

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse

from memsched.errors import InputError
from memsched.memory import ContextResult
from memsched.model import Role
from memsched.server.errors import ERRORS
from memsched.server.identity import user_id
from memsched.server.limits import check_message_tokens
from memsched.server.schemas import ContextRequest, ContextResponse, TurnCreated, TurnRequest
from memsched.server.service import TRACE_HEADER, Service, get_service
from memsched.server.validate import check_id, check_timezone, check_unicode, request_time

router = APIRouter(tags=["context"])


def when(value: str | None, field: str = "timestamp", timezone: str | None = None) -> datetime | None:
    return request_time(value, field, timezone)


@router.post("/v1/context", response_model=ContextResponse, responses=ERRORS, summary="Build a context")
async def context(
    body: ContextRequest, request: Request, svc: Service = Depends(get_service)
) -> JSONResponse:
    check_unicode(body.model_dump(exclude_unset=True))
    user = user_id(request, check_id(body.user, "user"))
    check_id(body.session_id, "session_id")
    zone = check_timezone(body.timezone)
    now = when(body.timestamp, timezone=zone)
    if not body.message.strip():
        raise InputError("message: the message is empty")
    check_message_tokens(svc.memory.counter, [("message", body.message)], svc.config.max_message_tokens)
    persona = body.system_prompt if body.system_prompt and body.system_prompt.strip() else None
    if body.record:
        if not body.session_id:
            raise InputError("session_id: record needs session_id: a recorded message belongs to a session")
        result = await svc.scheduler.aprepare(
            user,
            body.session_id,
            body.message,
            now=now,
            timezone=zone,
            budget=body.budget,
            system_prompt=persona,
        )
        messages, trace = result.messages, result.trace
    else:
        asked = body.budget

        def preview() -> ContextResult:
            scheduler = svc.scheduler
            if asked is None:
                return scheduler.preview(
                    user,
                    body.message,
                    session_id=body.session_id,
                    now=now,
                    timezone=zone,
                    system_prompt=persona,
                )
            return scheduler.preview(
                user,
                body.message,
                session_id=body.session_id,
                now=now,
                timezone=zone,
                budget=asked,
                system_prompt=persona,
            )

        ctx = await asyncio.to_thread(preview)
        messages, trace = ctx.messages, ctx.trace
    return JSONResponse({"messages": messages, "trace": trace}, headers={TRACE_HEADER: str(trace["id"])})


@router.post(
    "/v1/turns", response_model=TurnCreated, status_code=201, responses=ERRORS, summary="Record a turn"
)
async def turns(body: TurnRequest, request: Request, svc: Service = Depends(get_service)) -> TurnCreated:
    check_unicode(body.model_dump(exclude_unset=True))
    user = user_id(request, check_id(body.user, "user"))
    check_id(body.session_id, "session_id")
    if body.role not in ("user", "assistant", "system"):
        raise InputError(f"role must be user, assistant or system, got {body.role!r}")
    if not body.content.strip():
        raise InputError("content: the message is empty")
    check_message_tokens(svc.memory.counter, [("content", body.content)], svc.config.max_message_tokens)
    timezone = check_timezone(body.timezone)
    at = when(body.timestamp, timezone=timezone)
    rec = await asyncio.to_thread(
        svc.scheduler.record,
        user,
        body.session_id,
        cast(Role, body.role),
        body.content,
        now=at,
        timezone=timezone,
    )
    assert rec.turn.id is not None
    return TurnCreated(turn_id=rec.turn.id, jobs=rec.jobs, commands=rec.commands)
