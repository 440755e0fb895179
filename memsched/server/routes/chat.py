"""POST /v1/chat/completions: the OpenAI-compatible proxy with memory."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from memsched.errors import ConfigError, InputError
from memsched.server.errors import UPSTREAM_ERRORS
from memsched.server.identity import user_id
from memsched.server.limits import check_message_tokens, message_texts
from memsched.server.routes.context import when
from memsched.server.schemas import ChatCompletion, ChatRequest
from memsched.server.service import TRACE_HEADER, Service, get_service

router = APIRouter(tags=["chat"])


def text_of(content: Any) -> str:
    """The text of an OpenAI message content (a string, or a list of parts: text parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            part = part if isinstance(part, dict) else part.model_dump()
            if part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif part.get("type") == "image_url":
                parts.append("[image]")
        return "\n".join(p for p in parts if p)
    raise InputError("message content must be a string or a list of content parts")


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
    meta = body.metadata
    user = user_id(request, body.user or (meta.user if meta else None))
    messages = [m.model_dump(exclude_unset=True) for m in body.messages]
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if last_user is None:
        raise InputError("messages: must contain a user message")
    message = text_of(last_user.get("content"))
    check_message_tokens(svc.memory.counter, message_texts(messages), svc.config.max_message_tokens)
    now = when(meta.timestamp if meta else None, "metadata.timestamp")
    if svc.scheduler.llm is None:
        raise ConfigError("no upstream LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL")
    session_id = str((meta.session_id if meta else None) or "default")
    # The client's system message is the persona; the rest of its history is replaced by ours.
    persona = "\n\n".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    result = await svc.scheduler.aturn(
        user,
        session_id,
        message,
        now=now,
        timezone=meta.timezone if meta else None,
        system_prompt=persona or None,
    )
    created = int(time.time())
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    model = body.model or svc.config.upstream_model or "memsched"
    headers = {TRACE_HEADER: result.trace_id}
    if body.stream:

        async def events() -> AsyncIterator[str]:
            for delta in ({"role": "assistant", "content": result.reply or ""}, {}):
                chunk = {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None if delta else "stop"}],
                }
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result.reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": (result.trace.get("llm") or {}).get("usage") or {},
        },
        headers=headers,
    )
