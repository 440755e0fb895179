"""The HTTP service: an OpenAI-compatible proxy plus the scheduler's own endpoints.

`create_app()` builds a FastAPI app around one `Service` (a `Memory` and a `Scheduler`). Chat apps
point their OpenAI SDK at `/v1`; memsched owns the history, so it takes the client's system message as
the persona and the last user message as the new turn, and replaces the rest with the scheduled
context. The routes live in `memsched.server.routes` (one module per resource); errors are OpenAI-format
(`memsched.server.errors`); the user a request acts for is resolved in `memsched.server.identity`;
`/openapi.json` is generated from the pydantic models, and `/docs` renders it with Swagger UI assets
served by memsched itself (the `fastapi-offline` package ships them: nothing is fetched from a CDN).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from memsched import __version__
from memsched.config import Config
from memsched.errors import UnknownUserError
from memsched.server.errors import install_error_handlers
from memsched.server.identity import IdentityMiddleware, unknown_user_response
from memsched.server.limits import BodyLimitMiddleware, JsonBodyMiddleware
from memsched.server.paths import EncodedIdsMiddleware
from memsched.server.routes import ROUTERS
from memsched.server.service import TRACE_HEADER, Service
from memsched.server.ui import ui_routes

log = logging.getLogger("memsched.server")

# Worker threads of `memsched serve`'s event loop (`asyncio.to_thread`: a proxied turn's preparation
# and its reply's recording). A turn's thread waits while the batched embedding model computes its
# message's vectors, so these threads bound how many turns are in flight and thereby how large the
# model's batches get: asyncio's default (cores + 4, 6 here) made 5 texts a call under 50 clients,
# 32 make 6-8, at ~15% less CPU per turn and more turns/s (BENCHMARKS.md "Proxy in session 18").
TURN_THREADS = 32

__all__ = ["TRACE_HEADER", "Service", "create_app"]


def create_app(
    config: Config | None = None,
    *,
    service: Service | None = None,
    warm_up: bool = True,
    freeze_heap: bool = False,
    turn_threads: int | None = None,
) -> FastAPI:
    """The ASGI app. Pass a `Service` to share a memory/scheduler with tests or an embedding app.
    `freeze_heap`: the process is the server's own (`memsched serve`); see `Service.warm_up`.
    `turn_threads`: give the event loop's default executor that many threads (`memsched serve`:
    `TURN_THREADS`); None leaves the loop's executor as it is."""
    cfg = service.config if service is not None and config is None else (config or Config.load())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc = service or Service(cfg)
        app.state.service = svc
        if turn_threads:
            # Shut down by asyncio.run with the loop, like the default one it replaces.
            pool = ThreadPoolExecutor(max_workers=turn_threads, thread_name_prefix="memsched-turn")
            asyncio.get_running_loop().set_default_executor(pool)
        if warm_up:
            await asyncio.to_thread(svc.warm_up, freeze_heap=freeze_heap)
        log.info("memsched %s serving %s", __version__, svc.config.store_location)
        try:
            yield
        finally:
            await svc.aclose()
            if service is None:
                svc.close()

    app = FastAPIOffline(
        title="memsched",
        version=__version__,
        description=(
            "A memory scheduler for long-horizon LLM conversations: an OpenAI-compatible proxy that keeps"
            " every turn and pages the right history into the context, plus REST for the memories."
            ' Errors use the OpenAI format `{"error": {"message", "type", "code"}}`.'
        ),
        lifespan=lifespan,
        redoc_url=None,
        favicon_url="data:,",
    )
    for router in ROUTERS:
        app.include_router(router)
    # The debug UI: HTML pages, not part of the API (left out of /openapi.json).
    app.router.routes.extend(ui_routes(lambda: app.state.service))
    install_error_handlers(app)
    app.add_exception_handler(UnknownUserError, unknown_user_response)
    # Innermost first (each one added wraps the ones before): the body limit applies before anything
    # reads the body; ids in /v1/users paths are read from the raw path just before routing.
    app.add_middleware(EncodedIdsMiddleware)
    app.add_middleware(IdentityMiddleware)
    app.add_middleware(JsonBodyMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=cfg.max_body_bytes)
    return app
