"""One module per resource; each defines `router` (a FastAPI `APIRouter`). `ROUTERS` is what the app mounts.

To add a resource: write `memsched/server/routes/<name>.py` with a `router`, take the user through
`memsched.server.identity.user_id`, raise memsched errors (they become OpenAI-format errors), declare
`responses=ERRORS` and a response model so /openapi.json describes it, and add it to `ROUTERS`.
"""

from __future__ import annotations

from fastapi import APIRouter

from memsched.server.routes import (
    chat,
    companion,
    context,
    forget,
    jobs,
    memories,
    meta,
    passthrough,
    profile,
    responses,
    traces,
    users,
)

ROUTERS: list[APIRouter] = [
    meta.router,
    chat.router,
    responses.router,
    context.router,
    memories.router,
    users.router,
    profile.router,
    companion.router,
    traces.router,
    jobs.router,
    forget.router,
    # Last: every /v1 path no route above serves is relayed to the upstream.
    passthrough.router,
]
