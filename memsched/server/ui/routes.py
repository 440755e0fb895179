"""The debug UI's routes: server-rendered HTML (Jinja2) with a little JS, assets served by memsched.

`ui_routes(backend)` returns the routes to add to the app; `backend()` gives the service (its memory
and scheduler) at request time. Nothing here loads from the network: the CSS and JS ship in the
package (static/), the fonts are the system's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memsched.server.identity import UI_COOKIE, external, user_id, visible
from memsched.server.paths import path_param, segment
from memsched.server.ui import i18n, views
from memsched.server.ui.views import Backend

HERE = Path(__file__).parent
PREFIX = "/ui"


def _dt(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return "" if value is None else str(value)


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if value else "0"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    env = templates.env
    env.filters["dt"] = _dt
    env.filters["num"] = _num
    env.filters["pretty_json"] = _json
    env.filters["q"] = lambda s: segment(str(s))
    env.filters["without"] = lambda d, *keys: {k: v for k, v in (d or {}).items() if k not in keys}
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": True}
    env.trim_blocks = True
    env.lstrip_blocks = True
    return templates


def ui_routes(backend: Callable[[], Backend]) -> list[BaseRoute]:
    """The routes of the debug UI under /ui (pages) and /ui/static (its CSS and JS)."""
    templates = _templates()

    def render(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        lang = i18n.pick(
            request.query_params.get("lang"),
            request.cookies.get(i18n.COOKIE),
            request.headers.get("accept-language"),
        )
        other = "en" if lang == "zh" else "zh"
        ctx.update(lang=lang, other_lang=other, t=i18n.translator(lang), prefix=PREFIX)
        response = templates.TemplateResponse(request, name, ctx, status_code=status)
        if request.query_params.get("lang") in i18n.LANGS:
            response.set_cookie(i18n.COOKIE, lang, max_age=365 * 86400, samesite="lax")
        return response

    def not_found(request: Request, what: str) -> Response:
        return render(request, "not_found.html", status=404, what=what)

    async def index(request: Request) -> Response:
        found = await run_in_threadpool(views.users, backend())
        # A tenant's key sees its own users only, by the names it knows them by.
        found = [{**u, "id": external(request, u["id"])} for u in found if visible(request, u["id"])]
        return render(request, "index.html", users=found)

    async def user_page(request: Request) -> Response:
        b = backend()
        user = user_id(request, path_param(request, "user"))
        if not b.memory.store.has_user(user):
            return not_found(request, f"user {user!r}")
        found = await run_in_threadpool(views.sessions, b, user)
        session = request.query_params.get("session") or (found[0]["id"] if found else None)
        if session is not None and not any(s["id"] == session for s in found):
            return not_found(request, f"session {session!r} of user {user!r}")
        before = request.query_params.get("before")
        line = None
        if session is not None:
            line = await run_in_threadpool(
                views.timeline, b, user, session, before=int(before) if before and before.isdigit() else None
            )
        return render(
            request,
            "timeline.html",
            user=user,
            tab="timeline",
            summary=views.user_summary(b, user),
            sessions=found,
            session=session,
            line=line,
            open_trace=request.query_params.get("trace"),
            paged=before is not None,
        )

    async def trace_page(request: Request) -> Response:
        b = backend()
        user, trace_id = user_id(request, path_param(request, "user")), path_param(request, "trace_id")
        trace = await run_in_threadpool(b.memory.store.trace_get, trace_id, user)
        if trace is None:
            return not_found(request, f"trace {trace_id!r} of user {user!r}")
        view = await run_in_threadpool(views.trace_view, b, trace)
        name = "trace_fragment.html" if request.query_params.get("fragment") else "trace.html"
        return render(request, name, user=user, tab="timeline", summary=None, v=view)

    def user_tab(tab: str, load: Callable[[Backend, str], Any]) -> Callable[[Request], Any]:
        async def page(request: Request) -> Response:
            b = backend()
            user = user_id(request, path_param(request, "user"))
            if not b.memory.store.has_user(user):
                return not_found(request, f"user {user!r}")
            data = await run_in_threadpool(load, b, user)
            return render(
                request, f"{tab}.html", user=user, tab=tab, summary=views.user_summary(b, user), data=data
            )

        return page

    async def login(request: Request) -> Response:
        """With API keys configured: a form for the key, kept in an HttpOnly cookie for /ui only."""
        target = request.query_params.get("next") or f"{PREFIX}/"
        if not (target == PREFIX or target.startswith(f"{PREFIX}/")) or target.startswith("//"):
            target = f"{PREFIX}/"  # only pages of the UI: never an open redirect
        if request.method == "GET":
            return render(request, "login.html", user=None, summary=None, target=target, failed=False)
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = (form.get("key") or [""])[0].strip()
        keyring = getattr(backend(), "keyring", None)
        if keyring is None or keyring.verify(key) is None:
            return render(
                request, "login.html", status=401, user=None, summary=None, target=target, failed=True
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(UI_COOKIE, key, httponly=True, samesite="strict", path=PREFIX)
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse(f"{PREFIX}/login", status_code=303)
        response.delete_cookie(UI_COOKIE, path=PREFIX)
        return response

    async def root_redirect(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/", status_code=307)

    return [
        Route(PREFIX, root_redirect),
        Route(f"{PREFIX}/", index),
        Route(f"{PREFIX}/login", login, methods=["GET", "POST"]),
        Route(f"{PREFIX}/logout", logout),
        Route(f"{PREFIX}/u/{{user}}", user_page),
        Route(f"{PREFIX}/u/{{user}}/trace/{{trace_id}}", trace_page),
        Route(f"{PREFIX}/u/{{user}}/profile", user_tab("profile", views.profile)),
        Route(f"{PREFIX}/u/{{user}}/bookmarks", user_tab("bookmarks", views.bookmarks)),
        Route(f"{PREFIX}/u/{{user}}/jobs", user_tab("jobs", views.jobs)),
        Mount(f"{PREFIX}/static", StaticFiles(directory=str(HERE / "static")), name="ui-static"),
    ]
