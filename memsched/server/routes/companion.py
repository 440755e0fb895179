"""GET /v1/users/{user}/state (carried mood, learned routine, last activity) and
GET /v1/users/{user}/nudges (proactive care that is due: follow-ups, late-night care)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from memsched.companion import user_state
from memsched.errors import InputError
from memsched.importers import parse_timestamp
from memsched.nudges import Nudge, due_nudges, user_timezone
from memsched.server.errors import ERRORS
from memsched.server.identity import user_id
from memsched.server.paths import IdRoute
from memsched.server.service import Service, get_service
from memsched.server.validate import check_timezone

router = APIRouter(tags=["companion"], route_class=IdRoute)


class MoodOut(BaseModel):
    label: str = Field(description="upset, sad, anxious, happy, affectionate or neutral")
    intensity: float = Field(description="0..1, decayed to the time asked about")
    cause_turn_ids: list[int] = Field(description="The user's turns that caused it")
    updated_at: str | None = None


class RoutineOut(BaseModel):
    sleep_time: str | None = Field(description="Usual end of the user's day, local HH:MM (None: not learned)")
    wake_time: str | None = None
    confidence: float = Field(description="0..1; below 0.3 the default late-night window applies")


class StateOut(BaseModel):
    mood: MoodOut
    routine: RoutineOut
    last_active: str | None = Field(description="When the user last wrote (ISO 8601)")
    as_of: str = Field(description="The time the mood is decayed to: `at`, else the user's last message")


class NudgeOut(BaseModel):
    kind: str = Field(description="follow_up or late_night")
    due_at: str
    due: bool = Field(description="Due now (false: upcoming, with `upcoming=true`)")
    reason: str
    suggestion: str
    event_date: str | None = None
    quote: str = ""
    source_turn_ids: list[int]


def _at(value: str | None, now: str | None = None, zone: str | None = None) -> datetime | None:
    """The `at` query parameter, or its alias `now` (an app asking "as of now" says either); a time
    without a UTC offset is local time in `zone` (the user's)."""
    if value and now and value != now:
        raise InputError("give either at or now, not both")
    if value:
        return parse_timestamp(value, "at", zone)
    return parse_timestamp(now, "now", zone) if now else None


_NOW = Query(default=None, description="Alias of `at`")


@router.get(
    "/v1/users/{user}/state",
    response_model=StateOut,
    responses=ERRORS,
    summary="The user's carried mood (as of their last message unless `at` says), learned routine and last activity",
)
async def state(
    request: Request,
    user: str,
    at: str | None = Query(
        default=None,
        description="Decay the mood to this time (ISO 8601; without a UTC offset, the user's local time);"
        " default the user's last message (the state as they left it)",
    ),
    now: str | None = _NOW,
    svc: Service = Depends(get_service),
) -> StateOut:
    uid = user_id(request, user)
    svc.memory.require_user(uid)

    def read() -> dict[str, object]:
        # `at` is read here too, not on the event loop: a time that is not ISO 8601 goes through
        # dateparser, whose first call loads its language tables (seconds on a busy machine).
        zone = user_timezone(svc.memory, uid) if (at or now) else None
        return user_state(svc.memory, uid, _at(at, now, zone))

    return StateOut.model_validate(await asyncio.to_thread(read))


@router.get(
    "/v1/users/{user}/nudges",
    response_model=list[NudgeOut],
    responses=ERRORS,
    summary="Proactive nudges due for the user (computed, never sent)",
)
async def nudges(
    request: Request,
    user: str,
    at: str | None = Query(
        default=None,
        description="As of this time (ISO 8601; without a UTC offset, local time in `timezone`, default the user's); default now",
    ),
    now: str | None = _NOW,
    timezone: str | None = Query(default=None, description="IANA timezone; default the user's"),
    upcoming: bool = Query(default=False, description="Also list follow-ups not due yet"),
    svc: Service = Depends(get_service),
) -> list[NudgeOut]:
    uid = user_id(request, user)
    svc.memory.require_user(uid)
    timezone = check_timezone(timezone)

    def read() -> list[Nudge]:  # off the event loop, `at` included (see `state`)
        zone = timezone
        if zone is None and (at or now):
            zone = user_timezone(svc.memory, uid)
        return due_nudges(svc.memory, uid, _at(at, now, zone), timezone=timezone, include_upcoming=upcoming)

    return [NudgeOut.model_validate(n.as_dict()) for n in await asyncio.to_thread(read)]
