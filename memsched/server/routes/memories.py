"""A user's memories: search over their turns (with per-layer scores) and their bookmarks."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from memsched.memory import SearchHit
from memsched.server.errors import ERRORS
from memsched.server.identity import user_id
from memsched.server.paths import IdRoute
from memsched.server.schemas import BookmarkOut, LayerScores, MemoryHit
from memsched.server.service import Service, get_service, require_session
from memsched.text.timeexpr import turn_dates

router = APIRouter(tags=["memories"], route_class=IdRoute)


def _memory(hit: SearchHit) -> MemoryHit:
    t, c = hit.turn, hit.candidate
    assert t.id is not None
    return MemoryHit(
        turn_id=t.id,
        session_id=t.session_id,
        created_at=t.created_at.isoformat(),
        role=t.role,
        speaker=t.speaker,
        content=t.content,
        page_id=t.page_id,
        dates=turn_dates(t.meta),
        score=hit.score,
        scores=dict(c.scores),
        layers=LayerScores(scores=dict(c.scores), ranks=dict(c.ranks), fused=c.fused),
    )


async def _search(svc: Service, user: str, q: str, limit: int) -> list[MemoryHit]:
    svc.memory.require_user(user)
    hits = await asyncio.to_thread(svc.memory.search, user, q, limit)
    return [_memory(h) for h in hits]


@router.get(
    "/v1/users/{user}/memories",
    response_model=list[MemoryHit],
    responses=ERRORS,
    summary="Search a user's turns (best first, with per-layer scores)",
)
async def memories(
    request: Request,
    user: str,
    q: str = Query(min_length=1, description="What to look for (any language)"),
    limit: int = Query(default=10, ge=1, le=200),
    svc: Service = Depends(get_service),
) -> list[MemoryHit]:
    return await _search(svc, user_id(request, user), q, limit)


@router.get(
    "/v1/users/{user}/search",
    response_model=list[MemoryHit],
    responses=ERRORS,
    summary="Same as /memories (kept for older clients)",
)
async def search(
    request: Request,
    user: str,
    q: str = Query(min_length=1),
    limit: int = Query(default=10, ge=1, le=200),
    svc: Service = Depends(get_service),
) -> list[MemoryHit]:
    return await _search(svc, user_id(request, user), q, limit)


def _bookmark(b: Any) -> BookmarkOut:
    return BookmarkOut(
        id=b.id,
        session_id=b.session_id,
        keywords=list(b.keywords),
        aliases={k: list(v) for k, v in b.aliases.items()},
        summary=b.summary,
        kind=b.kind,
        importance=b.importance,
        source=b.source,
        page_ids=list(b.page_ids),
        turn_ids=list(b.turn_ids),
        first_at=b.first_at.isoformat(),
        last_at=b.last_at.isoformat(),
    )


@router.get(
    "/v1/users/{user}/bookmarks",
    response_model=list[BookmarkOut],
    responses=ERRORS,
    summary="A user's bookmarks (what each page of history is about), oldest first",
)
async def bookmarks(
    request: Request,
    user: str,
    session_id: str | None = Query(default=None, description="Only this session's"),
    svc: Service = Depends(get_service),
) -> list[BookmarkOut]:
    uid = user_id(request, user)
    if session_id is None:
        svc.memory.require_user(uid)
    else:
        await asyncio.to_thread(require_session, svc.memory, uid, user, session_id)
    found = await asyncio.to_thread(svc.memory.store.bookmarks, uid)
    return [_bookmark(b) for b in found if session_id is None or b.session_id == session_id]
