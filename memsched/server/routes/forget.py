"""Forgetting over HTTP: delete a user, a session, or one turn, with everything made from them.

Each call returns when the content is gone from the database files (see `memsched.forget`): the
response says how many turns and rows went and what the byte purge cost.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from memsched.commands import TopicMatch, match_topic
from memsched.errors import InputError
from memsched.forget import forget
from memsched.model import Forgotten
from memsched.server.errors import ERRORS, ApiError
from memsched.server.identity import user_id
from memsched.server.paths import IdRoute
from memsched.server.service import Service, get_service, require_session

router = APIRouter(tags=["forget"], route_class=IdRoute)


class ForgetResponse(BaseModel):
    """What a delete removed."""

    user: str
    turns: int = Field(description="Turns deleted")
    turn_ids: list[int]
    sessions: list[str] = Field(description="Sessions that lost turns or were deleted")
    rows: dict[str, int] = Field(description="Rows deleted per table, derived artifacts included")
    summaries_rewritten: int
    pages_rebookmarked: int
    purge: dict[str, Any] = Field(description="The byte purge: FTS merge and WAL truncation, with their ms")


def _out(user: str, done: Forgotten) -> ForgetResponse:
    return ForgetResponse.model_validate({**done.as_dict(), "user": user})


async def _forget(svc: Service, uid: str, *, hold: str | None = None, **what: Any) -> Forgotten:
    """Forget in a worker thread; with `hold`, while holding that session as a turn would, so no turn
    of it writes between the lookup and the delete."""

    def run() -> Forgotten:
        if hold is None:
            return forget(svc.memory, uid, queue=svc.scheduler.queue, **what)
        with svc.scheduler.holding(uid, hold):
            return forget(svc.memory, uid, queue=svc.scheduler.queue, **what)

    return await asyncio.to_thread(run)


@router.delete(
    "/v1/users/{user}",
    response_model=ForgetResponse,
    responses=ERRORS,
    summary="Delete a user and everything stored about them",
)
async def delete_user(request: Request, user: str, svc: Service = Depends(get_service)) -> ForgetResponse:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    return _out(user, await _forget(svc, uid, everything=True))


@router.delete(
    "/v1/users/{user}/sessions/{session_id}",
    response_model=ForgetResponse,
    responses=ERRORS,
    summary="Delete a session: its turns and everything made from them",
)
async def delete_session(
    request: Request, user: str, session_id: str, svc: Service = Depends(get_service)
) -> ForgetResponse:
    uid = user_id(request, user)
    await asyncio.to_thread(require_session, svc.memory, uid, user, session_id)
    return _out(user, await _forget(svc, uid, session_id=session_id, hold=session_id))


@router.delete(
    "/v1/users/{user}/turns/{turn_id}",
    response_model=ForgetResponse,
    responses=ERRORS,
    summary="Delete one turn and everything made from it",
)
async def delete_turn(
    request: Request, user: str, turn_id: int, svc: Service = Depends(get_service)
) -> ForgetResponse:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    found = svc.memory.store.get_turns(uid, [turn_id])
    if not found:
        raise ApiError(404, f"user {user!r} has no turn {turn_id}", "not_found_error", "no_turn")
    return _out(user, await _forget(svc, uid, turn_ids=[turn_id], hold=found[0].session_id))


class TopicTurn(BaseModel):
    id: int
    session_id: str
    seq: int | None
    role: str
    content: str
    refers_back_to: int | None = Field(
        None, description="For a message that names no topic word: the earlier one its pronoun refers back to"
    )
    found_by: str | None = Field(
        None, description="For a message that names no searched word: why it is about the topic"
    )


class TopicPreview(BaseModel):
    """What forgetting a topic would delete, and why each word was searched for."""

    user: str
    topic: str
    terms: list[str] = Field(description="The words searched for: the topic, its variants, other names")
    via: dict[str, str] = Field(description="Each word beyond the topic's variants, and where it came from")
    turns: list[TopicTurn]


def _match(svc: Service, uid: str, topic: str) -> TopicMatch:
    topic = topic.strip()
    if not topic:
        raise InputError("name the topic to forget")
    return match_topic(svc.memory.store, uid, topic)


@router.get(
    "/v1/users/{user}/topics/{topic}/turns",
    response_model=TopicPreview,
    responses=ERRORS,
    summary="The turns forgetting a topic would delete (a preview: nothing is deleted)",
)
async def preview_topic(
    request: Request, user: str, topic: str, svc: Service = Depends(get_service)
) -> TopicPreview:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    match = await asyncio.to_thread(_match, svc, uid, topic)
    turns = svc.memory.store.get_turns(uid, match.turn_ids)
    return TopicPreview(
        user=user,
        topic=match.topic,
        terms=match.terms,
        via=match.via,
        turns=[
            TopicTurn(
                id=t.id,
                session_id=t.session_id,
                seq=t.seq,
                role=t.role,
                content=t.content,
                refers_back_to=match.refers_back.get(t.id) if t.id is not None else None,
                found_by=match.found_by.get(t.id) if t.id is not None else None,
            )
            for t in turns
            if t.id is not None
        ],
    )


@router.delete(
    "/v1/users/{user}/topics/{topic}",
    response_model=ForgetResponse,
    responses=ERRORS,
    summary="Delete every turn about a topic (what the preview lists) and everything made from them",
)
async def delete_topic(
    request: Request, user: str, topic: str, svc: Service = Depends(get_service)
) -> ForgetResponse:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    match = await asyncio.to_thread(_match, svc, uid, topic)
    if not match.turn_ids:
        raise ApiError(404, f"no turn of user {user!r} is about {topic!r}", "not_found_error", "no_turn")
    return _out(user, await _forget(svc, uid, turn_ids=match.turn_ids))
