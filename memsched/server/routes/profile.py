"""GET /v1/users/{user}/profile: the user's profile facts, current and past."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from memsched.errors import InputError
from memsched.profile import KEYS, Profile
from memsched.server.errors import ERRORS
from memsched.server.identity import user_id
from memsched.server.paths import IdRoute
from memsched.server.service import Service, get_service

router = APIRouter(tags=["profile"], route_class=IdRoute)


class FactOut(BaseModel):
    id: int
    key: str = Field(
        description="name, preferred_name, birthday, location, occupation, partner_name, pets, …"
    )
    value: str
    current: bool = Field(description="In force now (false: superseded or retracted; kept as history)")
    source_turn_ids: list[int] = Field(description="The turns the fact was taken from")
    valid_from: str = Field(description="When it started to hold (ISO 8601)")
    superseded_at: str | None = None
    superseded_by: int | None = Field(default=None, description="The id of the fact that replaced it")


class ProfileOut(BaseModel):
    facts: list[FactOut] = Field(description="Oldest first")


@router.get(
    "/v1/users/{user}/profile",
    response_model=ProfileOut,
    responses=ERRORS,
    summary="A user's profile facts with their history",
)
async def profile(
    request: Request,
    user: str,
    current: bool = Query(default=False, description="Only the facts in force"),
    key: str | None = Query(default=None, description="Only this key's facts"),
    svc: Service = Depends(get_service),
) -> ProfileOut:
    key = key or None  # `?key=` (a form's empty field): every key
    if key is not None and key not in KEYS:
        # A misspelt key ("prefered_name") would read as a user with no such fact.
        raise InputError(f"key: unknown profile key {key!r}; one of {', '.join(KEYS)}")
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    facts = await asyncio.to_thread(Profile(svc.memory.store).facts, uid, key, current=current)
    return ProfileOut(
        facts=[
            FactOut(
                id=f.id,
                key=f.key,
                value=f.value,
                current=f.current,
                source_turn_ids=list(f.source_turn_ids),
                valid_from=f.valid_from.isoformat(),
                superseded_at=f.superseded_at.isoformat() if f.superseded_at else None,
                superseded_by=f.superseded_by,
            )
            for f in facts
        ]
    )
