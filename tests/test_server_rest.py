"""The REST surface of the service, against a real uvicorn server on loopback: every resource endpoint,
the OpenAI error format (400/404/413/503), the limits, and /openapi.json + /docs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


def _start(tmp_path: Path, **overrides: Any) -> LiveServer:
    cfg = Config.load(home=tmp_path / "srv", embedders="hash", page_size=4, llm_timeout=5.0, **overrides)
    return LiveServer(create_app(cfg))


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    with _start(tmp_path, upstream_base_url=fake.base_url, upstream_model="fake-model") as base:
        yield base


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[str]:
    """A server without an upstream LLM, with small limits."""
    with _start(tmp_path, max_body_bytes=50_000, max_message_tokens=1000) as base:
        yield base


def _error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "code"} and err["message"]
    return dict(err)


TURNS = [
    ("user", "My cat is called Sesame and she loves tuna."),
    ("assistant", "Sesame sounds adorable!"),
    ("user", "我下周三要去杭州出差，住在西湖边。"),
    ("assistant", "杭州很美，祝出差顺利。"),
    ("user", "I started learning the cello last month."),
    ("assistant", "How are the lessons going?"),
]


def _seed(base: str, user: str = "alice", session: str = "s1") -> None:
    for role, content in TURNS:
        r = httpx.post(
            f"{base}/v1/turns", json={"user": user, "session_id": session, "role": role, "content": content}
        )
        assert r.status_code == 201, r.text


def test_memories_search_in_both_languages(server: str) -> None:
    _seed(server)
    hits = httpx.get(f"{server}/v1/users/alice/memories", params={"q": "Sesame cat", "limit": 3}).json()
    assert hits and "Sesame" in hits[0]["content"] and len(hits) <= 3
    first = hits[0]
    assert first["role"] == "user" and first["session_id"] == "s1" and first["created_at"]
    assert first["layers"]["scores"] and first["layers"]["ranks"] and "bm25" in first["scores"]
    zh = httpx.get(f"{server}/v1/users/alice/memories", params={"q": "杭州出差"}).json()
    assert zh and "杭州" in zh[0]["content"]
    # the older path answers the same
    assert (
        httpx.get(f"{server}/v1/users/alice/search", params={"q": "Sesame cat", "limit": 3}).json()[0][
            "turn_id"
        ]
        == (first["turn_id"])
    )


@pytest.mark.parametrize(
    ("content", "query", "date"),
    [
        ("I met Sam for coffee last Tuesday", "coffee with Sam", "2024-03-05"),
        ("上周二我和小林去喝了咖啡", "和小林喝咖啡", "2024-03-05"),
    ],
)
def test_memories_carry_the_absolute_dates_a_turn_mentions(
    server: str, content: str, query: str, date: str
) -> None:
    r = httpx.post(
        f"{server}/v1/turns",
        json={
            "user": "dana",
            "session_id": "s",
            "role": "user",
            "content": content,
            "timestamp": "2024-03-12T10:00:00Z",
        },
        timeout=60,  # a first Chinese turn loads jieba and the dictionaries: seconds on a busy machine
    )
    assert r.status_code == 201, r.text
    hits = httpx.get(f"{server}/v1/users/dana/memories", params={"q": query}, timeout=60).json()
    assert hits[0]["content"] == content
    assert any(date in d for d in hits[0]["dates"]), hits[0]["dates"]


@pytest.mark.parametrize(
    ("content", "date"),
    [("昨天我去看了牙医", "昨天 = 2024-10-21"), ("I saw the dentist yesterday", "yesterday = 2024-10-21")],
)
def test_turns_take_the_user_timezone_and_remember_it(server: str, content: str, date: str) -> None:
    late = "2024-10-21T20:00:00Z"  # already the 22nd in Shanghai: "yesterday" is the 21st, not the 20th
    body = {"user": "tz", "session_id": "s", "role": "user", "content": content, "timestamp": late}
    r = httpx.post(f"{server}/v1/turns", json={**body, "timezone": "Asia/Shanghai"}, timeout=60)
    assert r.status_code == 201, r.text
    turn_id = r.json()["turn_id"]
    facts = httpx.get(f"{server}/v1/users/tz/profile", params={"key": "timezone"}).json()["facts"]
    assert [(f["value"], f["current"], f["source_turn_ids"]) for f in facts] == [
        ("Asia/Shanghai", True, [turn_id])
    ]
    turns = httpx.get(f"{server}/v1/users/tz/sessions/s/turns").json()["turns"]
    assert [t["meta"]["dates"] for t in turns if t["id"] == turn_id] == [[date]]
    # A later turn without a timezone is read in the remembered one.
    r = httpx.post(f"{server}/v1/turns", json={**body, "session_id": "s2"})
    assert r.status_code == 201, r.text
    later = httpx.get(f"{server}/v1/users/tz/sessions/s2/turns").json()["turns"]
    assert [t["meta"]["dates"] for t in later] == [[date]]


def test_sessions_and_paged_turns(server: str) -> None:
    _seed(server)
    _seed(server, session="s2")
    sessions = httpx.get(f"{server}/v1/users/alice/sessions").json()
    assert {s["id"]: s["turns"] for s in sessions} == {"s1": 6, "s2": 6}
    page = httpx.get(f"{server}/v1/users/alice/sessions/s1/turns", params={"limit": 4}).json()
    assert [t["content"] for t in page["turns"]] == [c for _, c in TURNS[2:]]
    assert page["next_before"] == 2
    older = httpx.get(
        f"{server}/v1/users/alice/sessions/s1/turns", params={"limit": 4, "before": page["next_before"]}
    ).json()
    assert [t["content"] for t in older["turns"]] == [c for _, c in TURNS[:2]]
    assert older["next_before"] is None
    assert _error(httpx.get(f"{server}/v1/users/alice/sessions/nope/turns"), 404)["code"] == "no_session"
    assert (
        "before" in _error(httpx.get(f"{server}/v1/users/alice/sessions/s1/turns?before=-1"), 400)["message"]
    )


def test_bookmarks_jobs_and_traces(server: str, fake: FakeOpenAI) -> None:
    _seed(server)  # page_size 4: the first page is full, so a bookmark job is queued
    jobs = httpx.get(f"{server}/v1/jobs", params={"user": "alice"}).json()
    assert any(j["kind"] == "bookmark" for j in jobs)
    assert all(j["user_id"] == "alice" for j in jobs)
    marks: list[Any] = []
    for _ in range(400):  # the in-process worker writes the bookmark (bounded wait, no timing asserted)
        marks = httpx.get(f"{server}/v1/users/alice/bookmarks").json()
        if marks:
            break
        time.sleep(0.05)
    assert marks and marks[0]["page_ids"] and marks[0]["turn_ids"] and marks[0]["keywords"]
    # A session alice does not have is named: a 404, not an empty list (a misspelt id).
    r = httpx.get(f"{server}/v1/users/alice/bookmarks", params={"session_id": "other"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_session"
    done = httpx.get(f"{server}/v1/jobs", params={"status": "done"}).json()
    assert any(j["kind"] == "bookmark" and j["finished_at"] for j in done)
    assert "status" in _error(httpx.get(f"{server}/v1/jobs", params={"status": "weird"}), 400)["message"]

    fake.script("Noted!")
    r = httpx.post(
        f"{server}/v1/chat/completions",
        json={"user": "alice", "messages": [{"role": "user", "content": "hello"}]},
        timeout=30,
    )
    trace_id = r.headers["X-Memsched-Trace-Id"]
    trace = httpx.get(f"{server}/v1/traces/{trace_id}").json()
    assert trace["id"] == trace_id and trace["user_id"] == "alice"
    listed = httpx.get(f"{server}/v1/users/alice/traces", params={"session_id": "default"}).json()
    assert [t["id"] for t in listed] == [trace_id]
    assert _error(httpx.get(f"{server}/v1/traces/nope"), 404)["code"] == "no_trace"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/users/ghost/memories?q=x",
        "/v1/users/ghost/bookmarks",
        "/v1/users/ghost/sessions",
        "/v1/users/ghost/sessions/s/turns",
        "/v1/users/ghost/traces",
    ],
)
def test_unknown_user_is_a_404(server: str, path: str) -> None:
    assert _error(httpx.get(server + path), 404)["type"] == "not_found_error"


def test_validation_comes_before_configuration(offline: str) -> None:
    # No upstream: a request without `user` is still a 400 naming the field, not a 503.
    r = httpx.post(f"{offline}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    assert "user" in _error(r, 400)["message"]
    r = httpx.post(f"{offline}/v1/chat/completions", json={"user": "a", "messages": []})
    assert "messages" in _error(r, 400)["message"]
    r = httpx.post(
        f"{offline}/v1/chat/completions", json={"user": "a", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert _error(r, 503)["type"] == "not_configured"
    assert httpx.get(f"{offline}/v1/users/a/sessions").status_code == 404  # nothing was recorded


def test_limits_are_413_and_store_nothing(offline: str) -> None:
    big = "x" * 60_000
    r = httpx.post(f"{offline}/v1/turns", json={"user": "a", "session_id": "s", "content": big})
    assert "MEMSCHED_MAX_BODY_BYTES=50000" in _error(r, 413)["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while reading
        yield b'{"user": "a", "session_id": "s", "content": "'
        for _ in range(20):
            yield b"y" * 5000
        yield b'"}'

    r = httpx.post(f"{offline}/v1/turns", content=chunks(), headers={"content-type": "application/json"})
    assert _error(r, 413)["code"] == "body_too_large"

    long_en = "word " * 2000  # 10 kB: under the body limit, over 1000 tokens
    r = httpx.post(f"{offline}/v1/turns", json={"user": "a", "session_id": "s", "content": long_en})
    assert "MEMSCHED_MAX_MESSAGE_TOKENS=1000" in _error(r, 413)["message"]
    long_zh = "我们一起去看海吧。" * 400
    r = httpx.post(
        f"{offline}/v1/context", json={"user": "a", "message": long_zh, "session_id": "s", "record": True}
    )
    assert _error(r, 413)["code"] == "message_too_long"
    r = httpx.post(
        f"{offline}/v1/chat/completions",
        json={"user": "a", "messages": [{"role": "user", "content": long_en}]},
    )
    assert _error(r, 413)["code"] == "message_too_long"
    assert httpx.get(f"{offline}/v1/users/a/sessions").status_code == 404  # nothing stored half-way


def test_a_huge_message_is_a_413_not_a_500(tmp_path: Path) -> None:
    # Default body limit (4 MiB): 1.5 million characters pass it and must hit the token limit cheaply.
    with _start(tmp_path) as base:
        for text in ("a" * 1_500_000, "这是一段很长的话。" * 170_000):
            r = httpx.post(
                f"{base}/v1/turns", json={"user": "a", "session_id": "s", "content": text}, timeout=60
            )
            assert r.status_code == 413, r.text[:300]
            assert "MEMSCHED_MAX" in r.json()["error"]["message"]


def test_openapi_and_docs(server: str) -> None:
    from openapi_spec_validator import validate

    spec = httpx.get(f"{server}/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    validate(spec)  # a valid OpenAPI 3 document (schemathesis and generators can use it)
    paths = spec["paths"]
    for path in (
        "/v1/chat/completions",
        "/v1/context",
        "/v1/turns",
        "/v1/users/{user}/memories",
        "/v1/users/{user}/bookmarks",
        "/v1/users/{user}/sessions",
        "/v1/users/{user}/sessions/{session_id}/turns",
        "/v1/traces/{trace_id}",
        "/v1/jobs",
        "/healthz",
    ):
        assert path in paths, path
    schemas = spec["components"]["schemas"]
    assert {"ChatRequest", "ErrorResponse", "MemoryHit", "BookmarkOut", "TurnPage", "JobOut"} <= set(schemas)
    assert "temperature" in schemas["ChatRequest"]["properties"]
    assert "413" in paths["/v1/turns"]["post"]["responses"]
    docs = httpx.get(f"{server}/docs")
    assert docs.status_code == 200 and "swagger-ui-bundle.js" in docs.text
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text.replace("https://swagger.io", "")
    for src in __import__("re").findall(r'(?:src|href)="(/[^"]+)"', docs.text):
        assert httpx.get(server + src).status_code == 200, src  # every asset is served by memsched


def test_health_answers_head_too(server: str) -> None:
    """Load balancers and uptime checkers often probe with HEAD (before: a 405)."""
    assert httpx.head(f"{server}/healthz").status_code == 200


@pytest.mark.parametrize(("user", "session"), [("org/42", "2024/03/02"), ("50%off", "a%2Fb")])
def test_ids_with_a_slash_or_percent_are_reachable_and_deletable(
    tmp_path: Path, server: str, user: str, session: str
) -> None:
    """The proxy takes any user and session id from the body; over REST and the SDK an id with a '/'
    (an org-scoped user, a session named by date) goes percent-encoded in the path. Its user can be
    read and deleted like any other. Before, the encoded '/' split the path: every /v1/users/...
    call was a 404, so such a user could not be deleted except from the command line."""
    from memsched import Client

    _seed(server, user=user, session=session)
    path = f"{server}/v1/users/{quote(user, safe='')}"
    sessions = httpx.get(f"{path}/sessions").json()
    assert [s["id"] for s in sessions] == [session], sessions
    turns = httpx.get(f"{path}/sessions/{quote(session, safe='')}/turns").json()["turns"]
    assert [t["content"] for t in turns] == [c for _, c in TURNS]
    assert httpx.get(f"{path}/memories", params={"q": "Sesame"}).json()[0]["session_id"] == session
    assert httpx.get(f"{path}/profile").status_code == 200
    with Client(server) as client:
        assert [s.id for s in client.sessions(user)] == [session]
        client.delete_user(user)
    assert httpx.get(f"{path}/sessions").status_code == 404
    db = tmp_path / "srv" / "memsched.db"
    if db.exists():
        data = b"".join(p.read_bytes() for p in db.parent.glob("memsched.db*"))
        assert b"Sesame" not in data


def test_context_takes_the_apps_persona(server: str) -> None:
    """An assistant app's own instructions start the system message `/v1/context` returns, in a
    preview and when the message is recorded; without one it is the configured persona. The persona
    is not stored as a turn."""
    from memsched.config import DEFAULT_SYSTEM_PROMPT

    _seed(server)
    persona = "You are Ada, a precise coding assistant for the Ledgerly project."
    for record in (False, True):
        r = httpx.post(
            f"{server}/v1/context",
            json={
                "user": "alice",
                "session_id": "s2",
                "message": "what is my cat called?",
                "record": record,
                "system_prompt": persona,
            },
        )
        assert r.status_code == 200, r.text
        system = r.json()["messages"][0]
        assert system["role"] == "system" and system["content"].startswith(persona), system
        assert DEFAULT_SYSTEM_PROMPT not in system["content"]
        assert "Sesame" in system["content"]  # the memory is still there
    r = httpx.post(f"{server}/v1/context", json={"user": "alice", "message": "hi"})
    assert r.json()["messages"][0]["content"].startswith(DEFAULT_SYSTEM_PROMPT)
    turns = httpx.get(f"{server}/v1/users/alice/sessions/s2/turns").json()
    assert not any(persona in str(t) for t in turns)
