"""The HTTP service, run for real with uvicorn on loopback; the upstream LLM is a FakeOpenAI server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.server.app import TRACE_HEADER
from memsched.testing import FakeOpenAI
from memsched.testing.service import proxy_server

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    with proxy_server(tmp_path / "srv", fake) as base:
        yield base


def _chat(base: str, text: str, **extra: Any) -> httpx.Response:
    body = {
        "model": "m",
        "user": "alice",
        "metadata": {"session_id": "s1"},
        "messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": text}],
        **extra,
    }
    return httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)


def test_chat_proxy_records_and_recalls(server: str, fake: FakeOpenAI) -> None:
    fake.script("Sesame is a lovely name!", "You told me: Sesame.")
    first = _chat(server, "My cat is called Sesame")
    assert first.status_code == 200, first.text
    assert first.json()["choices"][0]["message"]["content"] == "Sesame is a lovely name!"
    trace_id = first.headers[TRACE_HEADER]
    assert httpx.get(f"{server}/v1/traces/{trace_id}").json()["id"] == trace_id

    second = _chat(server, "what is my cat called?")
    assert second.status_code == 200
    sent = fake.chat_requests[-1]["messages"]
    assert any("Sesame" in str(m["content"]) for m in sent)  # the first exchange reached the upstream context
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith("be nice")  # the client's persona

    hits = httpx.get(f"{server}/v1/users/alice/search", params={"q": "Sesame"}).json()
    assert hits and "Sesame" in hits[0]["content"]


def test_stream_returns_sse_chunks(server: str, fake: FakeOpenAI) -> None:
    fake.script("streamed reply")
    resp = _chat(server, "hello", stream=True)
    assert resp.status_code == 200
    assert resp.headers[TRACE_HEADER]
    assert resp.text.rstrip().endswith("data: [DONE]")
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: {")]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == "streamed reply"


def test_context_and_turns_endpoints(server: str) -> None:
    r = httpx.post(
        f"{server}/v1/turns",
        json={"user": "bob", "session_id": "s", "role": "user", "content": "I am allergic to peanuts"},
    )
    assert r.status_code == 201 and r.json()["turn_id"] > 0
    ctx = httpx.post(
        f"{server}/v1/context", json={"user": "bob", "message": "what am I allergic to?", "budget": 300}
    )
    assert ctx.status_code == 200
    body = ctx.json()
    assert "peanuts" in body["messages"][0]["content"]
    assert body["trace"]["tokens"]["total"] <= 300


def test_a_context_without_record_carries_the_profile_and_the_clock(server: str) -> None:
    """An app that calls its own LLM and records with /v1/turns builds each context without `record`:
    it gets what a recorded message's context would carry of the user (the profile facts, the
    user's local time), and nothing is stored. Before, it got the bare default system prompt, so the
    user's name and allergies reached its LLM only when a search happened to page their turn in."""
    said = [
        ("user", "My name is Bob and I'm allergic to peanuts."),
        ("assistant", "Nice to meet you, Bob."),
        *[(role, f"Chat line {i} about the weather.") for i in range(14) for role in ("user", "assistant")],
    ]
    for role, text in said:
        r = httpx.post(
            f"{server}/v1/turns",
            json={"user": "bob", "session_id": "s", "role": role, "content": text, "timezone": "Asia/Tokyo"},
        )
        assert r.status_code == 201, r.text
    before = httpx.get(f"{server}/v1/users/bob/sessions/s/turns", params={"limit": 500}).json()["turns"]
    ctx = httpx.post(
        f"{server}/v1/context",
        json={"user": "bob", "message": "What should I cook tonight?", "session_id": "s", "budget": 400},
    )
    assert ctx.status_code == 200, ctx.text
    system = ctx.json()["messages"][0]["content"]
    profile = system[system.index("User profile") :]  # the facts themselves, not a recalled turn
    assert "Bob" in profile and "peanuts" in profile and "(Asia/Tokyo)" in system, system
    assert ctx.json()["trace"]["tokens"]["total"] <= 400
    after = httpx.get(f"{server}/v1/users/bob/sessions/s/turns", params={"limit": 500}).json()["turns"]
    assert after == before


def _said(base: str, user: str, text: str) -> list[int]:
    """Records a user turn; returns the ids of the jobs it queued (a command in it acts in a P1 job)."""
    body = {"user": user, "session_id": "s", "role": "user", "content": text}
    r = httpx.post(f"{base}/v1/turns", json=body)
    assert r.status_code == 201, r.text
    return list(r.json()["jobs"])


def _jobs(base: str, user: str) -> dict[int, str]:
    return {j["id"]: j["status"] for j in httpx.get(f"{base}/v1/jobs", params={"user": user}).json()}


def _ran(base: str, user: str, job_ids: list[int]) -> None:
    """Waits until the background jobs `job_ids` are done: a command recorded through /v1/turns acts
    in a P1 job that the session's next turn waits for, but a read of the profile does not."""
    for _ in range(2400):  # a bounded wait for a state, not a timing assertion
        if all(_jobs(base, user).get(i) == "done" for i in job_ids):
            return
        time.sleep(0.025)
    raise AssertionError(f"jobs {job_ids} did not run: {_jobs(base, user)}")


def _context(base: str, user: str, message: str, **extra: Any) -> httpx.Response:
    body = {"user": user, "message": message, "session_id": "s", **extra}
    return httpx.post(f"{base}/v1/context", json=body, timeout=30)


@pytest.mark.parametrize("record", [False, True])
def test_a_context_keeps_the_budget_asked_for_with_or_without_record(server: str, record: bool) -> None:
    """`budget` holds whether the message is recorded or not. Before, `"record": true` built the context
    with the configured budget (2,000 tokens) whatever the app asked for."""
    for i in range(30):
        text = f"Day {i}: we talked about the garden, the tomatoes and the long walk by the river."
        _said(server, "bob", text)
    for budget in (250, 3000):
        ctx = _context(server, "bob", "the garden?", budget=budget, record=record)
        assert ctx.status_code == 200, ctx.text
        tokens = ctx.json()["trace"]["tokens"]
        assert tokens["budget"] == budget and tokens["total"] <= budget, tokens


def test_a_recorded_context_over_its_budget_changes_nothing(server: str) -> None:
    """A budget too small for even the message is a 400 before the message's commands act: a "call me
    Bob" in it renames nobody, and nothing is recorded."""
    # "My name is Alice" is itself a rename, applied by a background job: the profile is read once
    # it ran. Before, a loaded machine ran it after that read, and the test saw a change that was not
    # the refused message's.
    _ran(server, "al", _said(server, "al", "My name is Alice"))
    before = httpx.get(f"{server}/v1/users/al/profile").json()
    assert {(f["key"], f["value"]) for f in before["facts"]} >= {("preferred_name", "Alice")}, before
    jobs = _jobs(server, "al")
    r = _context(server, "al", "Call me Bob from now on", budget=30, record=True)
    assert r.status_code == 400 and "budget" in r.json()["error"]["message"], r.text
    assert _jobs(server, "al") == jobs  # nothing was queued for the refused message
    assert httpx.get(f"{server}/v1/users/al/profile").json() == before
    turns = httpx.get(f"{server}/v1/users/al/sessions/s/turns").json()["turns"]
    assert [t["content"] for t in turns] == ["My name is Alice"]


def test_a_time_zone_is_read_without_blanks_around_it(server: str, fake: FakeOpenAI) -> None:
    """ " Asia/Tokyo " (a value pasted from a form) is Asia/Tokyo: before, the model's clock line read
    "( Asia/Tokyo )" on every turn."""
    r = _chat(server, "hello", metadata={"session_id": "s1", "timezone": " Asia/Tokyo "})
    assert r.status_code == 200, r.text
    assert "(Asia/Tokyo)" in fake.chat_requests[-1]["messages"][0]["content"]
    ctx = _context(server, "alice", "hi", timezone="\tAsia/Tokyo ", record=True)
    assert ctx.status_code == 200 and "(Asia/Tokyo)" in ctx.json()["messages"][0]["content"], ctx.text


def test_bad_input_is_a_clear_400(server: str) -> None:
    r = httpx.post(f"{server}/v1/context", content=b"{not json")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(f"{server}/v1/context", json={"message": "hi"})
    assert r.status_code == 400 and "user" in r.json()["error"]["message"]
    r = httpx.post(f"{server}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400 and "user" in r.json()["error"]["message"]
    r = httpx.get(f"{server}/v1/users/nobody/search", params={"q": "x"})
    assert r.status_code == 404


def test_upstream_failure_is_a_502(server: str, fake: FakeOpenAI) -> None:
    from memsched.testing import Fail

    fake.script(Fail(500), Fail(500), Fail(500))
    r = _chat(server, "are you there?")
    assert r.status_code == 502
    assert "upstream" in r.json()["error"]["type"]


def test_metrics_exposed(server: str, fake: FakeOpenAI) -> None:
    fake.script("hi")
    _chat(server, "hello")
    text = httpx.get(f"{server}/metrics").text
    assert "memsched_turns" in text


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/v1/turns", {"user": "b", "session_id": "s", "role": "robot", "content": "x"}, "role"),
        (
            "/v1/turns",
            {"user": "b", "session_id": "s", "content": "x", "timestamp": "not a date"},
            "timestamp",
        ),
        ("/v1/context", {"user": "b", "message": "hi", "budget": 0}, "budget"),
        ("/v1/context", {"user": "b", "message": "hi", "budget": 5}, "budget"),
        ("/v1/context", {"user": "b", "message": "hi", "record": True}, "session_id"),
        ("/v1/chat/completions", {"user": "b", "messages": []}, "messages"),
        ("/v1/chat/completions", {"user": "b", "messages": [{"role": "user", "content": 5}]}, "content"),
    ],
)
def test_bad_requests_name_the_problem(server: str, path: str, body: dict, needle: str) -> None:
    before = {j["id"] for j in httpx.get(f"{server}/v1/jobs").json()}
    r = httpx.post(f"{server}{path}", json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]["message"]
    # Nothing was queued by a rejected request (jobs queued before may finish meanwhile: ids, not states).
    assert {j["id"] for j in httpx.get(f"{server}/v1/jobs").json()} == before


def test_forget_the_message_named_before_the_verb(server: str, fake: FakeOpenAI) -> None:
    """Topic-comment order, with a few words saying which message ("刚才骂老板的那句你删了吧"): before, it
    was no command and the message stayed in memory and in the next context."""
    assert _chat(server, "我们老板就是个糊涂蛋，什么都不懂").status_code == 200
    r = _chat(server, "刚才骂老板的那句你删了吧")
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}").json()
    assert [b["command"] for b in trace["blocking"]] == ["forget_last"]
    turns = httpx.get(f"{server}/v1/users/alice/sessions/s1/turns").json()["turns"]
    assert not any("糊涂蛋" in t["content"] for t in turns)
    assert _chat(server, "今天吃什么").status_code == 200
    assert "糊涂蛋" not in json.dumps(fake.chat_requests[-1]["messages"], ensure_ascii=False)


@pytest.mark.parametrize(
    ("topic_line", "other", "forget_topic", "scratch"),
    [
        (
            "My ex Marcus texted me again, ugh.",
            "Anyway, pizza tonight.",
            "please forget everything about Marcus",
            "Actually, scratch what I just said.",
        ),
        ("前男友小凯又给我发消息了", "算了，今晚吃火锅", "把关于小凯的事都忘了", "忘掉刚才那句话"),
    ],
)
def test_forget_last_right_after_a_topic_forget_deletes_nothing_older(
    server: str, fake: FakeOpenAI, topic_line: str, other: str, forget_topic: str, scratch: str
) -> None:
    """ "Scratch what I just said" right after "forget everything about Marcus" (which leaves neither
    itself nor its reply stored) refers to that command: the unrelated message before it stays, and
    the trace and the reply's prompt say why nothing was deleted (walka finding 13)."""
    for text in (topic_line, other, forget_topic):
        assert _chat(server, text).status_code == 200
    r = _chat(server, scratch)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}").json()
    [block] = [b for b in trace["blocking"] if b["kind"] == "consistency"]
    assert block["command"] == "forget_last" and block["deleted_turn_ids"] == []
    assert block["changed"]["nothing_because"] == "the previous message was itself a forget command"
    system = str(fake.chat_requests[-1]["messages"][0]["content"])
    assert "was itself a request to forget something" in system
    turns = httpx.get(f"{server}/v1/users/alice/sessions/s1/turns").json()["turns"]
    contents = [t["content"] for t in turns]
    assert other in contents and topic_line not in contents
    # A message said after the topic forget is again what "scratch that" deletes.
    assert _chat(server, "I might get a dog" if other.isascii() else "我可能要养狗了").status_code == 200
    r = _chat(server, scratch)
    trace = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}").json()
    [block] = [b for b in trace["blocking"] if b["kind"] == "consistency"]
    assert len(block["deleted_turn_ids"]) >= 1
    contents = [t["content"] for t in httpx.get(f"{server}/v1/users/alice/sessions/s1/turns").json()["turns"]]
    assert other in contents and not any("dog" in c or "养狗" in c for c in contents)


def test_forget_last_twice_does_not_reach_past_the_first_command(server: str, fake: FakeOpenAI) -> None:
    """A second "forget what I just said" names the first one, a forget itself: nothing older goes."""
    for text in (
        "I'm thinking of quitting my job",
        "my sister is visiting next week",
        "forget what I just said",
    ):
        assert _chat(server, text).status_code == 200
    r = _chat(server, "forget what I just said")
    trace = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}").json()
    [block] = [b for b in trace["blocking"] if b["kind"] == "consistency"]
    assert block["deleted_turn_ids"] == [] and block["changed"]["nothing_because"]
    contents = [t["content"] for t in httpx.get(f"{server}/v1/users/alice/sessions/s1/turns").json()["turns"]]
    assert "I'm thinking of quitting my job" in contents and "my sister is visiting next week" not in contents
