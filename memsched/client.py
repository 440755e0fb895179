"""`Client` and `AsyncClient`: memsched's HTTP API with the embedded `Memory`'s names and shapes.

Code written against `Memory` (add, search, context) or `Scheduler` (turn, traces) runs against a
`memsched serve` somewhere else by swapping the object: the methods take the same arguments and
return the same dataclasses (`Turn`, `SearchHit`, `ContextResult`, `TurnResult`, `Session`,
`Bookmark`). Errors come back as memsched's exceptions: a 400/404/413 is an `InputError`, a 503 a
`ConfigError`, a 502 an `LLMError` (so is a 429 or 400 the upstream LLM answered, as the embedded
`Scheduler` raises), each also a `ServiceError` carrying the HTTP status and the OpenAI-format
error's type and code.

    with Client("http://127.0.0.1:8377", api_key="...") as mem:
        mem.add("li-wei", "s01", "user", "我的猫叫芝麻")
        ctx = mem.context("li-wei", "What's my cat called?", session_id="s02")

`AsyncClient` has the same methods as coroutines (`stream` is an async iterator there).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memsched.errors import ConfigError, InputError, LLMError, MemschedError
from memsched.memory import UNSET, ContextResult, SearchHit
from memsched.model import Bookmark, Candidate, Role, Session, Turn, as_utc, utcnow
from memsched.scheduler import TurnResult

DEFAULT_BASE_URL = "http://127.0.0.1:8377"
DEFAULT_TIMEOUT = 60.0
TRACE_HEADER = "X-Memsched-Trace-Id"

T = TypeVar("T")


class ServiceError(MemschedError):
    """An error answer of the memsched service (or no answer at all: `status` None). `trace_id` names
    the turn's trace when the turn got that far (an upstream failure: the message is recorded), as
    `ReplyError.trace_id` does embedded."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        code: str | None = None,
        trace_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.code = code
        self.trace_id = trace_id


class ServiceInputError(ServiceError, InputError):
    """400, 404, 413: the request named something wrong, missing or too large."""


class ServiceConfigError(ServiceError, ConfigError):
    """503: the service is missing a setting (e.g. no upstream LLM)."""


class ServiceLLMError(ServiceError, LLMError):
    """502: the service's upstream LLM failed; also its 429 (rate limited) and the 400 of a request
    the upstream rejected (`code` "upstream_rate_limited" / "upstream_rejected")."""


UPSTREAM_CODES = frozenset({"upstream_rate_limited", "upstream_rejected"})


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        err = response.json().get("error") or {}
    except (json.JSONDecodeError, AttributeError, UnicodeDecodeError):
        err = {}
    message = str(err.get("message") or response.text[:300] or response.reason_phrase)
    status = response.status_code
    kind: type[ServiceError] = ServiceError
    if status == 502 or err.get("code") in UPSTREAM_CODES:
        kind = ServiceLLMError
    elif status in (400, 404, 413, 422):
        kind = ServiceInputError
    elif status == 503:
        kind = ServiceConfigError
    raise kind(
        f"{response.status_code} from {response.request.method} {response.request.url.path}: {message}",
        status=response.status_code,
        type=err.get("type"),
        code=err.get("code"),
        trace_id=response.headers.get(TRACE_HEADER) or None,
    )


def _unreachable(base_url: str, exc: httpx.TransportError) -> ServiceError:
    return ServiceError(f"cannot reach memsched at {base_url}: {exc}. Is `memsched serve` running there?")


@dataclass(slots=True)
class _Call(Generic[T]):
    """One request and how to read its answer; `Client` and `AsyncClient` only differ in sending it."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    missing_ok: bool = False  # a 404 reads as None instead of raising


def _q(value: str) -> str:
    """`value` as one path segment. "." and ".." are ids too (the proxy takes any); unencoded, HTTP
    clients resolve them as dot segments and the request reaches another path (or the upstream)."""
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def _dt(value: str | None) -> datetime:
    return as_utc(datetime.fromisoformat(value)) if value else utcnow()


def _iso(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def _turn(d: dict[str, Any], user_id: str) -> Turn:
    return Turn(
        user_id=user_id,
        session_id=str(d["session_id"]),
        role=d["role"],
        content=str(d["content"]),
        created_at=_dt(d.get("created_at")),
        speaker=d.get("speaker"),
        id=d.get("id", d.get("turn_id")),
        seq=d.get("seq"),
        page_id=d.get("page_id"),
        meta=dict(d.get("meta") or {}),
    )


def _hit(d: dict[str, Any], user_id: str) -> SearchHit:
    layers = d.get("layers") or {}
    candidate = Candidate(
        turn_id=int(d["turn_id"]),
        scores=dict(layers.get("scores") or d.get("scores") or {}),
        ranks=dict(layers.get("ranks") or {}),
        fused=float(layers.get("fused", d.get("score", 0.0))),
    )
    return SearchHit(turn=_turn(d, user_id), score=float(d["score"]), candidate=candidate)


def _bookmark(d: dict[str, Any], user_id: str) -> Bookmark:
    return Bookmark(
        user_id=user_id,
        session_id=str(d["session_id"]),
        keywords=list(d["keywords"]),
        summary=str(d.get("summary") or ""),
        page_ids=list(d.get("page_ids") or []),
        turn_ids=list(d.get("turn_ids") or []),
        first_at=_dt(d.get("first_at")),
        last_at=_dt(d.get("last_at")),
        aliases={k: list(v) for k, v in (d.get("aliases") or {}).items()},
        kind=str(d.get("kind") or "fact"),
        importance=float(d.get("importance", 0.5)),
        source=str(d.get("source") or "rule"),
        id=d.get("id"),
    )


def _chat_body(
    user_id: str,
    session_id: str,
    message: str,
    *,
    now: datetime | None,
    timezone: str | None,
    system_prompt: str | None,
    model: str | None,
    stream: bool,
    params: dict[str, Any],
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": message})
    meta: dict[str, Any] = {"session_id": session_id}
    if now is not None:
        meta["timestamp"] = _iso(now)
    if timezone:
        meta["timezone"] = timezone
    body: dict[str, Any] = {
        "messages": messages,
        "user": user_id,
        "metadata": meta,
        "stream": stream,
        **params,
    }
    if model:
        body["model"] = model
    return body


def _sse_events(lines: Iterator[str]) -> Iterator[str]:
    """The content deltas of an OpenAI SSE stream ('' for chunks without content)."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        chunk = json.loads(payload)
        if "error" in chunk:
            err = chunk["error"] or {}
            raise ServiceLLMError(
                f"stream failed: {err.get('message')}", type=err.get("type"), code=err.get("code")
            )
        for choice in chunk.get("choices") or []:
            yield str((choice.get("delta") or {}).get("content") or "")


class _Calls:
    """The request of every method (shared by the sync and the async client)."""

    base_url: str

    def _add(
        self,
        user_id: str,
        session_id: str,
        role: Role,
        content: str,
        created_at: datetime | None,
        timezone: str | None = None,
    ) -> _Call[Turn]:
        body: dict[str, Any] = {"user": user_id, "session_id": session_id, "role": role, "content": content}
        if created_at is not None:
            body["timestamp"] = _iso(created_at)
        if timezone:
            body["timezone"] = timezone

        def parse(r: httpx.Response) -> Turn:
            data = r.json()
            turn = Turn(
                user_id=user_id,
                session_id=session_id,
                role=role,
                content=content,
                created_at=created_at or utcnow(),
                id=data["turn_id"],
            )
            turn.meta = {"jobs": data.get("jobs", []), "commands": data.get("commands", [])}
            return turn

        return _Call("POST", "/v1/turns", parse, body=body)

    def _search(self, user_id: str, query: str, limit: int) -> _Call[list[SearchHit]]:
        return _Call(
            "GET",
            f"/v1/users/{_q(user_id)}/memories",
            lambda r: [_hit(d, user_id) for d in r.json()],
            params={"q": query, "limit": limit},
        )

    def _context(
        self,
        user_id: str,
        message: str,
        session_id: str | None,
        now: datetime | None,
        budget: int,
        record: bool,
        timezone: str | None,
        system_prompt: str | None = None,
    ) -> _Call[ContextResult]:
        body: dict[str, Any] = {
            "user": user_id,
            "message": message,
            "session_id": session_id,
            "record": record,
        }
        if budget is not UNSET:
            body["budget"] = budget
        if now is not None:
            body["timestamp"] = _iso(now)
        if timezone:
            body["timezone"] = timezone
        if system_prompt:
            body["system_prompt"] = system_prompt

        def parse(r: httpx.Response) -> ContextResult:
            data = r.json()
            return ContextResult(messages=list(data["messages"]), trace=dict(data["trace"]))

        return _Call("POST", "/v1/context", parse, body=body)

    def _chat(self, body: dict[str, Any]) -> _Call[tuple[str | None, str]]:
        def parse(r: httpx.Response) -> tuple[str | None, str]:
            choice = r.json()["choices"][0]
            return choice["message"].get("content"), r.headers.get(TRACE_HEADER, "")

        return _Call("POST", "/v1/chat/completions", parse, body=body)

    def _trace(self, trace_id: str) -> _Call[dict[str, Any] | None]:
        return _Call("GET", f"/v1/traces/{_q(trace_id)}", lambda r: dict(r.json()), missing_ok=True)

    def _traces(self, user_id: str, session_id: str | None, limit: int) -> _Call[list[dict[str, Any]]]:
        params: dict[str, Any] = {"limit": limit}
        if session_id is not None:
            params["session_id"] = session_id
        return _Call("GET", f"/v1/users/{_q(user_id)}/traces", lambda r: list(r.json()), params=params)

    def _sessions(self, user_id: str) -> _Call[list[Session]]:
        return _Call(
            "GET",
            f"/v1/users/{_q(user_id)}/sessions",
            lambda r: [
                Session(
                    user_id=user_id, id=d["id"], created_at=_dt(d["created_at"]), turn_count=int(d["turns"])
                )
                for d in r.json()
            ],
        )

    def _session_turns(
        self, user_id: str, session_id: str, limit: int, before: int | None
    ) -> _Call[list[Turn]]:
        params: dict[str, Any] = {"limit": limit}
        if before is not None:
            params["before"] = before
        return _Call(
            "GET",
            f"/v1/users/{_q(user_id)}/sessions/{_q(session_id)}/turns",
            lambda r: [_turn(d, user_id) for d in r.json()["turns"]],
            params=params,
        )

    def _bookmarks(self, user_id: str) -> _Call[list[Bookmark]]:
        return _Call(
            "GET", f"/v1/users/{_q(user_id)}/bookmarks", lambda r: [_bookmark(d, user_id) for d in r.json()]
        )

    def _jobs(self, status: str | None, user_id: str | None, limit: int) -> _Call[list[dict[str, Any]]]:
        params: dict[str, Any] = {"limit": limit}
        if status is not None:
            params["status"] = status
        if user_id is not None:
            params["user"] = user_id
        return _Call("GET", "/v1/jobs", lambda r: list(r.json()), params=params)

    def _delete(self, path: str) -> _Call[int]:
        return _Call("DELETE", path, lambda r: int(r.json()["turns"]))

    def _health(self) -> _Call[dict[str, Any]]:
        return _Call("GET", "/healthz", lambda r: dict(r.json()))


def _turn_result(reply: str | None, trace: dict[str, Any] | None) -> TurnResult:
    trace = trace or {}
    return TurnResult(
        reply=reply,
        messages=[],  # what the upstream saw stays on the server: the trace says how it was built
        trace=trace,
        turn_ids=[int(i) for i in trace.get("turn_ids") or []],
        jobs=[int(j["id"]) for j in trace.get("jobs") or [] if isinstance(j, dict) and "id" in j],
    )


def _headers(api_key: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    out = {"User-Agent": "memsched-client"}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    out.update(headers or {})
    return out


class ReplyStream:
    """A streamed reply: iterate it for the text deltas as they arrive. `trace_id` is known as soon as
    the response starts; `text` holds what has arrived so far."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.trace_id: str = response.headers.get(TRACE_HEADER, "")
        self.text = ""

    def __iter__(self) -> Iterator[str]:
        try:
            for delta in _sse_events(self._response.iter_lines()):
                if delta:
                    self.text += delta
                    yield delta
        finally:
            self._response.close()

    def close(self) -> None:
        self._response.close()


class AsyncReplyStream:
    """`ReplyStream` for `AsyncClient`: `async for delta in stream`."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.trace_id: str = response.headers.get(TRACE_HEADER, "")
        self.text = ""

    async def __aiter__(self) -> AsyncIterator[str]:
        try:
            async for line in self._response.aiter_lines():
                for delta in _sse_events(iter([line])):
                    if delta:
                        self.text += delta
                        yield delta
                if line.strip() == "data: [DONE]":
                    return
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


class Client(_Calls):
    """memsched over HTTP, synchronously: the `Memory` methods (add, add_many, search, context), the
    `Scheduler`'s (turn, trace, traces) and the service's reads (sessions, session_turns, bookmarks,
    jobs, health). `api_key` is sent as `Authorization: Bearer <key>`."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = http or httpx.Client(
            base_url=self.base_url, timeout=timeout, headers=_headers(api_key, headers)
        )
        self._owns_http = http is None

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: _Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, params=call.params or None, json=call.body)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if call.missing_ok and response.status_code == 404:
            return None  # type: ignore[return-value]
        _raise_for(response)
        return call.parse(response)

    # -- Memory's methods ----------------------------------------------------------------------------

    def add(
        self,
        user_id: str,
        session_id: str,
        role: Role,
        content: str,
        *,
        created_at: datetime | None = None,
        timezone: str | None = None,
    ) -> Turn:
        """Record one turn. Returns it with its id (`meta` holds the jobs and commands it queued).
        `timezone` (IANA) resolves the turn's relative time and is remembered as the user's."""
        return self._run(self._add(user_id, session_id, role, content, created_at, timezone))

    def add_many(self, turns: Sequence[Turn]) -> list[Turn]:
        """Record turns in order, one request each."""
        return [self.add(t.user_id, t.session_id, t.role, t.content, created_at=t.created_at) for t in turns]

    def search(self, user_id: str, query: str, limit: int = 10) -> list[SearchHit]:
        """The user's turns most relevant to `query`, best first, with per-layer scores."""
        return self._run(self._search(user_id, query, limit))

    def context(
        self,
        user_id: str,
        message: str,
        *,
        session_id: str | None = None,
        now: datetime | None = None,
        budget: int = UNSET,
        record: bool = False,
        timezone: str | None = None,
        system_prompt: str | None = None,
    ) -> ContextResult:
        """The messages for your own LLM call and the trace of how they were chosen (`record` also
        stores `message` as a user turn of `session_id`; `system_prompt` is your app's persona, the
        start of the system message, as `Memory.context` takes it)."""
        return self._run(
            self._context(user_id, message, session_id, now, budget, record, timezone, system_prompt)
        )

    # -- Scheduler's methods ---------------------------------------------------------------------------

    def turn(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        model: str | None = None,
        **params: Any,
    ) -> TurnResult:
        """Answer `message` with the service's upstream LLM and memory (`params`: temperature, ...)."""
        body = _chat_body(
            user_id,
            session_id,
            message,
            now=now,
            timezone=timezone,
            system_prompt=system_prompt,
            model=model,
            stream=False,
            params=params,
        )
        reply, trace_id = self._run(self._chat(body))
        return _turn_result(reply, self.trace(trace_id) if trace_id else None)

    def stream(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        model: str | None = None,
        **params: Any,
    ) -> ReplyStream:
        """Like `turn`, streamed: iterate the result for the reply's text as it arrives."""
        body = _chat_body(
            user_id,
            session_id,
            message,
            now=now,
            timezone=timezone,
            system_prompt=system_prompt,
            model=model,
            stream=True,
            params=params,
        )
        try:
            request = self._http.build_request("POST", "/v1/chat/completions", json=body)
            response = self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if not response.is_success:
            response.read()
            response.close()
            _raise_for(response)
        return ReplyStream(response)

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The stored trace of a turn, or None when there is none with that id."""
        return self._run(self._trace(trace_id))

    def traces(self, user_id: str, session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The user's (or one session's) latest traces, newest first."""
        return self._run(self._traces(user_id, session_id, limit))

    # -- the service's reads ---------------------------------------------------------------------------

    def sessions(self, user_id: str) -> list[Session]:
        return self._run(self._sessions(user_id))

    def session_turns(
        self, user_id: str, session_id: str, *, limit: int = 50, before: int | None = None
    ) -> list[Turn]:
        """The session's last `limit` turns (before seq `before`), oldest first."""
        return self._run(self._session_turns(user_id, session_id, limit, before))

    def bookmarks(self, user_id: str) -> list[Bookmark]:
        return self._run(self._bookmarks(user_id))

    def jobs(
        self, status: str | None = None, *, user_id: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        return self._run(self._jobs(status, user_id, limit))

    def health(self) -> dict[str, Any]:
        return self._run(self._health())

    # -- forgetting (hard deletes, with everything made from the turns) ------------------------------

    def delete_turns(self, user_id: str, turn_ids: Sequence[int]) -> int:
        """Delete turns and what was derived from them; returns how many turns went."""
        return sum(self._run(self._delete(f"/v1/users/{_q(user_id)}/turns/{int(i)}")) for i in turn_ids)

    def delete_session(self, user_id: str, session_id: str) -> int:
        return self._run(self._delete(f"/v1/users/{_q(user_id)}/sessions/{_q(session_id)}"))

    def delete_user(self, user_id: str) -> int:
        """Delete the user and everything stored about them; returns how many turns went."""
        return self._run(self._delete(f"/v1/users/{_q(user_id)}"))


class AsyncClient(_Calls):
    """`Client` for asyncio: the same methods, as coroutines; `await stream(...)` gives an async iterator."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = http or httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, headers=_headers(api_key, headers)
        )
        self._owns_http = http is None

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, call: _Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, params=call.params or None, json=call.body
            )
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if call.missing_ok and response.status_code == 404:
            return None  # type: ignore[return-value]
        _raise_for(response)
        return call.parse(response)

    async def add(
        self,
        user_id: str,
        session_id: str,
        role: Role,
        content: str,
        *,
        created_at: datetime | None = None,
        timezone: str | None = None,
    ) -> Turn:
        return await self._run(self._add(user_id, session_id, role, content, created_at, timezone))

    async def add_many(self, turns: Sequence[Turn]) -> list[Turn]:
        return [
            await self.add(t.user_id, t.session_id, t.role, t.content, created_at=t.created_at) for t in turns
        ]

    async def search(self, user_id: str, query: str, limit: int = 10) -> list[SearchHit]:
        return await self._run(self._search(user_id, query, limit))

    async def context(
        self,
        user_id: str,
        message: str,
        *,
        session_id: str | None = None,
        now: datetime | None = None,
        budget: int = UNSET,
        record: bool = False,
        timezone: str | None = None,
        system_prompt: str | None = None,
    ) -> ContextResult:
        return await self._run(
            self._context(user_id, message, session_id, now, budget, record, timezone, system_prompt)
        )

    async def turn(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        model: str | None = None,
        **params: Any,
    ) -> TurnResult:
        body = _chat_body(
            user_id,
            session_id,
            message,
            now=now,
            timezone=timezone,
            system_prompt=system_prompt,
            model=model,
            stream=False,
            params=params,
        )
        reply, trace_id = await self._run(self._chat(body))
        return _turn_result(reply, await self.trace(trace_id) if trace_id else None)

    async def stream(
        self,
        user_id: str,
        session_id: str,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        system_prompt: str | None = None,
        model: str | None = None,
        **params: Any,
    ) -> AsyncReplyStream:
        body = _chat_body(
            user_id,
            session_id,
            message,
            now=now,
            timezone=timezone,
            system_prompt=system_prompt,
            model=model,
            stream=True,
            params=params,
        )
        try:
            request = self._http.build_request("POST", "/v1/chat/completions", json=body)
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if not response.is_success:
            await response.aread()
            await response.aclose()
            _raise_for(response)
        return AsyncReplyStream(response)

    async def trace(self, trace_id: str) -> dict[str, Any] | None:
        return await self._run(self._trace(trace_id))

    async def traces(
        self, user_id: str, session_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        return await self._run(self._traces(user_id, session_id, limit))

    async def sessions(self, user_id: str) -> list[Session]:
        return await self._run(self._sessions(user_id))

    async def session_turns(
        self, user_id: str, session_id: str, *, limit: int = 50, before: int | None = None
    ) -> list[Turn]:
        return await self._run(self._session_turns(user_id, session_id, limit, before))

    async def bookmarks(self, user_id: str) -> list[Bookmark]:
        return await self._run(self._bookmarks(user_id))

    async def jobs(
        self, status: str | None = None, *, user_id: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        return await self._run(self._jobs(status, user_id, limit))

    async def health(self) -> dict[str, Any]:
        return await self._run(self._health())

    async def delete_turns(self, user_id: str, turn_ids: Sequence[int]) -> int:
        return sum(
            [await self._run(self._delete(f"/v1/users/{_q(user_id)}/turns/{int(i)}")) for i in turn_ids]
        )

    async def delete_session(self, user_id: str, session_id: str) -> int:
        return await self._run(self._delete(f"/v1/users/{_q(user_id)}/sessions/{_q(session_id)}"))

    async def delete_user(self, user_id: str) -> int:
        return await self._run(self._delete(f"/v1/users/{_q(user_id)}"))
