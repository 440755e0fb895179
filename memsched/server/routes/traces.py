"""Traces: what one turn did (route, candidates, what was paged in, tokens, jobs, upstream calls)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from memsched.server.errors import ERRORS, ApiError
from memsched.server.identity import user_id, visible
from memsched.server.paths import IdRoute
from memsched.server.service import Service, get_service, require_session

router = APIRouter(tags=["traces"], route_class=IdRoute)


@router.get(
    "/v1/traces/{trace_id}",
    response_model=dict[str, Any],
    responses=ERRORS,
    summary="One turn's trace (the X-Memsched-Trace-Id of its response)",
)
async def trace(request: Request, trace_id: str, svc: Service = Depends(get_service)) -> dict[str, Any]:
    found = await asyncio.to_thread(svc.scheduler.trace, trace_id)
    if found is None or not visible(request, found.get("user_id")):  # another tenant's: not found
        raise ApiError(404, f"no trace {trace_id!r}", "not_found_error", "no_trace")
    return found


@router.get(
    "/v1/users/{user}/traces",
    response_model=list[dict[str, Any]],
    responses=ERRORS,
    summary="A user's (or one session's) latest traces, newest first",
)
async def traces(
    request: Request,
    user: str,
    session_id: str | None = None,
    limit: int = Query(default=50, ge=1, le=500),
    svc: Service = Depends(get_service),
) -> list[dict[str, Any]]:
    uid = user_id(request, user)
    if session_id is None:
        svc.memory.require_user(uid)
    else:
        await asyncio.to_thread(require_session, svc.memory, uid, user, session_id)
    return await asyncio.to_thread(svc.scheduler.traces, uid, session_id, limit)
