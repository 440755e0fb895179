"""A user's sessions, the turns of one session (paged, newest page first), and everything held
about them as one ndjson export."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from memsched.export import export_pages
from memsched.model import Turn
from memsched.server.errors import ERRORS
from memsched.server.identity import user_id
from memsched.server.paths import IdRoute
from memsched.server.schemas import SessionOut, TurnOut, TurnPage
from memsched.server.service import Service, get_service, require_session

router = APIRouter(tags=["sessions"], route_class=IdRoute)


def turn_out(t: Turn) -> TurnOut:
    return TurnOut(
        id=t.id,
        session_id=t.session_id,
        seq=t.seq,
        page_id=t.page_id,
        role=t.role,
        speaker=t.speaker,
        content=t.content,
        created_at=t.created_at.isoformat(),
        meta=dict(t.meta),
    )


@router.get(
    "/v1/users/{user}/sessions",
    response_model=list[SessionOut],
    responses=ERRORS,
    summary="A user's sessions",
)
async def sessions(request: Request, user: str, svc: Service = Depends(get_service)) -> list[SessionOut]:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    found = await asyncio.to_thread(svc.memory.store.sessions, uid)
    return [SessionOut(id=x.id, created_at=x.created_at.isoformat(), turns=x.turn_count) for x in found]


@router.get(
    "/v1/users/{user}/sessions/{session_id}/turns",
    response_model=TurnPage,
    responses=ERRORS,
    summary="A session's turns: the latest `limit`, or the `limit` before seq `before`; oldest first",
)
async def session_turns(
    request: Request,
    user: str,
    session_id: str,
    limit: int = Query(default=50, ge=1, le=500),
    before: int | None = Query(default=None, ge=0, description="Only turns with seq < before"),
    svc: Service = Depends(get_service),
) -> TurnPage:
    uid = user_id(request, user)
    store = svc.memory.store

    def load() -> list[Turn]:
        require_session(svc.memory, uid, user, session_id)
        if before is None:
            return store.session_turns(uid, session_id, last=limit)
        if before == 0:
            return []
        return store.session_turns_between(uid, session_id, max(0, before - limit), before - 1)

    turns = await asyncio.to_thread(load)
    first = turns[0].seq if turns else None
    return TurnPage(turns=[turn_out(t) for t in turns], next_before=first if first else None)


@router.get(
    "/v1/users/{user}/export",
    response_class=StreamingResponse,
    responses={
        **ERRORS,
        200: {
            "description": "Everything memsched holds about the user, one JSON object per line with a"
            " `type` (export format version 2, docs/design.md): a `header`, the `turn`s in the order"
            " stored (the fields `memsched import` reads: session_id, role, speaker, content, timestamp,"
            " external_id, meta), every profile `fact` with its history, then `summary`, `bookmark`,"
            " `session_state`, `mood`, `routine` and `trace` records. `memsched import` of it into a"
            " user with no data restores the turns and the profile. With `turns_only`, version 1: the"
            " turn lines alone.",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        },
    },
    summary="Everything held about a user, as ndjson (streamed)",
)
async def export(
    request: Request,
    user: str,
    turns_only: bool = Query(default=False, description="Only the turns (export format version 1)"),
    svc: Service = Depends(get_service),
) -> StreamingResponse:
    uid = user_id(request, user)
    await asyncio.to_thread(svc.memory.require_user, uid)  # unknown: the 404 of the other user routes
    # A sync iterator: Starlette reads each page on a worker thread, so the loop is never blocked.
    # The header names the user as the caller did (without the tenant the key gave).
    pages = export_pages(svc.memory.store, uid, user=user, turns_only=turns_only)
    return StreamingResponse(pages, media_type="application/x-ndjson")
