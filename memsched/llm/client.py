"""One OpenAI-compatible chat client, shared by every LLM call memsched makes.

memsched talks to any server that speaks the OpenAI `/v1/chat/completions` dialect (OpenAI itself,
vLLM, llama.cpp, Ollama, LiteLLM...). Nothing here imports the OpenAI SDK: one `httpx.Client`, a
small retry loop, and a per-purpose call counter that traces and metrics read.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ValidationError

from memsched.errors import ConfigError, LLMError

if TYPE_CHECKING:
    from memsched.config import Config

log = logging.getLogger(__name__)

# The purposes memsched uses; any string is accepted, these are the ones the metrics expect.
PURPOSES = ("reply", "bookmark", "rerank", "summary", "judge", "decompose")

# Calls per purpose since start (or since `reset_llm_calls`). One logical call counts once,
# however many HTTP attempts its retries took, and it counts whether it succeeded or not.
CALLS: Counter[str] = Counter()
_CALLS_LOCK = threading.Lock()


def count_call(purpose: str) -> None:
    """Record one LLM call made for `purpose` (thread-safe)."""
    with _CALLS_LOCK:
        CALLS[purpose] += 1


def llm_calls() -> dict[str, int]:
    """A snapshot of the number of LLM calls made so far, per purpose."""
    with _CALLS_LOCK:
        return dict(CALLS)


def reset_llm_calls() -> None:
    """Forget all counted calls (for tests and for per-run reports)."""
    with _CALLS_LOCK:
        CALLS.clear()


@dataclass(slots=True)
class ChatResult:
    """One chat completion: the text, any tool calls (OpenAI format), token usage and the raw reply."""

    content: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0
    model: str = ""


class ChatClient(Protocol):
    """What memsched needs from a chat model. `OpenAIChatClient` is the implementation; tests may fake it."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str = "reply",
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ChatResult:
        """One completion for `messages`; raises `LLMError` when the call fails."""
        ...


def _is_retryable_status(status: int) -> bool:
    # Rate limiting and server-side failures may pass; any other 4xx means the request itself is
    # wrong, and sending it again would only fail again.
    return status == 429 or status >= 500


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its `user:password@`, and those as (user, password) for basic auth (None when it
    has none): the URL is what error messages name (a client's 502, a trace, a job's last_error, a
    log), so the password must not be in it. The HTTP client sends the pair as it would have from
    the URL."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    creds = (unquote(parts.username or ""), unquote(parts.password or ""))
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), creds


def post_json(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str],
    timeout: float,
    retries: int,
    backoff: float,
    secret: str | None = None,
    auth: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded JSON object of a 2xx reply.

    Retries (`retries` extra attempts, sleeping backoff, 2*backoff, ...) on connect errors, timeouts,
    429 and 5xx. Raises `LLMError` naming the URL and the status or the timeout; `secret` (the API
    key) is scrubbed from every message; `auth` is sent as basic auth (`split_credentials`).
    """
    last: str = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            resp = http.post(
                url, json=body, headers=headers, timeout=timeout, auth=auth or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.TimeoutException:
            last = f"timed out after {timeout:g}s"
            continue
        except httpx.TransportError as exc:
            last = f"connection failed ({type(exc).__name__}: {exc})"
            continue
        if resp.is_success:
            try:
                data = resp.json()
            except ValueError:
                raise LLMError(
                    _scrub(f"invalid response from {url}: HTTP {resp.status_code} body is not JSON", secret)
                ) from None
            if not isinstance(data, dict):
                raise LLMError(f"invalid response from {url}: expected a JSON object")
            return data
        last = f"HTTP {resp.status_code}: {resp.text[:300]}"
        if not _is_retryable_status(resp.status_code):
            raise LLMError(_scrub(f"POST {url} failed: {last}", secret))
    attempts = retries + 1
    raise LLMError(_scrub(f"POST {url} failed after {attempts} attempt(s): {last}", secret))


def _scrub(text: str, secret: str | None) -> str:
    # A misbehaving server may echo request headers back; never let the key reach a log.
    return text.replace(secret, "***") if secret else text


class OpenAIChatClient:
    """A `ChatClient` for any OpenAI-compatible server.

    `base_url` includes the version prefix, like the OpenAI SDK (`https://api.openai.com/v1`); a
    trailing slash is fine. One `httpx.Client` is reused for every call (connection pooling); the
    client is thread-safe. `close()` (or `with`) releases it.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout: float = 20.0,
        retries: int = 2,
        *,
        backoff: float = 0.2,
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url, self._auth = split_credentials(base_url.rstrip("/"))
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._api_key = api_key or None
        self._http = http or httpx.Client()
        self._owns_http = http is None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        # Only send what was asked for: some servers reject keys they do not know.
        if tools:
            body["tools"] = tools
        if response_format is not None:
            body["response_format"] = response_format
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str = "reply",
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ChatResult:
        """One chat completion. Counts one call for `purpose`; raises `LLMError` on any failure.

        `timeout` (seconds, default the client's) bounds each HTTP attempt, not the whole call.
        """
        count_call(purpose)
        body = self._body(messages, tools, response_format, max_tokens, temperature)
        started = time.perf_counter()
        data = post_json(
            self._http,
            self.url,
            body,
            headers=self._headers(),
            timeout=self.timeout if timeout is None else timeout,
            retries=self.retries,
            backoff=self.backoff,
            secret=self._api_key,
            auth=self._auth,
        )
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"invalid response from {self.url}: no choices[0].message") from None
        return ChatResult(
            content=message.get("content") or "",
            tool_calls=list(message.get("tool_calls") or []),
            usage=dict(data.get("usage") or {}),
            raw=data,
            elapsed_ms=elapsed_ms,
            model=str(data.get("model") or self.model),
        )

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str = "reply",
        timeout: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[str]:
        """Yield the content deltas of a streamed (`stream: true`, SSE) completion, in order.

        Nothing is sent until the first `next()`; errors (HTTP status, timeout, a malformed chunk)
        raise `LLMError` from the iteration. Retries happen only before the first byte arrives.
        """
        count_call(purpose)
        body = self._body(messages, None, None, max_tokens, temperature)
        body["stream"] = True
        timeout = self.timeout if timeout is None else timeout
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            yielded = False
            try:
                with self._http.stream(
                    "POST",
                    self.url,
                    json=body,
                    headers=self._headers(),
                    timeout=timeout,
                    auth=self._auth or httpx.USE_CLIENT_DEFAULT,
                ) as resp:
                    if not resp.is_success:
                        resp.read()
                        last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                        if _is_retryable_status(resp.status_code):
                            continue
                        raise LLMError(_scrub(f"POST {self.url} failed: {last}", self._api_key))
                    for delta in _sse_deltas(resp, self.url):
                        yielded = True
                        yield delta
                    return
            except httpx.TimeoutException:
                last = f"timed out after {timeout:g}s"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
            if yielded:
                # Deltas already reached the caller; a retry would repeat them.
                raise LLMError(_scrub(f"stream from {self.url} broke off: {last}", self._api_key))
        raise LLMError(
            _scrub(f"POST {self.url} failed after {self.retries + 1} attempt(s): {last}", self._api_key)
        )

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> OpenAIChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sse_deltas(resp: httpx.Response, url: str) -> Iterator[str]:
    """The content deltas of an OpenAI SSE stream, up to `data: [DONE]` or the end of the body."""
    for line in resp.iter_lines():
        if not line.startswith("data:"):
            continue  # blank separators, comments (": keep-alive"), "event:" lines
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            return
        try:
            chunk = json.loads(payload)
            choices = chunk.get("choices") or []
            delta = (choices[0].get("delta") or {}) if choices else {}
        except (ValueError, AttributeError, TypeError):
            raise LLMError(f"invalid stream chunk from {url}: {payload[:200]!r}") from None
        content = delta.get("content")
        if content:
            yield content


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text`, even inside ```json fences or surrounded by prose.

    Raises `ValueError` when there is none.
    """
    fenced = re.search(r"```(?:json|JSON)?\s*(.*?)```", text, re.DOTALL)
    candidates = [fenced.group(1), text] if fenced else [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON object found")


M = TypeVar("M", bound=BaseModel)


def complete_json(
    client: ChatClient,
    messages: list[dict[str, Any]],
    model_cls: type[M],
    *,
    purpose: str,
    timeout: float | None = None,
) -> M:
    """Ask for a JSON object (`response_format: json_object`) and return it validated as `model_cls`.

    Raises `LLMError("invalid JSON from LLM: ...")` when the reply holds no JSON object or the object
    does not validate; call failures raise `LLMError` as `complete` does.
    """
    result = client.complete(
        messages, purpose=purpose, response_format={"type": "json_object"}, timeout=timeout
    )
    try:
        return model_cls.model_validate(extract_json_object(result.content))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
    except ValueError as exc:
        problems = str(exc)
    # Not the reply itself: a model that answers in prose quotes the user's messages, and this error
    # is logged at WARNING and kept in a failed job's row, where a forget of those messages cannot
    # reach it. Its text goes to the DEBUG log only (SECURITY.md, "What memsched cannot delete").
    log.debug("%s reply that is not the JSON asked for: %r", purpose, result.content[:500])
    raise LLMError(
        f"invalid JSON from LLM ({purpose}): {problems} (a reply of {len(result.content)} characters;"
        " its text is logged at DEBUG)"
    )


def client_from_config(
    config: Config, which: Literal["helper", "upstream"] = "helper"
) -> OpenAIChatClient | None:
    """A client for memsched's helper LLM (falling back to the upstream) or for the upstream model.

    Returns None when the chosen LLM is not configured (no base URL or no model).
    """
    if which == "helper":
        helper = config.helper_llm()
        if helper is None:
            return None
        base_url, api_key, model = helper
        return OpenAIChatClient(base_url, api_key, model, timeout=config.llm_timeout)
    if which == "upstream":
        if not config.upstream_base_url or not config.upstream_model:
            return None
        return OpenAIChatClient(
            config.upstream_base_url,
            config.upstream_api_key,
            config.upstream_model,
            timeout=config.upstream_timeout,
        )
    raise ConfigError(f"unknown LLM {which!r}: choose 'helper' or 'upstream'")
