"""The proxy's upstream: an async OpenAI-compatible client that forwards request bodies as they are.

Unlike `memsched.llm.client` (which builds its own requests for memsched's helper calls), this client
sends whatever body the proxy assembled — the client's sampling parameters, tools, response_format —
and hands back the upstream's JSON, or its stream chunk by chunk. Connection errors, timeouts, 429
and 5xx are retried (`retries` times, exponential backoff) only before anything has been received;
every failure is an `LLMError` naming the URL (the API key scrubbed).

The client is aiohttp's: under 50 concurrent turns httpx's connection pool cost ~2.5 ms of CPU per
request (it scans every pooled connection on each request and response), aiohttp ~0.4 ms, and the
proxy's event loop is the one thread every turn passes through (BENCHMARKS.md, "Proxy throughput").
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

import aiohttp

from memsched.config import Config
from memsched.errors import LLMError, UpstreamStatusError
from memsched.llm.client import count_call, split_credentials


class Upstream:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        timeout: float = 20.0,
        retries: int = 2,
        backoff: float = 0.2,
    ) -> None:
        # A user:password in the URL goes as basic auth, as aiohttp would send it from the URL, and
        # out of the URL that error messages (a client's 502), traces and logs name.
        self.base_url, creds = split_credentials(base_url.rstrip("/"))
        self._auth = aiohttp.BasicAuth(*creds) if creds else None
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._key = api_key or None
        self._session: aiohttp.ClientSession | None = None
        self._proxy = env_proxy(self.url)

    @property
    def _http(self) -> aiohttp.ClientSession:
        """The connection pool, made on first use inside the event loop that uses it."""
        if self._session is None:
            # Each phase (connecting, waiting for the next bytes) gets `timeout`, as httpx's
            # Timeout(t) did: a long stream is fine while it keeps sending.
            timeout = aiohttp.ClientTimeout(
                total=None, connect=self.timeout, sock_connect=self.timeout, sock_read=self.timeout
            )
            self._session = aiohttp.ClientSession(
                timeout=timeout,
                connector=aiohttp.TCPConnector(limit=100),
                # The proxy environment is read once (`env_proxy`): aiohttp's trust_env reads it,
                # and ~/.netrc, on every request, in a thread of the default executor.
                trust_env=False,
                auth=self._auth,
            )
        return self._session

    @classmethod
    def from_config(cls, config: Config) -> Upstream | None:
        if not config.upstream_base_url or not config.upstream_model:
            return None
        return cls(
            config.upstream_base_url,
            config.upstream_api_key,
            config.upstream_model,
            timeout=config.upstream_timeout,
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _post(self, body: dict[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return self._http.post(self.url, data=data, headers=self._headers(), proxy=self._proxy)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    async def _sleep(self, attempt: int) -> None:
        if attempt:
            await asyncio.sleep(self.backoff * 2 ** (attempt - 1))

    async def _exchange(self, url: str, body: dict[str, Any]) -> tuple[int, str, bytes, str | None]:
        """POST `body` to `url`; connection errors, timeouts, 429 and 5xx are retried (`retries`
        times, exponential backoff). Returns the last answer as (status, content type, body) — a
        retryable status once the attempts are used up — with its Retry-After header, or raises
        `LLMError` when none came."""
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            await self._sleep(attempt)
            try:
                async with self._http.post(
                    url, data=data, headers=self._headers(), proxy=self._proxy
                ) as resp:
                    status, raw = resp.status, await resp.read()
                    kind = resp.headers.get("content-type", "application/json")
                    retry_after = resp.headers.get("retry-after")
            except TimeoutError:
                last = f"timed out after {self.timeout:g}s"
                continue
            except aiohttp.ClientError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
                continue
            if _retryable(status) and attempt < self.retries:
                continue
            return status, kind, raw, retry_after
        raise LLMError(self._scrub(f"POST {url} failed after {self.retries + 1} attempt(s): {last}"))

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` (non-streaming) and return the upstream's JSON completion."""
        count_call("reply")
        status, _, raw, retry_after = await self._exchange(self.url, body)
        if not 200 <= status < 300:
            raise UpstreamStatusError(self._status_message(self.url, status, raw), status, retry_after)
        try:
            data = json.loads(raw)
        except ValueError:
            raise LLMError(self._scrub(f"invalid response from {self.url}: body is not JSON")) from None
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise LLMError(self._scrub(_no_answer(data, self.url, "no choices")))
        return _checked_completion(data, self.url)

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """POST `body` with `stream: true`; yield each SSE chunk (parsed JSON) as it arrives.

        Closing the iterator (or cancelling its consumer) closes the upstream connection.
        """
        count_call("reply")
        last = ""
        status: int | None = None  # the last HTTP error status, with its Retry-After
        retry_after: str | None = None
        for attempt in range(self.retries + 1):
            await self._sleep(attempt)
            received = False
            try:
                async with self._post(body) as resp:
                    if not 200 <= resp.status < 300:
                        last = f"HTTP {resp.status}: {_text(await resp.read())[:300]}"
                        status, retry_after = resp.status, resp.headers.get("retry-after")
                        if _retryable(resp.status):
                            continue
                        raise UpstreamStatusError(
                            self._scrub(f"POST {self.url} failed: {last}"), status, retry_after
                        )
                    if "json" in resp.headers.get("content-type", ""):
                        # A server that ignores `stream: true` and answers whole: one chunk of it.
                        raw = await resp.read()
                        try:
                            whole = json.loads(raw)
                        except ValueError:
                            raise LLMError(f"invalid response from {self.url}: body is not JSON") from None
                        try:
                            chunk = _as_chunk(whole, self.url)
                        except LLMError as exc:
                            raise LLMError(self._scrub(str(exc))) from None
                        yield chunk
                        return
                    finished = False
                    async for line in _lines(resp.content):
                        if not line.startswith("data:"):
                            continue  # blank separators, comments, "event:" lines
                        payload = line[len("data:") :].strip()
                        if payload == "[DONE]":
                            return
                        try:
                            chunk = json.loads(payload)
                        except ValueError:
                            raise LLMError(
                                f"invalid stream chunk from {self.url}: {payload[:200]!r}"
                            ) from None
                        if not isinstance(chunk, dict):
                            raise LLMError(f"invalid stream chunk from {self.url}: {payload[:200]!r}")
                        if "error" in chunk and not chunk.get("choices"):
                            raise LLMError(self._scrub(f"the upstream stream failed: {chunk['error']}"))
                        problem = _chunk_problem(chunk)
                        if problem:
                            raise LLMError(f"invalid stream chunk from {self.url}: {problem}")
                        received = True
                        finished = finished or any(
                            isinstance(c, dict) and c.get("finish_reason") for c in chunk.get("choices") or []
                        )
                        yield chunk
                    if not finished:
                        # No [DONE] and no finish_reason: the connection closed mid-reply.
                        raise LLMError(f"the stream from {self.url} ended before the reply was finished")
                    return
            except TimeoutError:
                last = f"timed out after {self.timeout:g}s"
            except aiohttp.ClientError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
            if received:
                raise LLMError(self._scrub(f"the stream from {self.url} broke off: {last}"))
            status = None  # this attempt's failure was not an HTTP status
        self._give_up(self.url, last, status, retry_after)

    async def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` (non-streaming) to the upstream's `/responses` (the Responses API) and return its
        JSON response; an HTTP error is an `UpstreamStatusError` (a 404: the upstream has no
        Responses API, or no such model)."""
        count_call("reply")
        url = f"{self.base_url}/responses"
        status, _, raw, retry_after = await self._exchange(url, body)
        if not 200 <= status < 300:
            raise UpstreamStatusError(self._status_message(url, status, raw), status, retry_after)
        try:
            data = json.loads(raw)
        except ValueError:
            raise LLMError(self._scrub(f"invalid response from {url}: body is not JSON")) from None
        if not isinstance(data, dict) or not isinstance(data.get("output"), list):
            raise LLMError(self._scrub(_no_answer(data, url, "no output list")))
        return data

    def _give_up(self, url: str, last: str, status: int | None, retry_after: str | None) -> NoReturn:
        """After the last attempt of a stream: the upstream's own status if the last failure was one."""
        message = self._scrub(f"POST {url} failed after {self.retries + 1} attempt(s): {last}")
        if status is not None:
            raise UpstreamStatusError(message, status, retry_after)
        raise LLMError(message)

    def _status_message(self, url: str, status: int, raw: bytes) -> str:
        last = f"HTTP {status}: {_text(raw)[:300]}"
        if _retryable(status):
            return self._scrub(f"POST {url} failed after {self.retries + 1} attempt(s): {last}")
        return self._scrub(f"POST {url} failed: {last}")

    async def events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[SSEvent, None]:
        """POST `body` to the upstream's `path` (e.g. "responses") with `stream: true`; yield each
        server-sent event as it arrives: its bytes as sent (to relay unchanged) and its data parsed.

        Retried like `stream` only before the first event; an HTTP error is an `UpstreamStatusError`,
        a connection that breaks off an `LLMError`. An upstream that answers whole (JSON, ignoring
        `stream`) yields one event whose `data` is that JSON and whose `whole` is True. Closing the
        iterator closes the upstream connection."""
        count_call("reply")
        url = f"{self.base_url}/{path}"
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        last = ""
        status: int | None = None
        retry_after: str | None = None
        for attempt in range(self.retries + 1):
            await self._sleep(attempt)
            received = False
            try:
                async with self._http.post(
                    url, data=data, headers=self._headers(), proxy=self._proxy
                ) as resp:
                    if not 200 <= resp.status < 300:
                        raw = await resp.read()
                        last = f"HTTP {resp.status}: {_text(raw)[:300]}"
                        status, retry_after = resp.status, resp.headers.get("retry-after")
                        if _retryable(resp.status):
                            continue
                        raise UpstreamStatusError(self._status_message(url, status, raw), status, retry_after)
                    if "json" in resp.headers.get("content-type", ""):
                        raw = await resp.read()
                        try:
                            whole = json.loads(raw)
                        except ValueError:
                            raise LLMError(f"invalid response from {url}: body is not JSON") from None
                        yield SSEvent(raw, None, whole if isinstance(whole, dict) else {}, whole=True)
                        return
                    lines: list[str] = []
                    async for line in _lines(resp.content):
                        if line:
                            lines.append(line)
                            continue
                        if lines:
                            received = True
                            yield _event(lines, url)
                            lines = []
                    if lines:
                        received = True
                        yield _event(lines, url)
                    return
            except TimeoutError:
                last = f"timed out after {self.timeout:g}s"
            except aiohttp.ClientError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
            if received:
                raise LLMError(self._scrub(f"the stream from {url} broke off: {last}"))
            status = None
        self._give_up(url, last, status, retry_after)

    def request(self, method: str, path: str, *, query: str, headers: dict[str, str], data: bytes) -> Any:
        """One request to the upstream's `path` as the client sent it (`memsched.server.passthrough`),
        with memsched's upstream key; the caller enters the returned context manager and reads the
        response as it arrives. Not retried: the client's SDK retries what it may."""
        url = f"{self.base_url}/{path}" + (f"?{query}" if query else "")
        sent = {**headers, **{k: v for k, v in self._headers().items() if k != "Content-Type"}}
        return self._http.request(
            method, url, data=data or None, headers=sent, proxy=self._proxy, auto_decompress=False
        )

    async def relay(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """POST `body` to the upstream's `path` (e.g. "embeddings") and hand back its answer as it is:
        (status, content type, body). For the OpenAI endpoints that memsched does not change, so a
        client pointed at the proxy can use them as it would the upstream. Retried like replies; a
        4xx comes back to the client unchanged."""
        status, kind, raw, _ = await self._exchange(f"{self.base_url}/{path}", body)
        return status, kind, raw

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


@dataclass(frozen=True, slots=True)
class SSEvent:
    """One server-sent event of an upstream stream: `raw` its bytes as sent (the blank line that ends
    it included), `name` its `event:` field, `data` its `data:` parsed (None: `[DONE]` or not JSON)."""

    raw: bytes
    name: str | None
    data: dict[str, Any] | None
    whole: bool = False


def _event(lines: list[str], url: str) -> SSEvent:
    name: str | None = None
    payload: list[str] = []
    for line in lines:
        field_name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field_name == "event":
            name = value
        elif field_name == "data":
            payload.append(value)
    text = "\n".join(payload)
    data: dict[str, Any] | None = None
    if payload and text.strip() != "[DONE]":
        try:
            parsed = json.loads(text)
        except ValueError:
            raise LLMError(f"invalid stream event from {url}: {text[:200]!r}") from None
        data = parsed if isinstance(parsed, dict) else None
    raw = ("\n".join(lines) + "\n\n").encode("utf-8")
    return SSEvent(raw, name, data)


def env_proxy(url: str) -> str | None:
    """The proxy that HTTP(S)_PROXY / ALL_PROXY name for `url`, unless NO_PROXY exempts its host."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


async def _lines(content: aiohttp.StreamReader) -> AsyncGenerator[str, None]:
    """The lines of a response body as they arrive ("\n" or "\r\n" ends one; no length limit)."""
    pending = b""
    async for data in content.iter_any():
        pending += data
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield _text(line).rstrip("\r")
    if pending:
        yield _text(pending).rstrip("\r")


def _no_answer(data: Any, url: str, missing: str) -> str:
    """Why a 2xx body without an answer is refused: the upstream's own `error` when it sent one with
    a 200 (some gateways do), else what is missing."""
    error = data.get("error") if isinstance(data, dict) else None
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        return f"the upstream answered {url} with an error: {str(message or error)[:300]}"
    return f"invalid response from {url}: {missing}"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _message_problem(message: Any, where: str, *, delta: bool = False) -> str | None:
    """What in an upstream's message (or stream delta) memsched cannot read, or None. Only the fields
    memsched reads are checked: content, and each tool call's index and function."""
    if message is None and delta:
        return None
    if not isinstance(message, dict):
        return f"{where} is {_kind(message)}, not an object"
    content = message.get("content")
    if not (content is None or isinstance(content, str) or (isinstance(content, list) and not delta)):
        return f"{where}.content is {_kind(content)}, not a string"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls is {_kind(calls)}, not a list"
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            return f"{where}.tool_calls.{i} is {_kind(call)}, not an object"
        index = call.get("index", 0)
        if isinstance(index, bool) or not isinstance(index, int):
            return f"{where}.tool_calls.{i}.index is {_kind(index)}, not an integer"
        function = call.get("function")
        if not (isinstance(function, dict) or (function is None and delta)):
            return f"{where}.tool_calls.{i}.function is {_kind(function)}, not an object"
    return None


def _checked_completion(data: dict[str, Any], url: str) -> dict[str, Any]:
    """`data`, a completion whose choice 0 memsched can read (an `LLMError` → 502 otherwise, never
    a crash in the proxy); a `usage` that is not an object is dropped (the tokens are counted)."""
    choice = data["choices"][0]
    if not isinstance(choice, dict):
        raise LLMError(f"invalid response from {url}: choices.0 is {_kind(choice)}, not an object")
    problem = _message_problem(choice.get("message"), "choices.0.message")
    if problem:
        raise LLMError(f"invalid response from {url}: {problem}")
    if "usage" in data and not isinstance(data["usage"], dict):
        del data["usage"]
    return data


def _chunk_problem(chunk: dict[str, Any]) -> str | None:
    """What in a stream chunk memsched cannot read, or None (a `usage` that is not an object is
    dropped from `chunk`)."""
    if "usage" in chunk and not isinstance(chunk["usage"], dict):
        del chunk["usage"]
    choices = chunk.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        return f"choices is {_kind(choices)}, not a list"
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            return f"choices.{i} is {_kind(choice)}, not an object"
        problem = _message_problem(choice.get("delta"), f"choices.{i}.delta", delta=True)
        if problem:
            return problem
    return None


def _as_chunk(data: Any, url: str) -> dict[str, Any]:
    """A whole completion as one stream chunk (delta = the message, tool calls indexed)."""
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise LLMError(_no_answer(data, url, "no choices"))
    choice = _checked_completion(data, url)["choices"][0]
    message = dict(choice["message"])
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts: their text
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    chunk: dict[str, Any] = {
        "id": data.get("id"),
        "object": "chat.completion.chunk",
        "created": data.get("created"),
        "model": data.get("model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason") or "stop"}],
    }
    if data.get("usage"):
        chunk["usage"] = data["usage"]
    return chunk


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500
