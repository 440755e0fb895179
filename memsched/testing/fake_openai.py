"""A deterministic fake OpenAI-compatible server for tests (memsched's and its users').

It is a real HTTP server on 127.0.0.1 (a free port) running in a background thread, so the code
under test goes through its real HTTP client, retries and timeouts included::

    with FakeOpenAI() as fake:
        fake.script("first reply", Fail(500), Delay(2.0, then="late"))
        fake.script_for("bookmark", '{"title": "x"}')
        client = OpenAIChatClient(fake.base_url, "key", "fake-model")

Chat replies come, in order of preference, from the first `script_for` queue whose text occurs in
a request message, then the `script` queue, then `responder(body)`. A request with `n` > 1 gets n
choices: choice 0 is the reply, choice k the same reply with ` [k]` after its content (streamed
interleaved, one choice per chunk, as OpenAI does).

The Responses API (`/responses`, whole or streamed as its events) answers from the same queues, a
dict reply's `tool_calls` becoming `function_call` output items; `serve_responses = False` makes it a
404, as on servers that have only chat completions. For the proxy's pass-through it also serves
legacy `/completions`, `/moderations`, `/files` (list, multipart upload, delete) and `/audio/speech`
(binary, streamed in pieces).

memsched's LLM labeller (`memsched.labeller`) asks about every routed user message in the background;
its requests are answered only from `script_labels` (else with a label that has no opinion, so the
rules' reading stands), never from `script` or `responder`, so that they do not take the replies a
test scripted for its turns; they are listed in `label_requests`, not in `chat_requests`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import numpy as np


@dataclass(frozen=True)
class Fail:
    """Answer with HTTP `status` and `body` (a dict is sent as JSON, a str as is), with `headers`."""

    status: int = 500
    body: dict[str, Any] | str = field(
        default_factory=lambda: {"error": {"message": "scripted failure", "type": "server_error"}}
    )
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` before answering with `then` (None: whatever would have come next)."""

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class Malformed:
    """Answer 200 with a body that is not valid JSON (or, when streaming, a broken SSE chunk)."""

    body: str = '{"choices": [ this is not json'


@dataclass(frozen=True)
class Hold:
    """Stream the first `after` pieces of `then`, wait until `gate` is set (at most `timeout` s), then
    send the rest: lets a test see chunks arrive while the upstream has not finished. Not streaming:
    wait for the gate, then answer."""

    gate: threading.Event
    then: Reply
    after: int = 1
    timeout: float = 30.0


@dataclass(frozen=True)
class Cut:
    """Stream the first `after` pieces of `then`, then close the connection (no finish, no [DONE])."""

    then: Reply
    after: int = 1


# A str is the reply content; a dict is a message ({"content": ..., "tool_calls": [...]}).
Reply = str | dict[str, Any] | Fail | Delay | Malformed | Hold | Cut
Responder = Callable[[dict[str, Any]], "Reply"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received: `path` (e.g. "/v1/chat/completions"), JSON `body`, and
    `headers` (case-insensitive)."""

    method: str
    path: str
    body: dict[str, Any]
    headers: httpx.Headers
    raw: bytes = b""  # the body as sent (a multipart upload's bytes)


# A phrase of memsched's caption prompt (llm/prompts/caption.txt): how the fake knows a vision request.
CAPTION_MARK = "Describe this photo"
# A phrase of memsched's labeller prompt (llm/prompts/mood_label.txt).
LABEL_MARK = "You label the latest message a user wrote to their companion"
# The labeller's answer when none is scripted: no opinion, nothing is corrected.
NO_LABEL = '{"mode": null, "mood": null, "intensity": null, "cause": null}'


def echo_responder(body: dict[str, Any]) -> Reply:
    """The default reply: `"ok: "` and the first 40 characters of the last user message."""
    users = [m for m in _messages(body) if m.get("role") == "user"]
    last = _text(users[-1].get("content")) if users else ""
    return f"ok: {last[:40]}"


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector: each lower-cased word hashed to a signed dimension (zeros if none)."""
    vec = np.zeros(dim, dtype=np.float64)
    for token in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vec[value % dim] += 1.0 if (value >> 32) & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    return [float(x) for x in (vec / norm if norm else vec)]


class FakeOpenAI:
    """The fake server. It starts on construction; `close()` (or leaving `with`) stops it.

    `base_url` ends in `/v1`, like the OpenAI SDK's. Every method is thread-safe.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        model: str = "fake-model",
        embed_dim: int = 64,
        api_key: str | None = None,
        usage: bool = True,
        chunk_delay: float = 0.0,
    ) -> None:
        self.responder: Responder = responder or echo_responder
        self.model = model
        self.embed_dim = embed_dim
        # When set, requests without `Authorization: Bearer <api_key>` get a 401.
        self.api_key = api_key
        # False: answers carry no `usage` (as some OpenAI-compatible servers do).
        self.usage = usage
        # Seconds between streamed chunks (a slow model).
        self.chunk_delay = chunk_delay
        # True: answer `stream: true` requests with a whole JSON completion (as some servers do).
        self.ignore_stream = False
        # False: `/responses` is a 404 (a server with chat completions only).
        self.serve_responses = True
        self.uploads: dict[str, bytes] = {}  # file id -> the multipart body it came in
        self.streams_finished = 0  # streams sent to the end
        self.streams_broken = 0  # streams whose client hung up before the end
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._queue: deque[Reply] = deque()
        self._routed: list[tuple[str, deque[Reply]]] = []
        self._embed_queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._counter = 0
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.port: int = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        # A short poll interval so close() returns promptly.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self._closed = False

    # --- scripting -----------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue chat replies, used first-in first-out before the responder."""
        with self._lock:
            self._queue.extend(replies)

    def script_for(self, match: str, *replies: Reply) -> None:
        """Queue chat replies for requests whose message text contains `match`."""
        with self._lock:
            for text, queue in self._routed:
                if text == match:
                    queue.extend(replies)
                    return
            self._routed.append((match, deque(replies)))

    def script_caption(self, *captions: Reply) -> None:
        """Queue replies for memsched's vision requests (`memsched.vision`: "Describe this photo …"):
        the fake then serves as the vision model too (its `chat_requests` show the image parts)."""
        self.script_for(CAPTION_MARK, *captions)

    def script_labels(self, *labels: Reply) -> None:
        """Queue replies for memsched's labeller requests (`memsched.labeller`: a JSON object such as
        `{"mode": "conflict", "mood": "upset", "intensity": 0.8, "cause": "..."}`). Unscripted labeller
        requests get `NO_LABEL`."""
        self.script_for(LABEL_MARK, *labels)

    def script_embeddings(self, *replies: Fail | Delay | Malformed) -> None:
        """Queue misbehaviours for `/embeddings` requests (normal vectors once the queue is empty)."""
        with self._lock:
            self._embed_queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completion requests received so far, except memsched's
        labeller requests (`label_requests`): those come in the background after any turn, and a
        test looking at "the last request" means the reply's."""
        return [b for b in self._chat_bodies() if not _is_label(b)]

    @property
    def label_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of memsched's labeller requests (`memsched.labeller`) received so far."""
        return [b for b in self._chat_bodies() if _is_label(b)]

    def _chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def response_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the Responses API requests (`/responses`) received so far."""
        return [r.body for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    def clear(self) -> None:
        """Drop recorded requests and every queued reply."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self._routed.clear()
            self._embed_queue.clear()

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the server and wake any pending `Delay` (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- used by the handler -------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_chat_reply(self, body: dict[str, Any]) -> Reply:
        text = _all_text(body)
        with self._lock:
            if LABEL_MARK in text:
                labels = next((q for match, q in self._routed if match == LABEL_MARK), None)
                return labels.popleft() if labels else NO_LABEL
            for match, queue in self._routed:
                if queue and match in text:
                    return queue.popleft()
            if self._queue:
                return self._queue.popleft()
        return self.responder(body)

    def _next_embed_reply(self) -> Reply | None:
        with self._lock:
            return self._embed_queue.popleft() if self._embed_queue else None

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _sleep(self, seconds: float) -> None:
        # Waiting on the stop event (not time.sleep) lets close() cut a Delay short.
        self._stop.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out hangs up before a Delay answers: expected, not worth a traceback.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/healthz":
            # Not the OpenAI API: another process's LiveServer polling a port this server took from
            # it (ports picked free, then bound) when test suites run side by side. Not recorded.
            self._send_json(404, {"error": {"message": "not found"}})
            return
        self.fake._record(RecordedRequest("GET", self.path, {}, httpx.Headers(self.headers.items())))
        if not self._authorized():
            return
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/")
        if path.endswith("/models"):
            model = {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "memsched-fake"}
            self._send_json(200, {"object": "list", "data": [model]})
        elif path.endswith("/files"):
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            with self.fake._lock:
                files = [
                    _file(fid, len(data), query.get("purpose")) for fid, data in self.fake.uploads.items()
                ]
            self._send_json(200, {"object": "list", "data": files, "query": query})
        else:
            self._send_json(404, _error(f"no route for GET {self.path}", "not_found"))

    def do_DELETE(self) -> None:
        self.fake._record(RecordedRequest("DELETE", self.path, {}, httpx.Headers(self.headers.items())))
        if not self._authorized():
            return
        path = urlsplit(self.path).path.rstrip("/")
        head, _, file_id = path.rpartition("/")
        with self.fake._lock:
            found = head.endswith("/files") and self.fake.uploads.pop(file_id, None) is not None
        if found:
            self._send_json(200, {"id": file_id, "object": "file", "deleted": True})
        else:
            self._send_json(404, _error(f"no file {file_id!r}", "not_found"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path.rstrip("/")
        if "multipart/form-data" in (self.headers.get("Content-Type") or ""):
            self.fake._record(
                RecordedRequest("POST", self.path, {}, httpx.Headers(self.headers.items()), raw)
            )
            if self._authorized():
                self._upload(path, raw)
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self.fake._record(RecordedRequest("POST", self.path, {}, httpx.Headers(self.headers.items())))
            self._send_json(400, _error("request body is not a JSON object", "invalid_request_error"))
            return
        self.fake._record(RecordedRequest("POST", self.path, body, httpx.Headers(self.headers.items()), raw))
        if not self._authorized():
            return
        if path.endswith("/chat/completions"):
            self._chat(body)
        elif path.endswith("/embeddings"):
            self._embeddings(body)
        elif path.endswith("/responses") and self.fake.serve_responses:
            self._responses(body)
        elif path.endswith("/completions"):
            self._completions(body)
        elif path.endswith("/moderations"):
            inputs = body.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            results = [{"flagged": "kill" in str(t).lower(), "categories": {}} for t in texts]
            self._send_json(
                200, {"id": f"modr-{self.fake._next_id()}", "model": "fake-mod", "results": results}
            )
        elif path.endswith("/audio/speech"):
            self._speech(body)
        else:
            self._send_json(404, _error(f"no route for POST {self.path}", "not_found"))

    def _authorized(self) -> bool:
        key = self.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_json(401, _error("invalid api key", "invalid_request_error"))
        return False

    # --- chat ----------------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_chat_reply(body)
        while isinstance(reply, Delay):
            self.fake._sleep(reply.seconds)
            reply = reply.then if reply.then is not None else self.fake._next_chat_reply(body)
        hold: Hold | None = None
        cut: Cut | None = None
        if isinstance(reply, Cut):
            cut, reply = reply, reply.then
        if isinstance(reply, Hold):
            hold, reply = reply, reply.then
            if not body.get("stream"):
                hold.gate.wait(hold.timeout)
                hold = None
        if self._misbehave(reply, stream=bool(body.get("stream"))):
            return
        message = _message(reply)
        messages = [message, *(_variant(message, k) for k in range(1, _n(body)))]
        if body.get("stream") and not self.fake.ignore_stream:
            try:
                self._stream(messages, body, hold, cut)
                with self.fake._lock:
                    self.fake.streams_finished += 1
            except OSError:  # the client hung up mid-stream
                with self.fake._lock:
                    self.fake.streams_broken += 1
            return
        completion_id = f"chatcmpl-fake-{self.fake._next_id()}"
        self._send_json(
            200,
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or self.fake.model,
                "choices": [
                    {
                        "index": k,
                        "message": m,
                        "finish_reason": "tool_calls" if m.get("tool_calls") else "stop",
                    }
                    for k, m in enumerate(messages)
                ],
                **({"usage": _usage(body, message.get("content") or "")} if self.fake.usage else {}),
            },
        )

    def _stream(
        self,
        messages: list[dict[str, Any]],
        body: dict[str, Any],
        hold: Hold | None = None,
        cut: Cut | None = None,
    ) -> None:
        completion_id = f"chatcmpl-fake-{self.fake._next_id()}"
        model = body.get("model") or self.fake.model

        def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        # HTTP/1.0 without Content-Length: the body ends when the connection closes.
        # With n > 1 the choices' chunks take turns, one choice per chunk.
        streams = [_choice_chunks(lambda d, f=None, k=k: chunk(k, d, f), m) for k, m in enumerate(messages)]
        pieces: list[bytes] = []
        for step in range(max(len(c) for c in streams)):
            pieces.extend(c[step] for c in streams if step < len(c))
        if self.fake.usage and (body.get("stream_options") or {}).get("include_usage"):
            usage = {**_usage(body, messages[0].get("content") or "")}
            tail: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": usage,
            }
            pieces.append(f"data: {json.dumps(tail)}\n\n".encode())
        pieces.append(b"data: [DONE]\n\n")
        for i, piece_bytes in enumerate(pieces):
            if cut is not None and i == cut.after + 1:
                return  # the handler ends: the connection closes mid-reply
            if hold is not None and i == hold.after + 1:
                hold.gate.wait(hold.timeout)
            elif i and self.fake.chunk_delay:
                self.fake._sleep(self.fake.chunk_delay)
            self.wfile.write(piece_bytes)
            self.wfile.flush()

    # --- the Responses API ----------------------------------------------------------------------

    def _responses(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_chat_reply(body)
        while isinstance(reply, Delay):
            self.fake._sleep(reply.seconds)
            reply = reply.then if reply.then is not None else self.fake._next_chat_reply(body)
        hold: Hold | None = None
        cut: Cut | None = None
        if isinstance(reply, Cut):
            cut, reply = reply, reply.then
        if isinstance(reply, Hold):
            hold, reply = reply, reply.then
            if not body.get("stream"):
                hold.gate.wait(hold.timeout)
                hold = None
        stream = bool(body.get("stream")) and not self.fake.ignore_stream
        if self._misbehave(reply, stream=stream):
            return
        n = self.fake._next_id()
        response = _response(f"resp_fake_{n}", n, body.get("model") or self.fake.model, body, _message(reply))
        if not self.fake.usage:
            response["usage"] = None
        if not stream:
            self._send_json(200, response)
            return
        try:
            self._send_events(_response_events(response), hold, cut)
            with self.fake._lock:
                self.fake.streams_finished += 1
        except OSError:
            with self.fake._lock:
                self.fake.streams_broken += 1

    def _send_events(self, pieces: list[bytes], hold: Hold | None, cut: Cut | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for i, piece in enumerate(pieces):
            if cut is not None and i == cut.after + 1:
                return  # the connection closes mid-stream
            if hold is not None and i == hold.after + 1:
                hold.gate.wait(hold.timeout)
            elif i and self.fake.chunk_delay:
                self.fake._sleep(self.fake.chunk_delay)
            self.wfile.write(piece)
            self.wfile.flush()

    # --- legacy completions, uploads, speech ----------------------------------------------------

    def _completions(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_chat_reply(body)
        hold: Hold | None = None
        if isinstance(reply, Hold):
            hold, reply = reply, reply.then
        if self._misbehave(reply, stream=bool(body.get("stream"))):
            return
        text = str(_message(reply).get("content") or "")
        cid, model = f"cmpl-fake-{self.fake._next_id()}", body.get("model") or self.fake.model

        def completion(piece: str, finish: str | None) -> dict[str, Any]:
            choice = {"text": piece, "index": 0, "logprobs": None, "finish_reason": finish}
            return {"id": cid, "object": "text_completion", "created": 0, "model": model, "choices": [choice]}

        if not body.get("stream"):
            self._send_json(200, completion(text, "stop"))
            return
        pieces = [f"data: {json.dumps(completion(p, None))}\n\n".encode() for p in re.findall(_PIECES, text)]
        pieces += [f"data: {json.dumps(completion('', 'stop'))}\n\n".encode(), b"data: [DONE]\n\n"]
        self._send_events(pieces, hold, None)

    def _upload(self, path: str, raw: bytes) -> None:
        if not path.endswith("/files"):
            self._send_json(404, _error(f"no route for POST {self.path}", "not_found"))
            return
        file_id = f"file-fake-{self.fake._next_id()}"
        with self.fake._lock:
            self.fake.uploads[file_id] = raw
        purpose = re.search(rb'name="purpose"\r\n\r\n([^\r]*)', raw)
        self._send_json(200, _file(file_id, len(raw), purpose.group(1).decode() if purpose else None))

    def _speech(self, body: dict[str, Any]) -> None:
        """`input` as bytes, sent in pieces without a Content-Length (as a streamed audio file)."""
        data = str(body.get("input") or "").encode("utf-8") * 64
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.end_headers()
        for start in range(0, len(data), 256):
            if start and self.fake.chunk_delay:
                self.fake._sleep(self.fake.chunk_delay)
            self.wfile.write(data[start : start + 256])
            self.wfile.flush()

    # --- embeddings ----------------------------------------------------------------------------

    def _embeddings(self, body: dict[str, Any]) -> None:
        reply = self.fake._next_embed_reply()
        while isinstance(reply, Delay):
            self.fake._sleep(reply.seconds)
            reply = reply.then
        if self._misbehave(reply, stream=False):
            return
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send_json(
                400, _error("input must be a string or a list of strings", "invalid_request_error")
            )
            return
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, self.fake.embed_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or self.fake.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    # --- helpers -------------------------------------------------------------------------------

    def _misbehave(self, reply: Reply | None, *, stream: bool) -> bool:
        """Send a scripted failure if `reply` is one; True when the response has been sent."""
        if isinstance(reply, Fail):
            if isinstance(reply.body, str):
                self._send_bytes(reply.status, reply.body.encode(), "text/plain", reply.headers)
            else:
                self._send_bytes(
                    reply.status, json.dumps(reply.body).encode(), "application/json", reply.headers
                )
            return True
        if isinstance(reply, Malformed):
            if stream:
                payload = f"data: {reply.body}\n\n".encode()
                self._send_bytes(200, payload, "text/event-stream")
            else:
                self._send_bytes(200, reply.body.encode(), "application/json")
            return True
        return False

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json")

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


_CJK = "\u3000-\u9fff\uff00-\uffef"
_PIECES = rf"[{_CJK}]{{1,4}}\s*|[^\s{_CJK}]+\s*|\s+"


def _choice_chunks(chunk: Callable[..., bytes], message: dict[str, Any]) -> list[bytes]:
    """The SSE chunks of one choice: its role, content pieces, tool calls, then its finish."""
    pieces: list[bytes] = [chunk({"role": "assistant", "content": ""})]
    # Words (with their trailing space) or up to 4 CJK characters per chunk, as real models stream.
    for piece in re.findall(_PIECES, message.get("content") or ""):
        pieces.append(chunk({"content": piece}))
    tool_calls = message.get("tool_calls") or []
    for i, call in enumerate(tool_calls):
        # As OpenAI streams them: id, type and name first, then the arguments in fragments.
        function = call["function"]
        head = {"name": function["name"], "arguments": ""}
        pieces.append(
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": call["type"], "function": head}]})
        )
        args = function.get("arguments") or ""
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            if part:
                pieces.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    pieces.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    return pieces


def _file(file_id: str, size: int, purpose: str | None) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 0,
        "filename": "upload",
        "purpose": purpose,
    }


def _response(rid: str, n: int, model: str, body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A Responses API response whose output is `message` (its text, then its tool calls)."""
    output: list[dict[str, Any]] = []
    if message.get("content"):
        part = {"type": "output_text", "text": message["content"], "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_fake_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for call in message.get("tool_calls") or []:
        function = call["function"]
        output.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{n}_{len(output)}",
                "call_id": call["id"],
                "name": function["name"],
                "arguments": function["arguments"],
                "status": "completed",
            }
        )
    words = len(_all_text(body).split())
    out_words = len(str(message.get("content") or "").split())
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "instructions": body.get("instructions"),
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store", True),
        "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice", "auto"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "metadata": {},
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": words,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_words,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": words + out_words,
        },
    }


def _response_events(response: dict[str, Any]) -> list[bytes]:
    """A response streamed as the Responses API's events (text in word pieces, arguments in halves)."""
    events: list[bytes] = []

    def event(kind: str, **data: Any) -> None:
        payload = json.dumps({"type": kind, "sequence_number": len(events), **data})
        events.append(f"event: {kind}\ndata: {payload}\n\n".encode())

    event("response.created", response={**response, "status": "in_progress", "output": [], "usage": None})
    event("response.in_progress", response={**response, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            empty = {"type": "output_text", "text": "", "annotations": []}
            event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty,
            )
            for piece in re.findall(_PIECES, text):
                event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        else:
            args = item["arguments"]
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for part in (args[: len(args) // 2], args[len(args) // 2 :]):
                if part:
                    event(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=index,
                        delta=part,
                    )
            event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=args,
            )
        event("response.output_item.done", output_index=index, item=item)
    event("response.completed", response=response)
    return events


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a chat request, or a Responses request's `instructions` and `input` as messages."""
    if "messages" in body:
        return [m for m in body.get("messages") or [] if isinstance(m, dict)]
    out = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    if isinstance(body.get("prompt"), str):  # legacy completions
        return [*out, {"role": "user", "content": body["prompt"]}]
    return [*out, *(m for m in items or [] if isinstance(m, dict) and "role" in m)]


def _n(body: dict[str, Any]) -> int:
    """How many choices a chat request asks for (`n`, default 1)."""
    n = body.get("n")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def _variant(message: dict[str, Any], k: int) -> dict[str, Any]:
    """Choice k (> 0) of an n > 1 request: the reply with ` [k]` after its content."""
    content = message.get("content")
    return {**message, "content": f"{content} [{k}]" if content else content}


def _all_text(body: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in _messages(body))


def _is_label(body: dict[str, Any]) -> bool:
    return LABEL_MARK in _all_text(body)


def _text(content: Any) -> str:
    """The text of a message `content`: a str, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _message(reply: Reply) -> dict[str, Any]:
    """An assistant message in OpenAI format from a scripted str or dict."""
    if isinstance(reply, str):
        return {"role": "assistant", "content": reply}
    if not isinstance(reply, dict):
        raise TypeError(f"not a chat reply: {reply!r}")
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    calls = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        function = dict(call.get("function") or {})
        # Scripts may give arguments as a dict; the wire format is a JSON string.
        if not isinstance(function.get("arguments", ""), str):
            function["arguments"] = json.dumps(function["arguments"])
        function.setdefault("arguments", "{}")
        calls.append(
            {
                "id": call.get("id") or f"call_{i}",
                "type": call.get("type") or "function",
                "function": function,
            }
        )
    if calls:
        message["tool_calls"] = calls
    return message


def _usage(body: dict[str, Any], content: str) -> dict[str, int]:
    # Word counts stand in for tokens: deterministic, and good enough to test that usage flows through.
    prompt = sum(
        len(_text(m.get("content")).split()) for m in body.get("messages") or [] if isinstance(m, dict)
    )
    completion = len(content.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}
