"""Background jobs (bookmarks, summaries, profile updates): their state."""

from __future__ import annotations

import asyncio
from datetime import datetime

from fastapi import APIRouter, Depends, Query, Request

from memsched.jobs.queue import STATUSES, Job
from memsched.server.errors import ERRORS
from memsched.server.identity import identity, user_id, visible
from memsched.server.schemas import JobOut
from memsched.server.service import Service, get_service

router = APIRouter(tags=["jobs"])


def job_out(job: Job) -> JobOut:
    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if isinstance(value, datetime) else None

    return JobOut(
        id=job.id,
        kind=job.kind,
        user_id=job.user_id,
        session_id=job.session_id,
        priority=int(job.priority),
        status=job.status,
        attempts=job.attempts,
        last_error=job.last_error,
        payload=dict(job.payload),
        run_after=iso(job.run_after),
        created_at=iso(job.created_at),
        finished_at=iso(job.finished_at),
    )


@router.get(
    "/v1/jobs",
    response_model=list[JobOut],
    responses=ERRORS,
    summary="Jobs, newest first",
    description=f"`status`: one of {', '.join(STATUSES)}.",
)
async def jobs(
    request: Request,
    status: str | None = None,
    user: str | None = Query(default=None, description="Only this user's jobs"),
    limit: int = Query(default=100, ge=1, le=1000),
    svc: Service = Depends(get_service),
) -> list[JobOut]:
    uid = user_id(request, user) if user is not None else None
    if uid is not None:  # a user named is a resource: unknown, a 404 (not an empty queue)
        await asyncio.to_thread(svc.memory.require_user, uid)
    if uid is None and identity(request).tenant is not None:
        # A tenant sees its own users' jobs only: filter a wider page of the queue.
        rows = await asyncio.to_thread(svc.scheduler.queue.list, status, 1000)
        return [job_out(j) for j in rows if visible(request, j.user_id)][:limit]
    rows = await asyncio.to_thread(svc.scheduler.queue.list, status, limit, user_id=uid)
    return [job_out(j) for j in rows]
