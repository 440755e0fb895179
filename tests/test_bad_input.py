"""Bad input over HTTP: a clear 4xx in OpenAI format naming the problem, never a 500, and nothing stored
(the user's turns and the job queue are exactly as before the request)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with FakeOpenAI() as fake:
        cfg = Config.load(
            home=tmp_path_factory.mktemp("bad"),
            embedders="hash",
            upstream_base_url=fake.base_url,
            upstream_model="fake-model",
            max_body_bytes=200_000,
            max_message_tokens=2000,
            max_image_bytes=100_000,
        )
        with LiveServer(create_app(cfg)) as url:
            r = httpx.post(
                f"{url}/v1/turns", json={"user": "u", "session_id": "s", "role": "user", "content": "hi"}
            )
            assert r.status_code == 201
            yield url


def _chat(content: Any, **extra: Any) -> dict[str, Any]:
    return {"user": "u", "messages": [{"role": "user", "content": content}], **extra}


def _turn(**extra: Any) -> dict[str, Any]:
    return {"user": "u", "session_id": "s", "role": "user", "content": "hello", **extra}


def _ctx(**extra: Any) -> dict[str, Any]:
    return {"user": "u", "session_id": "s", "message": "hello", **extra}


def _image(url: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": url}}]


# (name, method, path, json body or raw bytes, expected status, words the error message must contain)
CASES: list[tuple[str, str, str, Any, int, str]] = [
    ("malformed JSON", "POST", "/v1/turns", b'{"user": "u",', 400, "not valid JSON"),
    (
        "invalid UTF-8",
        "POST",
        "/v1/turns",
        b'{"user":"u","session_id":"s","content":"\xff\xfe"}',
        400,
        "UTF-8",
    ),
    ("body is a list", "POST", "/v1/chat/completions", [1, 2], 400, "body"),
    (
        "JSON nested too deeply",
        "POST",
        "/v1/chat/completions",
        b'{"x":' + b"[" * 100_000,
        400,
        "nested too deeply",
    ),
    (
        "a number too long",
        "POST",
        "/v1/turns",
        b'{"user":"u","x":' + b"9" * 5000 + b"}",
        400,
        "number is too long",
    ),
    ("content not a string", "POST", "/v1/turns", _turn(content=123), 400, "content"),
    ("unknown role (turns)", "POST", "/v1/turns", _turn(role="wizard"), 400, "role"),
    (
        "unknown role (chat)",
        "POST",
        "/v1/chat/completions",
        {"user": "u", "messages": [{"role": "robot", "content": "x"}]},
        400,
        "role",
    ),
    ("empty turn", "POST", "/v1/turns", _turn(content="   "), 400, "empty"),
    ("empty chat message", "POST", "/v1/chat/completions", _chat(""), 400, "empty"),
    ("no messages", "POST", "/v1/chat/completions", {"user": "u", "messages": []}, 400, "messages"),
    ("empty context message", "POST", "/v1/context", {"user": "u", "message": " "}, 400, "message"),
    ("no user", "POST", "/v1/context", {"message": "hi"}, 400, "user"),
    ("negative budget", "POST", "/v1/context", {"user": "u", "message": "hi", "budget": -5}, 400, "budget"),
    ("absurd budget", "POST", "/v1/context", {"user": "u", "message": "hi", "budget": 10**12}, 400, "budget"),
    ("budget too small", "POST", "/v1/context", {"user": "u", "message": "hi", "budget": 1}, 400, "budget"),
    ("year 9999", "POST", "/v1/turns", _turn(timestamp="9999-12-31T23:59:59Z"), 400, "future"),
    ("no time zone", "POST", "/v1/turns", _turn(timestamp="2024-01-01T10:00:00"), 400, "offset"),
    ("not a time", "POST", "/v1/turns", _turn(timestamp="next blursday"), 400, "timestamp"),
    (
        "year 9999 (chat)",
        "POST",
        "/v1/chat/completions",
        _chat("hi", metadata={"timestamp": "9999-01-01T00:00:00+00:00"}),
        400,
        "metadata.timestamp",
    ),
    (
        "unknown time zone",
        "POST",
        "/v1/context",
        {"user": "u", "message": "hi", "timezone": "Mars/Olympus"},
        400,
        "time zone",
    ),
    (
        "unknown time zone (turns)",
        "POST",
        "/v1/turns",
        {"user": "u", "session_id": "s", "role": "user", "content": "hi", "timezone": "Mars/Olympus"},
        400,
        "timezone: unknown time zone",
    ),
    (
        "unknown time zone (chat)",
        "POST",
        "/v1/chat/completions",
        _chat("hi", metadata={"timezone": "Nowhere/Land"}),
        400,
        "time zone",
    ),
    (
        "undecodable image",
        "POST",
        "/v1/chat/completions",
        _chat(_image("data:image/png;base64,!!!notbase64")),
        400,
        "decode",
    ),
    (
        "not an image",
        "POST",
        "/v1/chat/completions",
        _chat(_image("data:image/png;base64," + base64.b64encode(b"hello").decode())),
        400,
        "not a PNG",
    ),
    # A URL neither the vision model nor a vision upstream could fetch (before: accepted, and the
    # turn stored with a caption of nothing).
    (
        "ftp image",
        "POST",
        "/v1/chat/completions",
        _chat(_image("ftp://photos.example/sunset.jpg")),
        400,
        "http(s)",
    ),
    ("file image", "POST", "/v1/chat/completions", _chat(_image("file:///home/me/cat.png")), 400, "http(s)"),
    (
        "huge image",
        "POST",
        "/v1/chat/completions",
        _chat(_image("data:image/png;base64," + PNG + "A" * 190_000)),
        413,
        "",
    ),
    ("huge body", "POST", "/v1/turns", _turn(content="x" * 300_000), 413, "MEMSCHED_MAX_BODY_BYTES"),
    ("huge message", "POST", "/v1/turns", _turn(content="word " * 5000), 413, "MEMSCHED_MAX_MESSAGE_TOKENS"),
    ("unknown user", "GET", "/v1/users/nobody/sessions", None, 404, "nobody"),
    ("unknown trace", "GET", "/v1/traces/0123456789abcdef", None, 404, "trace"),
    ("unknown turn", "DELETE", "/v1/users/u/turns/99999", None, 404, "99999"),
    ("turn id not a number", "DELETE", "/v1/users/u/turns/abc", None, 400, "turn_id"),
    ("unknown session", "DELETE", "/v1/users/u/sessions/nope", None, 404, "nope"),
    # A session or user named as a filter is a resource too: unknown, a 404 like the session's turns
    # (before: 200 [], as if a misspelt session had no traces or bookmarks yet).
    ("unknown session (traces)", "GET", "/v1/users/u/traces?session_id=nope", None, 404, "no session 'nope'"),
    (
        "unknown session (bookmarks)",
        "GET",
        "/v1/users/u/bookmarks?session_id=nope",
        None,
        404,
        "no session 'nope'",
    ),
    ("unknown session (turns)", "GET", "/v1/users/u/sessions/nope/turns", None, 404, "no session 'nope'"),
    ("unknown user (jobs)", "GET", "/v1/jobs?user=nobody", None, 404, "nobody"),
    ("unknown user (traces)", "GET", "/v1/users/nobody/traces", None, 404, "nobody"),
    ("negative limit", "GET", "/v1/users/u/memories?q=x&limit=-1", None, 400, "limit"),
    # A misspelt profile key is named (before: an empty list, as if the user had no such fact).
    (
        "unknown profile key",
        "GET",
        "/v1/users/u/profile?key=prefered_name",
        None,
        400,
        "key: unknown profile key",
    ),
    # A field that takes one of several types is named as the client wrote it, with the types it
    # takes (before: pydantic's union branch in the name, 'messages.0.content.str: Input should be a
    # valid string', even when a list was sent).
    (
        "content a number (chat)",
        "POST",
        "/v1/chat/completions",
        _chat(42),
        400,
        "messages.0.content: expected a string or a list",
    ),
    (
        "content a list of strings",
        "POST",
        "/v1/chat/completions",
        _chat(["a"]),
        400,
        "messages.0.content.0: expected an object",
    ),
    (
        "stop a number",
        "POST",
        "/v1/chat/completions",
        _chat("hi", stop=5),
        400,
        "stop: expected a string or a list",
    ),
    (
        "input a number",
        "POST",
        "/v1/responses",
        {"user": "u", "input": 5},
        400,
        "input: expected a string or a list",
    ),
    # Parts memsched cannot read are named (before: 'the last user message is empty').
    (
        "only unknown parts",
        "POST",
        "/v1/chat/completions",
        _chat([{"type": "bogus", "text": "x"}]),
        400,
        "'bogus'",
    ),
    ("empty turn names the field", "POST", "/v1/turns", _turn(content=""), 400, "content:"),
    # Booleans and integers are strict, as the OpenAI API reads them (before: "yes", 1 and "true" were
    # read as true, a budget of true as 1 token and "500" as 500).
    ("stream a string", "POST", "/v1/chat/completions", _chat("hi", stream="yes"), 400, "stream: "),
    ("stream a number", "POST", "/v1/chat/completions", _chat("hi", stream=1), 400, "stream: "),
    (
        "stream a string (responses)",
        "POST",
        "/v1/responses",
        {"user": "u", "input": "hi", "stream": "true"},
        400,
        "stream: ",
    ),
    ("store a string", "POST", "/v1/responses", {"user": "u", "input": "hi", "store": "no"}, 400, "store: "),
    (
        "max_tokens a string",
        "POST",
        "/v1/chat/completions",
        _chat("hi", max_tokens="50"),
        400,
        "max_tokens: ",
    ),
    (
        "temperature a string",
        "POST",
        "/v1/chat/completions",
        _chat("hi", temperature="0.2"),
        400,
        "temperature: ",
    ),
    (
        "record a string",
        "POST",
        "/v1/context",
        _ctx(record="yes"),
        400,
        'record: Input should be a valid boolean, got "yes"',
    ),
    ("record a number", "POST", "/v1/context", _ctx(record=1), 400, "record: "),
    ("budget a boolean", "POST", "/v1/context", _ctx(budget=True), 400, "budget: "),
    ("budget a string", "POST", "/v1/context", _ctx(budget="500"), 400, "budget: "),
    # An unpaired UTF-16 surrogate (valid JSON: a JavaScript string cut in the middle of an emoji) is
    # named (before: a 500 on /v1/turns and /v1/context, a dropped connection on the proxy).
    (
        "unpaired surrogate (turns)",
        "POST",
        "/v1/turns",
        b'{"user":"u","session_id":"s","role":"user","content":"hi \\ud83d"}',
        400,
        "content: has an unpaired UTF-16 surrogate (\\ud83d",
    ),
    (
        "unpaired surrogate (context)",
        "POST",
        "/v1/context",
        b'{"user":"u","session_id":"s","record":true,"message":"\\ud83d hi"}',
        400,
        "message: has an unpaired",
    ),
    (
        "unpaired surrogate (chat)",
        "POST",
        "/v1/chat/completions",
        b'{"user":"u","messages":[{"role":"user","content":[{"type":"text","text":"\\ud83d hi"}]}]}',
        400,
        "messages.0.content.0.text: has an unpaired",
    ),
    (
        "unpaired surrogate (responses)",
        "POST",
        "/v1/responses",
        b'{"user":"u","input":[{"role":"user","content":"hi \\udc00"}]}',
        400,
        "input.0.content: has an unpaired",
    ),
    # memsched's own requests name a field they do not know (before: dropped without a word).
    ("misspelt budget", "POST", "/v1/context", _ctx(bugdet=500), 400, "bugdet: unknown field"),
    (
        "misspelt timestamp",
        "POST",
        "/v1/turns",
        _turn(timestmap="2024-01-01T10:00:00Z"),
        400,
        "timestmap: unknown field",
    ),
    ("empty input string", "POST", "/v1/responses", {"user": "u", "input": " "}, 400, "input: the"),
    # A NUL character is named as the client sent the field (before: 'turn content contains a NUL
    # character' from the store, and /v1/context answered 200 with it).
    *[
        (f"NUL ({name})", "POST", path, body, 400, f"{field}: has a NUL character")
        for name, path, body, field in [
            (
                "chat",
                "/v1/chat/completions",
                {
                    "user": "u",
                    "messages": [
                        {"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "hello"},
                        {"role": "user", "content": "a\x00b"},
                    ],
                },
                "messages.2.content",
            ),
            (
                "chat parts",
                "/v1/chat/completions",
                _chat([{"type": "text", "text": "\x00"}]),
                "messages.0.content.0.text",
            ),
            ("responses", "/v1/responses", {"user": "u", "input": "a\x00b"}, "input"),
            (
                "responses items",
                "/v1/responses",
                {
                    "user": "u",
                    "input": [{"role": "user", "content": "ok"}, {"role": "user", "content": "a\x00"}],
                },
                "input.1.content",
            ),
            ("context", "/v1/context", _ctx(message="a\x00b"), "message"),
            ("turns", "/v1/turns", _turn(content="a\x00b"), "content"),
            ("turns session", "/v1/turns", _turn(session_id="s\x00"), "session_id"),
            (
                "chat session",
                "/v1/chat/completions",
                _chat("hi", metadata={"session_id": "s\x00"}),
                "metadata.session_id",
            ),
        ]
    ],
    # An empty or blank id is refused, naming the field, on every endpoint (before: the chat
    # proxy's metadata.session_id "" went to the 'default' session, a blank user to
    # MEMSCHED_DEFAULT_USER, and /v1/context took a session named " ").
    *[
        (f"blank {field} ({path})", "POST", path, body, 400, f"{field}: ")
        for path, body, field in [
            ("/v1/chat/completions", _chat("hi", metadata={"session_id": ""}), "metadata.session_id"),
            ("/v1/chat/completions", _chat("hi", metadata={"session_id": "  "}), "metadata.session_id"),
            ("/v1/chat/completions", _chat("hi", user="", metadata={"user": "u"}), "user"),
            (
                "/v1/chat/completions",
                {**_chat("hi"), "user": None, "metadata": {"user": " "}},
                "metadata.user",
            ),
            (
                "/v1/responses",
                {"user": "u", "input": "hi", "metadata": {"session_id": ""}},
                "metadata.session_id",
            ),
            ("/v1/context", _ctx(session_id=" "), "session_id"),
            ("/v1/context", _ctx(user=" "), "user"),
            ("/v1/turns", _turn(session_id=""), "session_id"),
            ("/v1/turns", _turn(session_id=" "), "session_id"),
            ("/v1/turns", _turn(user=""), "user"),
        ]
    ],
    # A message over the limit is named by its place in the request, with the limit (before: 'a
    # message is N tokens', not which).
    (
        "long message (chat)",
        "POST",
        "/v1/chat/completions",
        {
            "user": "u",
            "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "word " * 3000}],
        },
        413,
        "messages.1.content: the message is 3001 tokens, over the limit of 2000",
    ),
    (
        "long message (responses)",
        "POST",
        "/v1/responses",
        {
            "user": "u",
            "input": [{"role": "user", "content": "hi"}, {"role": "user", "content": "word " * 3000}],
        },
        413,
        "input.1.content: the message is",
    ),
    (
        "long message (context)",
        "POST",
        "/v1/context",
        _ctx(message="word " * 3000),
        413,
        "message: the message is",
    ),
    (
        "long message (turns)",
        "POST",
        "/v1/turns",
        _turn(content="word " * 3000),
        413,
        "content: the message is",
    ),
]


def _state(base: str) -> tuple[list[str], int]:
    turns = httpx.get(f"{base}/v1/users/u/sessions/s/turns", params={"limit": 500}).json()["turns"]
    return [t["content"] for t in turns], len(httpx.get(f"{base}/v1/jobs", params={"limit": 1000}).json())


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "status", "words"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_input_is_a_clear_4xx_and_stores_nothing(
    base: str, name: str, method: str, path: str, body: Any, status: int, words: str
) -> None:
    before = _state(base)
    if isinstance(body, bytes):
        r = httpx.request(
            method, base + path, content=body, headers={"content-type": "application/json"}, timeout=30
        )
    else:
        r = httpx.request(method, base + path, json=body, timeout=30)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert words.lower() in error["message"].lower(), error["message"]
    assert _state(base) == before


def test_a_known_user_or_session_with_nothing_to_list_is_an_empty_list(base: str) -> None:
    """The other side of the 404s above: a filter that matches nothing of a resource that exists."""
    for path in ("/v1/users/u/bookmarks?session_id=s", "/v1/jobs?user=u&status=dead"):
        r = httpx.get(base + path, timeout=30)
        assert (r.status_code, r.json()) == (200, []), (path, r.text)
    r = httpx.get(f"{base}/v1/users/u/topics/zeppelins/turns", timeout=30)  # a preview: a search
    assert r.status_code == 200 and r.json()["turns"] == []


def test_fts_syntax_in_a_query_is_literal(base: str) -> None:
    for q in ['" AND NEAR(', "hi*", "a:b OR (", "NOT"]:
        r = httpx.get(f"{base}/v1/users/u/memories", params={"q": q})
        assert r.status_code == 200, (q, r.text)
    r = httpx.post(f"{base}/v1/context", json={"user": "u", "message": '" AND NEAR( * : hi'})
    assert r.status_code == 200


def test_a_good_image_goes_through(base: str) -> None:
    r = httpx.post(
        f"{base}/v1/chat/completions", json=_chat(_image("data:image/png;base64," + PNG)), timeout=30
    )
    assert r.status_code == 200, r.text
