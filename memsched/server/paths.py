"""Ids with a '/' or a '%' in memsched's own paths (`/v1/users/{user}/sessions/{session_id}/...`).

The proxy takes user and session ids from the request body, so any text is an id: "org/42", a session
named "2024/03/02". A client names one in a path percent-encoded ("org%2F42"); the ASGI server decodes
the path before routing, so the '/' it encoded would split the segment and no route would match —
such a user could be neither read nor deleted over HTTP (nor opened in the debug UI, `/ui/u/{user}`). `EncodedIdsMiddleware` routes these paths by
their raw segments, each decoded with its '%' and '/' kept encoded, and `IdRoute` (the route class of
the routers under /v1/users) decodes the path parameters it matched.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

PREFIXES = ("/v1/users/", "/ui/u/")  # the API's user paths and the debug UI's
MARK = "memsched.encoded_ids"  # set on a scope whose path keeps its ids' '%' and '/' encoded


class EncodedIdsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and b"%" in raw and str(scope.get("path", "")).startswith(PREFIXES):
            path = "/".join(_segment(s) for s in bytes(raw).split(b"/"))
            scope = {**scope, "path": path, MARK: True}
        await self.app(scope, receive, send)


def _segment(raw: bytes) -> str:
    text = unquote_to_bytes(raw).decode("utf-8", errors="replace")
    return text.replace("%", "%25").replace("/", "%2F")


class IdRoute(APIRoute):
    """A route whose path parameters come back decoded when `EncodedIdsMiddleware` kept them encoded."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if scope.get(MARK) and match is not Match.NONE and "path_params" in child:
            child["path_params"] = {k: _decoded(v) for k, v in child["path_params"].items()}
        return match, child


def _decoded(value: Any) -> Any:
    return unquote(value) if isinstance(value, str) else value


def path_param(request: Request, name: str) -> str:
    """A path parameter of a plain Starlette route (the debug UI's), decoded as `IdRoute` does."""
    value = str(request.path_params[name])
    return unquote(value) if request.scope.get(MARK) else value


def segment(value: str) -> str:
    """`value` as one path segment: percent-encoded, "." and ".." too (else HTTP clients and browsers
    resolve them as dot segments). `memsched.client` encodes its path ids the same way."""
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")
