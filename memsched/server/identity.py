"""Who a request acts for: THE seam between the `user` a client names and memsched's internal user id.

Every route that takes a user (in the path or the body) calls `user_id(request, user)`; nothing else
turns a client-given name into a store user id. `IdentityMiddleware` runs before every route: when API
keys are configured (`MEMSCHED_API_KEYS` or `memsched keys add`), it requires `Authorization: Bearer
<key>` on every path but the open ones (health, metrics, the API schema and its docs), answers 401 in
OpenAI format otherwise, and puts the key's tenant on `request.state.identity`.

Tenants are namespaces: the internal id of user `bob` of tenant `acme` is `acme/bob`, so a key of
another tenant naming `bob` reaches a different user, and nothing of acme's. The `default` tenant keeps
unprefixed ids (the data of a service that ran without keys); its user names may not contain `/`.
Without keys there is one namespace and no check (the service then listens on loopback only).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memsched.auth import DEFAULT_TENANT
from memsched.errors import InputError, UnknownUserError
from memsched.server.errors import error_response, exception_response

# Paths served without a key: they carry no user data.
OPEN_PATHS = ("/healthz", "/metrics", "/openapi.json")
OPEN_PREFIXES = ("/docs", "/static-offline-docs")
SEPARATOR = "/"
# The debug UI in a browser cannot send a bearer header: its login form keeps the key in this
# HttpOnly, SameSite=Strict cookie (path /ui), read only for /ui paths; without one, /ui redirects there.
UI_PREFIX = "/ui"
UI_COOKIE = "memsched_ui_key"
UI_OPEN = ("/ui/login", "/ui/static/")


@dataclass(frozen=True, slots=True)
class Identity:
    """What the middleware knows about the caller: the tenant of its key (None: no keys configured)."""

    tenant: str | None = None
    key_id: str | None = None


class IdentityMiddleware:
    """Authenticates every HTTP request (when keys exist) and sets `scope["state"]["identity"]`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        identity = Identity()
        service = getattr(getattr(scope.get("app"), "state", None), "service", None)
        keyring = getattr(service, "keyring", None)
        path = scope.get("path", "")
        is_open = path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or path.startswith(UI_OPEN)
        if keyring is not None and not is_open and keyring.configured():
            is_ui = path == UI_PREFIX or path.startswith(UI_PREFIX + "/")
            token = _bearer(scope) or (_cookie(scope, UI_COOKIE) if is_ui else "")
            principal = keyring.verify(token) if token else None
            if principal is None and is_ui:
                await RedirectResponse(f"/ui/login?next={quote(path)}", status_code=303)(scope, receive, send)
                return
            if principal is None:
                message = (
                    "invalid API key"
                    if token
                    else "this service needs an API key: send Authorization: Bearer <key>"
                )
                response = error_response(
                    401,
                    message,
                    "invalid_request_error",
                    "invalid_api_key",
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
            identity = Identity(tenant=principal.tenant, key_id=principal.key_id)
        scope.setdefault("state", {})["identity"] = identity
        await self.app(scope, receive, send)


def _cookie(scope: Scope, name: str) -> str:
    for header, value in scope.get("headers", []):
        if header == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, found = part.strip().partition("=")
                if key == name:
                    return unquote(found)
    return ""


def _bearer(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


def identity(request: Request) -> Identity:
    found = getattr(request.state, "identity", None)
    return found if isinstance(found, Identity) else Identity()


def user_id(request: Request, user: str | None) -> str:
    """The internal user id for the `user` a request names (a path parameter or the body's field).

    Only an absent user (None) falls back to MEMSCHED_DEFAULT_USER: a blank one is a 400, or
    `DELETE /v1/users/%20` would have deleted the default user's memory."""
    if isinstance(user, str) and not user.strip():
        raise InputError(f"user: {user!r} is blank; name the user whose memory to use")
    if not isinstance(user, str):
        service = getattr(request.app.state, "service", None)
        fallback = getattr(getattr(service, "config", None), "default_user", None)
        if not fallback:
            raise InputError(
                "user: the `user` field names the user whose memory to use; it is required "
                "(`metadata.user` or `safety_identifier` do too in the chat and Responses APIs; "
                "or set MEMSCHED_DEFAULT_USER for an app with one user)"
            )
        user = fallback
    tenant = identity(request).tenant
    if tenant is None:
        return user
    if tenant == DEFAULT_TENANT:
        if SEPARATOR in user:
            raise InputError(f"user: names of the {DEFAULT_TENANT} tenant may not contain {SEPARATOR!r}")
        return user
    return f"{tenant}{SEPARATOR}{user}"


def visible(request: Request, internal_id: str | None) -> bool:
    """Whether a stored user id (of a trace, a job, a listing) belongs to the caller's tenant."""
    if internal_id is None:
        return False
    tenant = identity(request).tenant
    if tenant is None:
        return True
    if tenant == DEFAULT_TENANT:
        return SEPARATOR not in internal_id
    return internal_id.startswith(f"{tenant}{SEPARATOR}")


def external(request: Request, internal_id: str) -> str:
    """The name the caller knows a stored user by (its internal id without the tenant prefix)."""
    tenant = identity(request).tenant
    if tenant is None or tenant == DEFAULT_TENANT:
        return internal_id
    return internal_id.removeprefix(f"{tenant}{SEPARATOR}")


async def unknown_user_response(request: Request, exc: Exception) -> Response:
    """The 404 of an unknown user, naming the user as the caller does: a tenant's users are stored
    under its prefix, which the message must neither show nor make the caller wonder about."""
    assert isinstance(exc, UnknownUserError)
    return exception_response(UnknownUserError(external(request, exc.user_id)), request.url.path)
