"""Health and Prometheus metrics."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends
from starlette.responses import PlainTextResponse

from memsched import __version__
from memsched.server.schemas import HealthResponse
from memsched.server.service import Service, get_service

router = APIRouter(tags=["service"])


@router.get("/healthz", response_model=HealthResponse, summary="Liveness and what is loaded")
async def health(svc: Service = Depends(get_service)) -> HealthResponse:
    return HealthResponse(
        status="ok",
        version=__version__,
        db=svc.config.store_location,
        embedders=list(svc.memory.embedders),
        upstream=svc.scheduler.llm is not None,
        uptime_s=round(time.time() - svc.started, 1),
    )


# HEAD too (load balancers and uptime checkers often probe with it; before: a 405).
router.add_api_route("/healthz", health, methods=["HEAD"], include_in_schema=False)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(svc: Service = Depends(get_service)) -> PlainTextResponse:
    return PlainTextResponse(svc.scheduler.metrics.render(), media_type="text/plain; version=0.0.4")
