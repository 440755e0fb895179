"""A user's sessions, the turns of one session (paged, newest page first), everything held about them
as one ndjson export, and the import of such an export into a user with no data."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from memsched.errors import ImportFileError, UserHasDataError
from memsched.export import export_pages, restore
from memsched.model import Turn
from memsched.server.errors import ERRORS, ApiError, ErrorResponse
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


class ImportResponse(BaseModel):
    """What an import restored, and what memsched makes again in the background."""

    user: str = Field(description="The user imported into: the path's, whatever the export's header names")
    exported_user: str | None = Field(description="The user the export's header names (who was exported)")
    restored: dict[str, int] = Field(
        description="Records written back per type: turn, fact (history included), mood, routine"
    )
    rebuilt: dict[str, int] = Field(
        description="Records read but not written, per type (summary, bookmark, session_state, trace):"
        " memsched makes them again (bookmarks and vectors by the queued jobs, summaries when a"
        " session's context next needs one)"
    )
    jobs: dict[str, list[int]] = Field(
        description="The ids of the jobs queued per kind (embed: the turns' vectors, after which search"
        " finds them; bookmark and bookmark_maintenance); GET /v1/jobs?user= shows them"
    )


# Content types an export is taken in. The body is read as ndjson whatever it is declared as (curl's
# -d and --data-binary send a form type, some tools send JSON's); only a multipart upload is refused.
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines", "text/plain")


@router.post(
    "/v1/users/{user}/import",
    status_code=201,
    response_model=ImportResponse,
    responses={
        **{code: v for code, v in ERRORS.items() if code != 404},  # the user need not exist yet
        400: {
            "model": ErrorResponse,
            "description": "A line that is no record of an export: the message names its line number and"
            " the problem; nothing was stored",
        },
        409: {
            "model": ErrorResponse,
            "description": "The user already has data: nothing was stored; the message names the user and"
            " the way out (DELETE /v1/users/{user} first, or import under another user)",
        },
        413: {
            "model": ErrorResponse,
            "description": "The body is over MEMSCHED_MAX_BODY_BYTES (default 32 MiB): the message names"
            " the limit; a bigger export imports with `memsched import FILE --user USER`",
        },
        415: {"model": ErrorResponse, "description": "A multipart upload: send the file as the body itself"},
    },
    summary="Restore a user's export (ndjson, format version 2) into a user with no data",
    description="The body is what GET /v1/users/{user}/export wrote (or `memsched export`): it is imported"
    " under the path's user, whatever user its header names (moving a user to a new id is an import"
    " under the new id; the header's user is returned as `exported_user`). Same as `memsched import` of"
    " the file: the turns (meta, sessions, order, times), every profile fact with its history, the mood"
    " and the routine, in one transaction; every line is checked first, so a bad one stores nothing."
    " Summaries, bookmarks, session state and traces are not written back: the jobs that make the"
    " vectors and bookmarks again are queued with the import, and the turns are searchable once the"
    " `embed` job has run. A user that already holds data is refused (409). Behind the API keys as the"
    " export is: a key imports into its own tenant's user of that name.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The export: one JSON object per line, the `header` first",
            "content": {t: {"schema": {"type": "string"}} for t in NDJSON_TYPES},
        }
    },
)
async def import_export(request: Request, user: str, svc: Service = Depends(get_service)) -> ImportResponse:
    uid = user_id(request, user)
    kind = request.headers.get("content-type", "").lower()
    if kind.startswith("multipart/"):
        raise ApiError(
            415,
            "the export is the request body itself, not a multipart upload: send the file with"
            " `curl --data-binary @FILE -H 'Content-Type: application/x-ndjson'`",
            "invalid_request_error",
            "unsupported_media_type",
        )
    body = await request.body()
    try:
        done = await asyncio.to_thread(
            restore, svc.memory.store, body, uid, user=user, queue=svc.scheduler.queue
        )
    except UserHasDataError as exc:
        raise ApiError(
            409,
            f"user {user!r} already has data ({exc.turns} turns): an export is restored only into a user"
            f" with none, so nothing is duplicated or mixed; nothing was imported. Import it under another"
            f" user, or delete this one first (DELETE /v1/users/{user})",
            "invalid_request_error",
            "user_has_data",
        ) from None
    except ImportFileError as exc:
        if body.strip() and b"\n" not in body.strip() and body.count(b'"type"') > 1:
            # `curl -d @file` sends the file with its newlines taken out: every record on line 1.
            raise ImportFileError(
                f"{exc}; the body is one line holding several records: send the file as it is"
                " (`curl --data-binary @FILE`; `-d @FILE` takes its newlines out)"
            ) from None
        raise
    header = done.header.get("user")
    return ImportResponse(
        user=user,
        exported_user=header if isinstance(header, str) else None,
        restored={k: done.written[k] for k in ("turn", "fact", "mood", "routine")},
        rebuilt=dict(done.skipped),
        jobs=done.jobs,
    )
