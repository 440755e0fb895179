"""POST /v1/chat/completions: the OpenAI-compatible proxy with memory (see `memsched.server.proxy`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from memsched.errors import ConfigError, InputError
from memsched.server import proxy, relay
from memsched.server.errors import UPSTREAM_ERRORS, exception_response
from memsched.server.identity import user_id
from memsched.server.limits import check_message_tokens, message_texts
from memsched.server.routes.context import when
from memsched.server.schemas import ChatCompletion, ChatRequest, ModelCard, ModelList
from memsched.server.service import TRACE_HEADER, Service, get_service
from memsched.server.validate import chat_ids, check_images, check_timezone, check_unicode, empty_message
from memsched.vision import image_parts

router = APIRouter(tags=["chat"])

TOOL_EXCHANGE_ROLES = ("assistant", "tool", "function")


def _trailing(messages: list[dict[str, Any]], last_user: int) -> list[dict[str, Any]]:
    """What follows the last user message and goes upstream after the scheduled context: the tool
    exchange (assistant tool calls and tool results), and a final assistant message — a prefill that
    steers the reply's start — which stays last."""
    after = messages[last_user + 1 :]
    if _has_tools(after):
        return [m for m in after if m.get("role") in TOOL_EXCHANGE_ROLES]
    return after[-1:] if after and after[-1].get("role") == "assistant" else []


def _history(messages: list[dict[str, Any]], last_user: int) -> list[tuple[str, str]]:
    """The client's user and assistant messages before the last user message, as (role, text); tool
    calls and their results are left out."""
    out: list[tuple[str, str]] = []
    for m in messages[:last_user]:
        role = m.get("role")
        if role not in ("user", "assistant") or m.get("tool_calls") or m.get("function_call"):
            continue
        text = proxy.text_of(m.get("content"))
        if text.strip():
            out.append((str(role), text))
    return out


def _has_tools(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("role") in ("tool", "function") or m.get("tool_calls") for m in messages)


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletion,
    responses={
        **UPSTREAM_ERRORS,
        200: {
            "description": "A chat completion, or with `stream: true` a text/event-stream of chunks",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
    summary="OpenAI-compatible chat completion with memory",
)
async def chat(body: ChatRequest, request: Request, svc: Service = Depends(get_service)) -> Response:
    # The request is checked in full before the configuration (a 400 names the field, then a 503).
    dumped = body.model_dump(exclude_unset=True)  # once: the messages and the fields forwarded
    check_unicode(dumped)
    meta = body.metadata
    named_user, session_id = chat_ids(body.user, meta, body.safety_identifier)
    user = user_id(request, named_user)
    messages: list[dict[str, Any]] = dumped["messages"]
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if last is None:
        raise InputError("messages: must contain a user message")
    message = proxy.text_of(messages[last].get("content"))
    images = image_parts(messages[last].get("content"))
    if not message.strip():
        if not images:
            raise empty_message(f"messages.{last}.content", messages[last].get("content"))
        message = ""  # blank text beside an image: the image alone is the message
    check_message_tokens(svc.memory.counter, message_texts(messages), svc.config.max_message_tokens)
    zone = check_timezone(meta.timezone if meta else None, "metadata.timezone")
    now = when(meta.timestamp if meta else None, "metadata.timestamp", zone)
    check_images(messages, svc.config.max_image_bytes)
    upstream = svc.upstream
    if upstream is None:
        raise ConfigError("no upstream LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    # The client's system (and developer) messages are the persona; the rest of its history is
    # replaced by the scheduled context.
    persona = "\n\n".join(
        proxy.text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    forward = {k: v for k, v in dumped.items() if k not in proxy.OWNED}
    stream_options = body.stream_options or {}
    if body.stream and body.stream_options is not None:
        forward["stream_options"] = body.stream_options
    trailing = _trailing(messages, last)
    turn = proxy.ProxyTurn(
        svc=svc,
        upstream=upstream,
        user=user,
        session_id=session_id,
        message=message,
        persona=persona or None,
        now=now,
        timezone=zone,
        forward=forward,
        user_message=messages[last],
        trailing=trailing,
        prefill=proxy.prefill_of(trailing),
        history=_history(messages, last),
        stream=body.stream,
        include_usage=bool(stream_options.get("include_usage")),
        images=images,
    )
    key = (turn.user, turn.session_id)
    await svc.order.acquire(key)
    handed_off = False

    def release() -> None:
        if turn.hold is not None:
            svc.scheduler.release_session(turn.hold)
        svc.order.release(key)

    try:
        # The session is held (taken with the preparation, in one worker-thread trip) until the reply
        # is recorded: the next message of the session, sent to this process or another, is
        # prepared with this exchange in its context.
        upstream_messages = await turn.prepare()
        assert turn.prepared is not None
        headers = {TRACE_HEADER: turn.prepared.trace_id}
        try:
            if body.stream:
                response = await relay.start(turn, upstream_messages, headers, on_done=release)
                # Gone before the first event came (an SDK timed out): its retry replaces the exchange.
                response.undelivered = await request.is_disconnected()
                handed_off = True  # the response releases the session once the reply is recorded
                return response
            data = await proxy.run_blocking(turn, upstream_messages)
            if await request.is_disconnected():  # e.g. the SDK timed out: it will send the message again
                await asyncio.to_thread(proxy.mark_undelivered, turn)
        except Exception as exc:  # answered here, with the turn's trace header
            # The user's message is recorded and the failure is in the turn's trace: the error
            # response names it, as a reply would.
            return exception_response(exc, request.url.path, headers)
        return proxy.UpstreamJSONResponse(data, headers=headers)
    finally:
        if not handed_off:
            release()


@router.post(
    "/v1/embeddings",
    responses=UPSTREAM_ERRORS,
    summary="Relayed to the upstream as it is (no memory): for clients that use one base URL for both",
)
async def embeddings(request: Request, svc: Service = Depends(get_service)) -> Response:
    try:
        body = await request.json()
    except ValueError:
        raise InputError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise InputError("the request body must be a JSON object")
    upstream = svc.upstream
    if upstream is None:
        raise ConfigError("no upstream: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    status, kind, raw = await upstream.relay("embeddings", body)
    return Response(raw, status_code=status, media_type=kind)


def _models(svc: Service) -> list[ModelCard]:
    model = svc.config.upstream_model
    if svc.upstream is None or not model:
        raise ConfigError("no upstream LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    return [ModelCard(id=model)]


@router.get("/v1/models", response_model=ModelList, summary="The upstream model the proxy answers with")
async def models(svc: Service = Depends(get_service)) -> ModelList:
    return ModelList(data=_models(svc))


@router.get("/v1/models/{model:path}", response_model=ModelCard, summary="One model (the upstream's)")
async def model_card(model: str, svc: Service = Depends(get_service)) -> ModelCard:
    cards = _models(svc)
    # Any name a client asks for is answered by the upstream model (as in chat completions).
    return cards[0].model_copy(update={"id": model}) if model else cards[0]
