"""`memsched.Client` and `AsyncClient` against a live server on loopback (FakeOpenAI upstream): the same
names and return shapes as the embedded `Memory`/`Scheduler`, errors as memsched's exceptions, and
the bearer token on every request."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

import memsched
from memsched import AsyncClient, Client, ContextResult, Memory, SearchHit, ServiceError, Turn
from memsched.config import Config
from memsched.errors import ConfigError, InputError, LLMError
from memsched.model import Bookmark, Session
from memsched.scheduler import TurnResult
from memsched.server.app import create_app
from memsched.testing import Fail, FakeOpenAI, LiveServer

TURNS = [
    ("user", "My cat is called Sesame and she loves tuna."),
    ("assistant", "Sesame sounds adorable!"),
    ("user", "我下周三要去杭州出差，住在西湖边。"),
    ("assistant", "杭州很美，祝出差顺利。"),
    ("user", "I started learning the cello last month."),
    ("assistant", "How are the lessons going?"),
]


@pytest.fixture
def base(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        page_size=4,
        llm_timeout=5.0,
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
    )
    with LiveServer(create_app(cfg)) as url:
        yield url


def _fill(client: Client, user: str = "li") -> list[Turn]:
    at = datetime(2024, 3, 2, 12, 0, tzinfo=UTC)
    return [client.add(user, "s1", role, text, created_at=at) for role, text in TURNS]  # type: ignore[arg-type]


def test_same_names_as_memory_and_scheduler() -> None:
    for name in ("add", "add_many", "search", "context", "delete_turns", "delete_user"):
        assert callable(getattr(Memory, name)) and callable(getattr(Client, name))
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)), name
    for name in ("turn", "trace", "traces"):
        assert callable(getattr(memsched.Scheduler, name)) and callable(getattr(Client, name))
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)), name
    # Every public method of the sync client has an async twin and vice versa.
    public = {n for n in vars(Client) if not n.startswith("_")} - {"close"}
    apublic = {n for n in vars(AsyncClient) if not n.startswith("_")} - {"aclose", "close"}
    assert public == apublic


def test_add_search_context_round_trip(base: str) -> None:
    with Client(base) as client:
        added = _fill(client)
        assert all(isinstance(t, Turn) and t.id for t in added)
        assert added[0].created_at == datetime(2024, 3, 2, 12, 0, tzinfo=UTC)

        hits = client.search("li", "Sesame cat", limit=3)
        assert hits and isinstance(hits[0], SearchHit)
        assert "Sesame" in hits[0].turn.content and hits[0].turn.id == added[0].id
        assert hits[0].candidate.turn_id == hits[0].turn.id and "bm25" in hits[0].candidate.scores
        assert "杭州" in client.search("li", "杭州出差", limit=1)[0].turn.content

        ctx = client.context("li", "what is my cat called?", session_id="s2", budget=500)
        assert isinstance(ctx, ContextResult)
        assert any("Sesame" in str(m["content"]) for m in ctx.messages)
        assert ctx.tokens <= 500 and ctx.trace["budget"] == 500
        persona = "You are Ada, a coding assistant."
        ctx = client.context("li", "what is my cat called?", session_id="s2", system_prompt=persona)
        assert str(ctx.messages[0]["content"]).startswith(persona)

        assert [(s.id, s.turn_count) for s in client.sessions("li")] == [("s1", len(TURNS))]
        assert isinstance(client.sessions("li")[0], Session)
        turns = client.session_turns("li", "s1", limit=2)
        assert [t.content for t in turns] == [TURNS[-2][1], TURNS[-1][1]]
        older = client.session_turns("li", "s1", limit=2, before=turns[0].seq)
        assert [t.content for t in older] == [TURNS[-4][1], TURNS[-3][1]]
        assert client.health()["status"] == "ok"


def test_same_shapes_as_the_embedded_memory(base: str, tmp_path: Path) -> None:
    """The client and the embedded Memory answer the same calls with the same types and contents."""
    with Client(base) as client, Memory(home=tmp_path / "emb", embedders="hash", page_size=4) as mem:
        at = datetime(2024, 3, 2, 12, 0, tzinfo=UTC)
        for role, text in TURNS:
            client.add("li", "s1", role, text, created_at=at)  # type: ignore[arg-type]
            mem.add("li", "s1", role, text, created_at=at)  # type: ignore[arg-type]
        remote, local = client.search("li", "cello lessons", 3), mem.search("li", "cello lessons", 3)
        assert type(remote[0]) is type(local[0]) and type(remote[0].turn) is type(local[0].turn)
        assert [h.turn.content for h in remote] == [h.turn.content for h in local]
        r_ctx = client.context("li", "我出差住在哪？", session_id="s2", budget=400)
        l_ctx = mem.context("li", "我出差住在哪？", session_id="s2", budget=400)
        assert type(r_ctx) is type(l_ctx)
        assert [m["role"] for m in r_ctx.messages] == [m["role"] for m in l_ctx.messages]
        assert set(r_ctx.trace) == set(l_ctx.trace)


def test_turn_stream_and_traces(base: str, fake: FakeOpenAI) -> None:
    fake.script("Sesame is a lovely name!", "你说过：芝麻。")
    with Client(base) as client:
        result = client.turn("li", "s1", "My cat is called Sesame", system_prompt="be kind", temperature=0.2)
        assert isinstance(result, TurnResult) and result.reply == "Sesame is a lovely name!"
        assert len(result.turn_ids) == 2 and result.trace["route"]["mode"]
        sent = fake.chat_requests[-1]
        assert sent["messages"][0]["content"].startswith("be kind")
        assert sent["temperature"] == 0.2  # sampling parameters pass through to the upstream

        stream = client.stream("li", "s1", "我的猫叫什么？")
        assert stream.trace_id  # known before the first delta
        assert "".join(stream) == "你说过：芝麻。" == stream.text
        trace = client.trace(stream.trace_id)
        assert trace is not None and trace["id"] == stream.trace_id
        assert client.trace("no-such-trace") is None
        listed = client.traces("li", "s1")
        assert [t["id"] for t in listed][:2] == [stream.trace_id, result.trace_id]
        assert [t.content for t in client.session_turns("li", "s1")][-1] == "你说过：芝麻。"


def test_bookmarks_and_jobs(base: str, tmp_path: Path) -> None:
    with Client(base) as client:
        _fill(client)
        jobs = client.jobs(user_id="li")
        assert jobs and {j["kind"] for j in jobs} >= {"bookmark"}
        assert all(j["user_id"] == "li" for j in jobs)
        for _ in range(200):  # the server's worker writes the bookmarks of the full page
            found = client.bookmarks("li")
            if found:
                break
            time.sleep(0.05)
        assert found and isinstance(found[0], Bookmark) and found[0].keywords


def test_errors_are_memsched_exceptions(base: str, fake: FakeOpenAI) -> None:
    with Client(base) as client:
        with pytest.raises(InputError) as missing:
            client.search("nobody", "x")
        assert isinstance(missing.value, ServiceError) and missing.value.status == 404
        assert missing.value.code == "user_not_found" and "nobody" in str(missing.value)
        with pytest.raises(InputError, match="role"):
            client.add("li", "s1", "robot", "hi")  # type: ignore[arg-type]
        fake.script(Fail(500), Fail(500), Fail(500), Fail(500))
        with pytest.raises(LLMError) as upstream:
            client.turn("li", "s1", "hello")
        assert isinstance(upstream.value, ServiceError) and upstream.value.status == 502
        # The turn's trace is named, as ReplyError.trace_id names it embedded.
        failed = client.trace(upstream.value.trace_id or "")
        assert failed is not None and failed["error"] and failed["llm"]["outcome"] == "error"
    with Client("http://127.0.0.1:9") as nowhere, pytest.raises(ServiceError, match="cannot reach"):
        nowhere.health()


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (429, "upstream_rate_limited", LLMError),  # the upstream LLM's own answers, as embedded raises
        (400, "upstream_rejected", LLMError),
        (400, None, InputError),  # memsched's own 400: the request named something wrong
        (503, "no_upstream", ConfigError),
    ],
)
def test_the_upstreams_own_statuses_are_llm_errors(status: int, code: str | None, expected: type) -> None:
    from memsched.client import _raise_for

    request = httpx.Request("POST", "http://127.0.0.1:8377/v1/chat/completions")
    response = httpx.Response(
        status, json={"error": {"message": "m", "type": "t", "code": code}}, request=request
    )
    with pytest.raises(expected) as raised:
        _raise_for(response)
    assert isinstance(raised.value, ServiceError) and raised.value.status == status
    assert raised.value.code == code


def test_no_upstream_is_a_config_error(tmp_path: Path) -> None:
    cfg = Config.load(home=tmp_path / "srv", embedders="hash")
    with LiveServer(create_app(cfg)) as url, Client(url) as client:
        with pytest.raises(ConfigError) as err:
            client.turn("li", "s1", "hello")
        assert isinstance(err.value, ServiceError) and err.value.status == 503


def test_bearer_token_is_sent(base: str) -> None:
    seen: list[str | None] = []

    def record(request: httpx.Request) -> None:
        seen.append(request.headers.get("authorization"))

    http = httpx.Client(
        base_url=base, headers={"Authorization": "Bearer k-123"}, event_hooks={"request": [record]}
    )
    with Client(base, http=http) as client:
        client.health()
    http.close()
    assert seen == ["Bearer k-123"]
    with Client(base, api_key="k-456") as client:
        assert client._http.headers["authorization"] == "Bearer k-456"
        client.health()


def test_async_client(base: str, fake: FakeOpenAI) -> None:
    # Replies keyed by the user's message: background LLM jobs (bookmarks, profile extraction) of the
    # full page may call the fake in between and must not take a scripted reply.
    replies = {"记住哦": "好的，记住了。", "what's her name?": "Sesame!"}
    fake.responder = lambda body: replies.get(str(body["messages"][-1]["content"]), '{"facts": []}')

    async def main() -> None:
        async with AsyncClient(base) as client:
            turn = await client.add("li", "s1", "user", "我的猫叫芝麻")
            assert turn.id
            hits = await client.search("li", "芝麻")
            assert hits and "芝麻" in hits[0].turn.content
            ctx = await client.context("li", "猫叫什么", session_id="s2")
            assert any("芝麻" in str(m["content"]) for m in ctx.messages)
            result = await client.turn("li", "s1", "记住哦")
            assert result.reply == "好的，记住了。"
            stream = await client.stream("li", "s1", "what's her name?")
            got = [d async for d in stream]
            assert "".join(got) == "Sesame!" and stream.trace_id
            assert (await client.trace(stream.trace_id)) is not None
            assert [s.id for s in await client.sessions("li")] == ["s1"]
            with pytest.raises(InputError):
                await client.sessions("nobody")

    asyncio.run(main())


def test_forgetting_through_the_client(base: str) -> None:
    with Client(base) as client:
        added = _fill(client)
        client.add("li", "s2", "user", "我在学做四川火锅")
        assert client.delete_turns("li", [added[0].id or 0]) == 1
        assert added[0].id not in {h.turn.id for h in client.search("li", "Sesame cat")}
        assert client.delete_session("li", "s2") == 1
        assert [s.id for s in client.sessions("li")] == ["s1"]
        with pytest.raises(InputError) as gone:
            client.delete_turns("li", [added[0].id or 0])
        assert isinstance(gone.value, ServiceError) and gone.value.status == 404
        assert client.delete_user("li") == len(TURNS) - 1
        with pytest.raises(InputError):
            client.sessions("li")


@pytest.mark.parametrize("name", [".", "..", "org/42", "a b?c#d"])
def test_any_id_the_service_takes_can_be_read_and_deleted(base: str, fake: FakeOpenAI, name: str) -> None:
    """ "." and ".." were sent as dot segments: `/v1/users/../sessions` became `/v1/sessions`, relayed
    to the upstream, and the user's data could not be read or deleted through the client."""
    with Client(base) as client:
        client.add(name, name, "user", "I keep bees")
        assert [s.id for s in client.sessions(name)] == [name]
        assert [t.content for t in client.session_turns(name, name)] == ["I keep bees"]
        assert client.delete_session(name, name) == 1
        client.add(name, "s2", "user", "and a goat")
        assert client.delete_user(name) == 1
    assert not [r for r in fake.requests if "/sessions" in r.path or "/users" in r.path]


def test_api_keys_end_to_end(tmp_path: Path) -> None:
    """A service with keys: no key is a 401 ServiceError; the key's tenant sees only its own users."""
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        api_keys="acme:acme-key-0123456789abcdef,zeta:zeta-key-0123456789abcdef",
    )
    with LiveServer(create_app(cfg)) as url:
        with Client(url) as anonymous, pytest.raises(ServiceError) as denied:
            anonymous.search("li", "cat")
        assert denied.value.status == 401 and denied.value.code == "invalid_api_key"
        with Client(url, api_key="acme-key-0123456789abcdef") as acme:
            acme.add("li", "s1", "user", "My cat is called Sesame")
            assert acme.search("li", "Sesame")[0].turn.content == "My cat is called Sesame"
        with Client(url, api_key="zeta-key-0123456789abcdef") as zeta, pytest.raises(InputError):
            zeta.search("li", "Sesame")  # another tenant's "li" is another user, with no turns


def test_add_sends_the_user_timezone(base: str) -> None:
    late = datetime(2024, 10, 21, 20, 0, tzinfo=UTC)  # already the 22nd in Shanghai
    with Client(base) as client:
        client.add("tz", "s", "user", "昨天去爬山了", created_at=late, timezone="Asia/Shanghai")
        (turn,) = client.session_turns("tz", "s")
        assert turn.meta["dates"] == ["昨天 = 2024-10-21"]
        with pytest.raises(InputError, match="timezone"):
            client.add("tz", "s", "user", "hi", timezone="Mars/Olympus")
