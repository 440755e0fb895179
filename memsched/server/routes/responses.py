"""POST /v1/responses: the OpenAI Responses API with memory (see `memsched.server.responses_api`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from memsched.errors import ConfigError, InputError
from memsched.model import Turn
from memsched.server import proxy, responses_api
from memsched.server.errors import UPSTREAM_ERRORS, exception_response
from memsched.server.identity import user_id
from memsched.server.limits import check_message_tokens
from memsched.server.routes.context import when
from memsched.server.schemas import ResponseObject, ResponsesRequest
from memsched.server.service import TRACE_HEADER, Service, get_service
from memsched.server.validate import chat_ids, check_images, check_timezone, check_unicode

router = APIRouter(tags=["chat"])


def _pending(svc: Service, user: str, session_id: str) -> Turn | None:
    """The session's last user turn when it waits for its tools' results (its meta's `tool_calls`
    name the calls)."""
    last = svc.memory.store.session_turns(user, session_id, last=1)
    if last and last[0].role == "user" and last[0].meta.get("awaiting_tools"):
        return last[0]
    return None


@router.post(
    "/v1/responses",
    response_model=ResponseObject,
    responses={
        **UPSTREAM_ERRORS,
        200: {
            "description": "The upstream's response, or with `stream: true` a text/event-stream of its events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
    summary="OpenAI Responses API with memory",
)
async def create_response(
    body: ResponsesRequest, request: Request, svc: Service = Depends(get_service)
) -> Response:
    dumped = body.model_dump(exclude_unset=True)
    check_unicode(dumped)
    meta = body.metadata
    named_user, session_id = chat_ids(body.user, meta, body.safety_identifier)
    user = user_id(request, named_user)
    parsed = responses_api.parse_input(dumped["input"], body.instructions)
    check_message_tokens(svc.memory.counter, parsed.texts, svc.config.max_message_tokens)
    zone = check_timezone(meta.timezone if meta else None, "metadata.timezone")
    now = when(meta.timestamp if meta else None, "metadata.timestamp", zone)
    check_images(parsed.chat_view, svc.config.max_image_bytes, field="input")
    upstream = svc.upstream
    if upstream is None:
        raise ConfigError("no upstream LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    forward = {k: v for k, v in dumped.items() if k not in responses_api.OWNED}
    key = (user, session_id)
    await svc.order.acquire(key)
    handed_off = False
    turn: proxy.ProxyTurn | None = None

    def release() -> None:
        if turn is not None and turn.hold is not None:
            svc.scheduler.release_session(turn.hold)
        svc.order.release(key)

    try:
        message = parsed.message
        pending_calls: list[dict[str, Any]] = []
        if parsed.last_user is None:
            # Tool results for a response chained by previous_response_id: they complete the turn
            # that waits for them (its message is recorded again with the reply, as in chat).
            pending = await asyncio.to_thread(_pending, svc, user, session_id)
            if pending is None:
                raise InputError(
                    "input: must contain a user message (function_call_output items alone complete"
                    " only a turn whose tool calls memsched returned in this session)"
                )
            message = pending.content
            pending_calls = list(pending.meta.get("tool_calls") or [])
        turn = proxy.ProxyTurn(
            svc=svc,
            upstream=upstream,
            user=user,
            session_id=session_id,
            message=message,
            persona=parsed.persona or None,
            now=now,
            timezone=zone,
            forward=forward,
            user_message=parsed.items[parsed.last_user] if parsed.last_user is not None else {},
            trailing=parsed.trailing,
            prefill=proxy.prefill_of(parsed.trailing),
            history=parsed.history,
            stream=body.stream,
            include_usage=False,
            images=parsed.images,
            pending_calls=pending_calls,
        )
        messages = await turn.prepare()
        assert turn.prepared is not None
        scheduled = messages[: len(messages) - len(turn.trailing)]
        instructions, items = responses_api.upstream_input(scheduled, turn.trailing)
        upstream_body: dict[str, Any] = {**forward, "model": upstream.model, "input": items}
        if instructions.strip():
            upstream_body["instructions"] = instructions
        if body.stream:
            upstream_body["stream"] = True
        call = responses_api.ResponsesCall(turn, upstream_body, scheduled)
        headers = {TRACE_HEADER: turn.prepared.trace_id}
        try:
            if body.stream:
                response = await responses_api.start(call, headers, on_done=release)
                # Gone before the first event came (an SDK timed out): its retry replaces the exchange.
                response.undelivered = await request.is_disconnected()
                handed_off = True  # the response releases the session once the reply is recorded
                return response
            data = await responses_api.run_blocking(call)
            if await request.is_disconnected():  # e.g. the SDK timed out: it will send the message again
                await asyncio.to_thread(proxy.mark_undelivered, turn)
        except Exception as exc:  # answered here, with the turn's trace header
            return exception_response(exc, request.url.path, headers)
        return proxy.UpstreamJSONResponse(data, headers=headers)
    finally:
        if not handed_off:
            release()
