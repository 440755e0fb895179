"""Every other `/v1/...` request is relayed to the upstream as it came, without memory: files, audio,
moderations, batches, legacy `/v1/completions`, stored responses (`GET /v1/responses/{id}`), ...

The method, path, query string, body and its content type go to the upstream's base URL with
memsched's upstream key (as for `/v1/embeddings`); the answer comes back with its status, its
content type and the headers a client reads (Retry-After, rate limits, request id), its body
streamed as it arrives (server-sent events, audio). Nothing is retried here: the client's SDK
retries what it may. memsched's own resources (`/v1/users/...`, `/v1/traces/...`, ...) are never
relayed: a wrong method or path there is memsched's 405 or 404. With keys of more than one tenant,
only the stateless paths are relayed (the upstream's stored objects would be shared between tenants
through memsched's one upstream key). Mounted last, so every route of memsched's comes first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from fastapi import APIRouter, Depends, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Match

from memsched.errors import ConfigError, LLMError
from memsched.server.errors import ApiError
from memsched.server.identity import identity
from memsched.server.service import Service, get_service

log = logging.getLogger("memsched.server.passthrough")

router = APIRouter(tags=["chat"])

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# The OpenAI paths memsched serves itself; other methods and sub-paths of them (listing stored chat
# completions, retrieving a stored response) are the upstream's.
OPENAI_SEGMENTS = frozenset({"chat", "embeddings", "models", "responses"})
REQUEST_HEADERS = ("content-type", "accept", "accept-encoding", "openai-beta", "idempotency-key")
RESPONSE_HEADERS = (
    "content-type",
    "content-encoding",
    "content-length",
    "content-disposition",
    "retry-after",
    "x-request-id",
    "openai-processing-ms",
    "openai-version",
)
# Paths whose answers the upstream keeps nothing of. The others (files, batches, stored responses,
# vector stores, ...) are objects of memsched's one upstream key: shared by every tenant.
STATELESS = frozenset({"completions", "moderations", "audio", "images"})
HEADER = "X-Memsched-Memory"  # "none" on every relayed answer: memsched added and kept nothing


def _routes(routes: list[BaseRoute]) -> list[BaseRoute]:
    """The app's routes but this one, those of included routers flattened."""
    out: list[BaseRoute] = []
    for route in routes:
        if hasattr(route, "original_router"):  # FastAPI's wrapper of an included router
            out.extend(_routes(route.original_router.routes))
        elif getattr(route, "endpoint", None) is not passthrough:
            out.append(route)
    return out


def _own_segments(request: Request) -> set[str]:
    """The first path segments under /v1 of memsched's own resources."""
    paths = [str(getattr(route, "path", "")) for route in _routes(request.app.router.routes)]
    return {p[4:].split("/", 1)[0] for p in paths if p.startswith("/v1/")} - OPENAI_SEGMENTS


def _refuse(request: Request, path: str) -> ApiError:
    """memsched's own 405 (another method of one of its routes) or 404."""
    scope = dict(request.scope)
    for route in _routes(request.app.router.routes):
        match, _ = route.matches(scope)
        if match is Match.PARTIAL:
            return ApiError(405, f"{request.method} is not allowed on /v1/{path}", "invalid_request_error")
    return ApiError(404, f"no such memsched resource: {request.method} /v1/{path}", "not_found_error")


@router.api_route("/v1/{path:path}", methods=METHODS, include_in_schema=False)
async def passthrough(path: str, request: Request, svc: Service = Depends(get_service)) -> Response:
    if path.split("/", 1)[0] in _own_segments(request):
        raise _refuse(request, path)
    upstream = svc.upstream
    if upstream is None:
        raise ConfigError("no upstream: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    stateful = path.split("/", 1)[0] not in STATELESS and identity(request).tenant is not None
    if stateful and len(await asyncio.to_thread(svc.keyring.tenants)) > 1:
        raise ApiError(
            403,
            f"/v1/{path} is not relayed to the upstream on a service with several tenants: what the"
            " upstream stores there (files, batches, stored responses) would be shared between them"
            f" through memsched's one upstream key; relayed: /v1/{{{','.join(sorted(STATELESS))}}}",
            "invalid_request_error",
            "shared_upstream_state",
        )
    headers = {k: v for k, v in request.headers.items() if k.lower() in REQUEST_HEADERS}
    headers.setdefault("accept-encoding", "identity")  # the body is relayed as it comes, not decoded
    data = await request.body()
    where = f"{request.method} {upstream.base_url}/{path}"
    try:
        resp: aiohttp.ClientResponse = await upstream.request(
            request.method, path, query=request.url.query, headers=headers, data=data
        )
    except TimeoutError:
        raise LLMError(f"{where} timed out after {upstream.timeout:g}s") from None
    except aiohttp.ClientError as exc:
        raise LLMError(f"{where} failed: connection failed ({type(exc).__name__}: {exc})") from None
    out: dict[str, Any] = {k: v for k, v in resp.headers.items() if k.lower() in RESPONSE_HEADERS}
    out.update({k: v for k, v in resp.headers.items() if k.lower().startswith("x-ratelimit-")})
    out[HEADER] = "none"

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in resp.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("%s broke off mid-answer: %s", where, exc)
        finally:
            resp.close()

    return StreamingResponse(body(), status_code=resp.status, headers=out)
