"""Every 4xx/5xx the service sends is an OpenAI-format error: `{"error": {"message", "type", "code"}}`.

Routes raise memsched's exceptions (`InputError` -> 400, `UnknownUserError` -> 404, `LimitError` -> 413,
`ConfigError` -> 503, `LLMError` -> 502, but an upstream's 429 -> 429 with its Retry-After and its
400/404/413/422 -> the same status) or `ApiError` for anything else; the handlers installed by
`install_error_handlers` turn them, FastAPI's validation errors and Starlette's HTTP errors into this
shape. `error_response` builds one directly (e.g. inside a middleware).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from memsched.errors import (
    BudgetError,
    ConfigError,
    InputError,
    LLMError,
    MemschedError,
    UnknownUserError,
    UpstreamStatusError,
)
from memsched.server.access_log import redact_request_path

log = logging.getLogger("memsched.server")


class ErrorBody(BaseModel):
    message: str
    type: str
    code: str | None = None


class ErrorResponse(BaseModel):
    """The OpenAI error format."""

    error: ErrorBody


class ApiError(MemschedError):
    """An HTTP error with its own status, type and code (e.g. 413 `request_too_large`)."""

    def __init__(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code


class LimitError(ApiError):
    """A request over one of the service's size limits (413)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(413, message, "invalid_request_error", code)


# The `responses=` of a route: documents the error shape in the OpenAPI schema.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in (
        (400, "Bad request: the message names the field"),
        (404, "Unknown user, session or id"),
        (413, "Over MEMSCHED_MAX_BODY_BYTES or MEMSCHED_MAX_MESSAGE_TOKENS"),
        (500, "Internal error"),
    )
}
UPSTREAM_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    429: {
        "model": ErrorResponse,
        "description": "The upstream LLM is rate limited (its Retry-After passed on)",
    },
    502: {"model": ErrorResponse, "description": "The upstream LLM failed"},
    503: {"model": ErrorResponse, "description": "No upstream LLM configured"},
}


# Upstream statuses that say the request itself was wrong (a parameter the app passed through, a
# context over the model's window): the client gets the same status, which an SDK does not retry.
UPSTREAM_REJECTED = frozenset({400, 413, 422})


def error_response(
    status: int, message: str, kind: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def classify(exc: BaseException) -> tuple[int, str, str | None]:
    """(HTTP status, OpenAI error type, code) of an exception."""
    if isinstance(exc, ApiError):
        return exc.status, exc.kind, exc.code
    if isinstance(exc, UnknownUserError):
        return 404, "not_found_error", "user_not_found"
    if isinstance(exc, BudgetError | InputError | ValidationError):
        return 400, "invalid_request_error", None
    if isinstance(exc, ConfigError):
        return 503, "not_configured", "no_upstream"
    if isinstance(exc, UpstreamStatusError) and exc.status == 429:
        return 429, "rate_limit_error", "upstream_rate_limited"
    if isinstance(exc, UpstreamStatusError) and exc.status == 404:
        # No such endpoint or model upstream: a 502 would only be retried by the client's SDK.
        return 404, "not_found_error", "upstream_not_found"
    if isinstance(exc, UpstreamStatusError) and exc.status in UPSTREAM_REJECTED:
        return exc.status, "invalid_request_error", "upstream_rejected"
    if isinstance(exc, LLMError):
        return 502, "upstream_error", None
    return 500, "internal_error", None


# How pydantic names the members of a union in an error's location ('str', 'list[ContentPart]', a
# model's name): not a field the client wrote, so the message names the field and the types it takes.
_UNION_TAG = re.compile(r"^(?:str|int|float|bool|list\[.*\]|dict\[.*\]|[A-Z]\w*)$")
_TYPE_WORDS = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean"}
_OBJECT_TYPES = frozenset({"model_type", "dict_type", "model_attributes_type"})
_SCALAR_TYPES = frozenset({"bool_type", "int_type", "float_type", "string_type"})


def _type_word(tag: str) -> str:
    if tag in _TYPE_WORDS:
        return _TYPE_WORDS[tag]
    return "a list" if tag.startswith("list[") else "an object"


def _union_error(errors: list[Any]) -> dict[str, Any] | None:
    """The first error as if the union it failed were one field: located at the field, saying which
    types it takes; or, when one member got past the type check (a list whose item is wrong), that
    member's own error. None when the first error is not a union's."""
    loc = list(errors[0].get("loc", ()))
    at = next((i for i, p in enumerate(loc) if isinstance(p, str) and _UNION_TAG.match(p)), None)
    if at is None:
        return None
    prefix = loc[:at]
    members = [e for e in errors if list(e.get("loc", ()))[:at] == prefix and len(e.get("loc", ())) > at]
    deeper = [e for e in members if len(e["loc"]) > at + 1]
    if deeper:
        inner = deeper[0]
        return {**inner, "loc": (*prefix, *inner["loc"][at + 1 :])}
    words = list(dict.fromkeys(_type_word(str(e["loc"][at])) for e in members))
    return {"loc": tuple(prefix), "type": "union", "msg": f"expected {' or '.join(words)}"}


def validation_message(errors: list[Any]) -> str:
    """'messages.0.content: Input should be a valid string' from pydantic/FastAPI errors (the first)."""
    if not errors:
        return "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":
        return f"request body is not valid JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
    first = _union_error(errors) or first
    loc = [str(p) for p in first.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path"):
        where = ".".join(loc[1:]) or ("body" if loc[0] == "body" else loc[0])
        if loc[0] != "body":
            where = f"{loc[0]} parameter {where}"
    else:
        where = ".".join(loc) or "body"
    msg = first.get("msg", "invalid")
    if first.get("type") == "missing":
        msg = "field required"
    elif first.get("type") == "extra_forbidden":
        msg = "unknown field (misspelt?)"
    elif first.get("type") in _SCALAR_TYPES and isinstance(first.get("input"), str | int | float | bool):
        # What was sent, as JSON: "stream: Input should be a valid boolean, got "yes"".
        msg = f"{msg}, got {json.dumps(first['input'], ensure_ascii=False)[:60]}"
    elif first.get("type") in _OBJECT_TYPES:
        msg = "expected an object"
    return f"{where}: {msg}"


def exception_response(exc: Exception, where: str, headers: dict[str, str] | None = None) -> Response:
    """The OpenAI-format error answer for `exc`, raised while serving the path `where`, with `headers`
    (e.g. the trace header of a proxied turn whose upstream call failed)."""
    status, kind, code = classify(exc)
    out = dict(headers or {})
    if status >= 500 and not isinstance(exc, MemschedError):
        log.error("unhandled error on %s", redact_request_path(where), exc_info=exc)
        return error_response(status, "internal error; see the server log", kind, code, out or None)
    if isinstance(exc, ValidationError):
        return error_response(status, validation_message(list(exc.errors())), kind, code, out or None)
    if isinstance(exc, UpstreamStatusError) and status == 429 and exc.retry_after:
        out["Retry-After"] = exc.retry_after
    return error_response(status, str(exc), kind, code, out or None)


def unparsable_body(cause: BaseException | None) -> str:
    """Why a request body that FastAPI could not parse was refused, from the error it chained."""
    if isinstance(cause, RecursionError):
        return "request body is not valid JSON here: its arrays or objects are nested too deeply"
    if isinstance(cause, ValueError) and "digits" in str(cause):  # int_max_str_digits
        return f"request body is not valid JSON here: a number is too long ({cause})"
    return "request body is not valid JSON: it must be UTF-8 encoded JSON text"


def install_error_handlers(app: FastAPI) -> None:
    async def on_validation(request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, validation_message(list(exc.errors())), "invalid_request_error")

    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        if exc.status_code >= 500:
            kind = "internal_error"
        detail = str(exc.detail)
        if detail == "There was an error parsing the body":  # FastAPI's words; the cause is chained
            detail = unparsable_body(exc.__cause__)
        return error_response(
            exc.status_code, detail, kind, headers=dict(exc.headers) if exc.headers else None
        )

    async def on_error(request: Request, exc: Exception) -> Response:
        return exception_response(exc, request.url.path)

    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(MemschedError, on_error)
    app.add_exception_handler(ValidationError, on_error)
    app.add_exception_handler(Exception, on_error)
