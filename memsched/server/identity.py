"""Who a request acts for: THE seam between the `user` a client names and memsched's internal user id.

Every route that takes a user (in the path or the body) calls `user_id(request, user)`; nothing else
turns a client-given name into a store user id. `IdentityMiddleware` runs before every route and may
put what it learns about the caller (a tenant, an API key's scope) on `request.state.identity`, which
`user_id` then uses. Today there are no tenants: the internal id is the name the client gave, and the
middleware only sets an empty identity. Tenants/API keys plug in here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from memsched.errors import InputError


@dataclass(frozen=True, slots=True)
class Identity:
    """What the middleware knows about the caller (nothing yet: one tenant, no keys)."""

    tenant: str | None = None


class IdentityMiddleware:
    """Sets `scope["state"]["identity"]` for every HTTP request (authentication hooks in here)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["identity"] = Identity()
        await self.app(scope, receive, send)


def identity(request: Request) -> Identity:
    found = getattr(request.state, "identity", None)
    return found if isinstance(found, Identity) else Identity()


def user_id(request: Request, user: str | None) -> str:
    """The internal user id for the `user` a request names (a path parameter or the body's field)."""
    if not isinstance(user, str) or not user.strip():
        raise InputError("user: the `user` field names the user whose memory to use; it is required")
    _ = identity(request)  # tenants: map (identity.tenant, user) to an internal id here
    return user
