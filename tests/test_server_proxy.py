"""The OpenAI-compatible proxy end to end: a real uvicorn server on loopback, a FakeOpenAI upstream that
records every request (and a second one as memsched's helper LLM, so background jobs never take the
upstream's scripted replies), httpx and the `openai` package as clients.

Covered: parameters passed through, usage (the upstream's or counted), tools both ways (the turn
recorded once), real streaming (chunks arrive while the upstream is still held; a client hanging up
mid-stream leaves the partial reply recorded), streamed tool calls, the recall tool loop (answered
invisibly, bounded, streamed), upstream failures as 502s in OpenAI format.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from conftest import daytime_strategies

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import Cut, Delay, Fail, FakeOpenAI, Hold, LiveServer, Malformed

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def helper() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as f:
        yield f


def _serve(tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI, **overrides: Any) -> LiveServer:
    # Paging must not depend on the hour the suite runs at (late-night strategies load no pages).
    overrides.setdefault("strategies", daytime_strategies(tmp_path / "strategies.toml"))
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        llm_base_url=helper.base_url,
        llm_model="helper-model",
        **{"llm_timeout": 5.0, **overrides},
    )
    return LiveServer(create_app(cfg))


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI) -> Iterator[str]:
    with _serve(tmp_path, fake, helper) as base:
        yield base


def _body(text: str, *, user: str = "alice", session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {
        "model": "whatever-the-app-says",
        "user": user,
        "metadata": {"session_id": session},
        "messages": [{"role": "system", "content": "be kind"}, {"role": "user", "content": text}],
        **extra,
    }


def _post(base: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)


def _turns(base: str, user: str = "alice", session: str = "s1") -> list[dict[str, Any]]:
    r = httpx.get(f"{base}/v1/users/{user}/sessions/{session}/turns", params={"limit": 100})
    assert r.status_code == 200, r.text
    return list(r.json()["turns"])


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


def _streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))


def _trace(base: str, r: httpx.Response) -> dict[str, Any]:
    return dict(httpx.get(f"{base}/v1/traces/{r.headers['X-Memsched-Trace-Id']}").json())


# -- fidelity --------------------------------------------------------------------------------------


def test_sampling_and_unknown_fields_pass_through(server: str, fake: FakeOpenAI) -> None:
    fake.script("fine")
    params = {
        "temperature": 0.3,
        "top_p": 0.9,
        "max_tokens": 77,
        "max_completion_tokens": 88,
        "stop": ["\n\n", "END"],
        "seed": 42,
        "presence_penalty": 0.5,
        "frequency_penalty": -0.25,
        "response_format": {"type": "json_object"},
        "logit_bias": {"1234": -100},
        "n": 1,
        "reasoning_effort": "low",  # a field memsched has never heard of
        "service_tier": "default",
    }
    r = _post(server, _body("How are you?", **params))
    assert r.status_code == 200, r.text
    sent = fake.chat_requests[-1]
    for key, value in params.items():
        assert sent[key] == value, key
    assert sent["model"] == "fake-model"  # the configured upstream model
    assert "user" not in sent and "metadata" not in sent and "stream" not in sent
    assert sent["messages"][0]["content"].startswith("be kind")
    assert sent["messages"][-1] == {"role": "user", "content": "How are you?"}


def test_usage_is_the_upstreams(server: str, fake: FakeOpenAI) -> None:
    fake.script("three words here")
    r = _post(server, _body("hello there"))
    usage = r.json()["usage"]
    prompt = sum(len(str(m["content"]).split()) for m in fake.chat_requests[-1]["messages"])
    assert usage == {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}
    assert _trace(server, r)["llm"]["usage"]["counted"] is False


def test_the_trace_names_both_turns_and_the_replys_jobs(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI
) -> None:
    with _serve(tmp_path, fake, helper, page_size=2) as base:  # the reply completes a page
        fake.script("the reply")
        r = _post(base, _body("hello there"))
        assert r.status_code == 200, r.text
        trace = _trace(base, r)
        ids = [t["id"] for t in _turns(base)]
        assert len(ids) == 2 and trace["turn_ids"] == ids  # the message, then the reply
        assert trace["llm"]["outcome"] == "ok" and trace["llm"]["rounds"] == 1
        kinds = {j["kind"] for j in trace["jobs"]}
        assert "bookmark" in kinds  # queued by the reply, in the transaction that stored it


def test_usage_is_counted_when_the_upstream_gives_none(tmp_path: Path, helper: FakeOpenAI) -> None:
    with FakeOpenAI(usage=False) as bare, _serve(tmp_path, bare, helper) as base:
        bare.script("这是一个回答。")
        r = _post(base, _body("你好，今天怎么样？"))
        usage = r.json()["usage"]
        assert usage["prompt_tokens"] > 5 and usage["completion_tokens"] > 0
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert _trace(base, r)["llm"]["usage"]["counted"] is True
        bare.script("streamed without usage")
        s = _post(base, _body("and now?", stream=True, stream_options={"include_usage": True}))
        tail = [e for e in _events(s.text) if e.get("usage")]
        assert len(tail) == 1 and tail[0]["choices"] == [] and tail[0]["usage"]["completion_tokens"] > 0


# -- tools -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "result", "answer"),
    [
        ("What's the weather in Paris?", '{"temp_c": 18, "sky": "sunny"}', "It is 18°C and sunny in Paris."),
        ("杭州今天天气怎么样？", '{"temp_c": 9, "sky": "小雨"}', "杭州今天9度，有小雨。"),
    ],
)
def test_tools_both_ways_and_the_turn_is_recorded_once(
    server: str, fake: FakeOpenAI, question: str, result: str, answer: str
) -> None:
    call = {
        "id": "call_w1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "X"}'},
    }
    fake.script({"content": None, "tool_calls": [call]})
    first = _post(
        server, _body(question, tools=[WEATHER_TOOL], tool_choice="auto", parallel_tool_calls=False)
    )
    assert first.status_code == 200, first.text
    sent = fake.chat_requests[-1]
    assert (
        sent["tools"] == [WEATHER_TOOL]
        and sent["tool_choice"] == "auto"
        and sent["parallel_tool_calls"] is False
    )
    choice = first.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [call]  # unchanged
    assert [t["role"] for t in _turns(server)] == ["user"]

    # The app runs its tool and sends the result, repeating the conversation as OpenAI apps do.
    fake.script(answer)
    follow = _body(question, tools=[WEATHER_TOOL])
    follow["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_w1", "content": result},
    ]
    second = _post(server, follow)
    assert second.status_code == 200, second.text
    assert second.json()["choices"][0]["message"]["content"] == answer
    sent = fake.chat_requests[-1]["messages"]
    assert sent[-2:] == follow["messages"][-2:]  # the exchange, verbatim, after the scheduled context
    assert sent[-3] == {"role": "user", "content": question}
    stored = _turns(server)
    assert [t["role"] for t in stored] == ["user", "assistant"]  # recorded once
    assert stored[0]["content"] == question and not stored[0]["meta"].get("awaiting_tools")
    assert stored[1]["content"].startswith(answer) and "get_weather" in stored[1]["content"]
    assert result in stored[1]["content"]
    assert stored[1]["meta"]["tool_exchange"][0]["result"] == result


def test_streamed_tool_calls_reach_the_client_whole(server: str, fake: FakeOpenAI) -> None:
    args = '{"city": "Lisbon", "unit": "celsius"}'
    fake.script(
        {
            "content": None,
            "tool_calls": [{"id": "call_9", "function": {"name": "get_weather", "arguments": args}}],
        }
    )
    r = _post(server, _body("weather in Lisbon?", tools=[WEATHER_TOOL], stream=True))
    events = _events(r.text)
    parts = [tc for e in events for tc in (e["choices"][0]["delta"].get("tool_calls") or [])]
    assert len(parts) >= 2  # streamed in pieces, as the upstream sent them
    assert parts[0]["id"] == "call_9" and parts[0]["function"]["name"] == "get_weather"
    assert "".join(p["function"].get("arguments") or "" for p in parts) == args
    assert {p["index"] for p in parts} == {0}
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert r.text.rstrip().endswith("data: [DONE]")
    assert _turns(server)[-1]["meta"].get("awaiting_tools") is True


# -- streaming -------------------------------------------------------------------------------------


def test_chunks_arrive_before_the_upstream_finishes(server: str, fake: FakeOpenAI) -> None:
    gate = threading.Event()
    fake.script(Hold(gate, "one two three four five", after=2))
    with httpx.stream(
        "POST", f"{server}/v1/chat/completions", json=_body("count", stream=True), timeout=30
    ) as r:
        assert r.status_code == 200 and r.headers["X-Memsched-Trace-Id"]
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = r.iter_lines()
        got: list[str] = []
        for line in lines:
            if line.startswith("data: {"):
                got.append(_events(line)[0]["choices"][0]["delta"].get("content") or "")
            if "".join(got) == "one two ":
                break
        # The upstream is held mid-reply: these chunks came through before it finished.
        assert not gate.is_set() and fake.streams_finished == 0
        gate.set()
        rest = "\n".join(lines)
    assert "".join(got) + _streamed_text(_events(rest)) == "one two three four five"
    assert rest.rstrip().endswith("data: [DONE]")
    assert fake.chat_requests[-1]["stream"] is True
    assert [t["content"] for t in _turns(server)] == ["count", "one two three four five"]
    assert not _turns(server)[-1]["meta"].get("partial")


def test_a_client_hanging_up_mid_stream_leaves_the_partial_reply(server: str, fake: FakeOpenAI) -> None:
    gate = threading.Event()
    fake.script(Hold(gate, "我 记得 你 说过 那家 店 叫 小满", after=3))
    with httpx.stream(
        "POST", f"{server}/v1/chat/completions", json=_body("那家店叫什么？", stream=True), timeout=30
    ) as r:
        got = ""
        for line in r.iter_lines():
            if line.startswith("data: {"):
                got += _events(line)[0]["choices"][0]["delta"].get("content") or ""
            if got == "我 记得 你 ":
                break
    # the client has hung up; the upstream is still held
    stored: list[dict[str, Any]] = []
    for _ in range(200):
        stored = _turns(server)
        if len(stored) == 2:
            break
        time.sleep(0.05)
    gate.set()
    assert [t["role"] for t in stored] == ["user", "assistant"]
    assert stored[1]["content"] == "我 记得 你 "
    assert (
        stored[1]["meta"]["partial"] is True and stored[1]["meta"]["partial_reason"] == "client_disconnected"
    )


def test_an_upstream_breaking_off_mid_stream(server: str, fake: FakeOpenAI) -> None:
    fake.script(Cut("one two three four", after=2))
    r = _post(server, _body("count again", stream=True))
    assert r.status_code == 200  # the stream had started
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    assert _streamed_text(events) == "one two "
    assert (
        events[-1]["error"]["type"] == "upstream_error" and "ended before" in events[-1]["error"]["message"]
    )
    stored = _turns(server)[-1]
    assert stored["content"] == "one two " and stored["meta"]["partial_reason"] == "upstream_error"
    assert "ended before" in _trace(server, r)["error"]


def test_an_upstream_that_ignores_stream_true_still_streams_to_the_client(
    server: str, fake: FakeOpenAI
) -> None:
    fake.ignore_stream = True
    fake.script("whole at once")
    r = _post(server, _body("hi", stream=True, stream_options={"include_usage": True}))
    events = _events(r.text)
    assert _streamed_text(events) == "whole at once"
    assert (
        events[-2]["choices"][0]["finish_reason"] == "stop" and events[-1]["usage"]["completion_tokens"] == 3
    )
    assert _turns(server)[-1]["content"] == "whole at once"


def test_concurrent_streams_in_different_sessions(server: str, fake: FakeOpenAI) -> None:
    fake.chunk_delay = 0.01  # a slow model: the streams overlap
    fake.responder = lambda body: "reply to " + str(body["messages"][-1]["content"])
    results: dict[int, str] = {}

    def one(i: int) -> None:
        r = _post(server, _body(f"message {i}", session=f"c{i}", stream=True))
        results[i] = _streamed_text(_events(r.text))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {i: f"reply to message {i}" for i in range(6)}
    for i in range(6):
        assert [t["content"] for t in _turns(server, session=f"c{i}")] == [
            f"message {i}",
            f"reply to message {i}",
        ]


def _until(check: Callable[[], bool]) -> None:
    for _ in range(400):  # a bounded wait for a state, not a timing assertion
        if check():
            return
        time.sleep(0.025)
    raise AssertionError("the state was not reached")


def test_a_message_waits_for_the_previous_reply_of_its_session(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI
) -> None:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        llm_base_url=helper.base_url,
        llm_model="helper-model",
    )
    app = create_app(cfg)
    with LiveServer(app) as base:
        gate = threading.Event()
        fake.script(Hold(gate, "Sesame is a lovely name for a cat.", after=2))
        fake.responder = lambda body: "It is Sesame."
        replies: dict[str, str] = {}

        def first() -> None:
            replies["first"] = _streamed_text(
                _events(_post(base, _body("My cat is called Sesame", stream=True)).text)
            )

        def second() -> None:
            replies["second"] = _post(base, _body("what is my cat called?")).json()["choices"][0]["message"][
                "content"
            ]

        a = threading.Thread(target=first)
        a.start()
        _until(lambda: len(fake.chat_requests) == 1)  # the first reply is streaming, held mid-way
        b = threading.Thread(target=second)
        b.start()
        _until(lambda: app.state.service.order.waiting(("alice", "s1")) == 1)  # the second one waits
        assert len(fake.chat_requests) == 1
        gate.set()
        a.join(timeout=30)
        b.join(timeout=30)
        assert replies == {"first": "Sesame is a lovely name for a cat.", "second": "It is Sesame."}
        sent = fake.chat_requests[1]["messages"]
        assert any(
            "Sesame is a lovely name for a cat." in str(m["content"]) for m in sent
        )  # it saw the reply
        assert [t["content"] for t in _turns(base)] == [
            "My cat is called Sesame",
            "Sesame is a lovely name for a cat.",
            "what is my cat called?",
            "It is Sesame.",
        ]


def test_stream_with_usage_and_one_id(server: str, fake: FakeOpenAI) -> None:
    fake.script("short answer")
    r = _post(server, _body("hi", stream=True, stream_options={"include_usage": True}))
    events = _events(r.text)
    assert len({e["id"] for e in events}) == 1
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 2
    assert fake.chat_requests[-1]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_n_choices_reach_the_client_and_choice_0_is_recorded(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0)
    fake.script("Sesame is a lovely name for a cat")
    kwargs: dict[str, Any] = {
        "model": "m",
        "user": "alice",
        "metadata": {"session_id": "n3"},
        "messages": [{"role": "user", "content": "name ideas for my cat?"}],
        "n": 3,
    }
    texts: dict[int, str] = {}
    finishes: dict[int, str | None] = {}
    if stream:
        for chunk in client.chat.completions.create(**kwargs, stream=True):
            for c in chunk.choices:
                texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason:
                    finishes[c.index] = c.finish_reason
    else:
        reply = client.chat.completions.create(**kwargs)
        texts = {c.index: c.message.content or "" for c in reply.choices}
        finishes = {c.index: c.finish_reason for c in reply.choices}
    assert fake.chat_requests[-1]["n"] == 3
    assert texts == {
        0: "Sesame is a lovely name for a cat",
        1: "Sesame is a lovely name for a cat [1]",
        2: "Sesame is a lovely name for a cat [2]",
    }
    assert finishes == {0: "stop", 1: "stop", 2: "stop"}
    # One turn is recorded: the user's message and choice 0, never the choices mixed together.
    turns = _turns(server, session="n3")
    assert [(t["role"], t["content"]) for t in turns] == [
        ("user", "name ideas for my cat?"),
        ("assistant", "Sesame is a lovely name for a cat"),
    ]


# -- the recall tool loop --------------------------------------------------------------------------


def _seed_pages(base: str, user: str = "bob") -> list[int]:
    topics = [
        "I adopted a grey parrot named Kiwi who whistles the Mario theme",
        "My sister Ana moved to Porto to study marine biology",
        "I broke my wrist skateboarding near the old harbour in March",
        "我在学做四川火锅，最喜欢放毛肚和鸭血",
        "Our band practices jazz standards every Thursday in a garage",
        "我奶奶九十岁生日那天我们去了西湖边的楼外楼吃饭",
    ]
    for i, topic in enumerate(topics):
        for j in range(4):
            role = "user" if j % 2 == 0 else "assistant"
            text = topic if j == 0 else f"{topic} (detail {j} of story {i})"
            r = httpx.post(
                f"{base}/v1/turns", json={"user": user, "session_id": "old", "role": role, "content": text}
            )
            assert r.status_code == 201
    for _ in range(400):  # bounded wait for the in-process worker's bookmarks
        marks = httpx.get(f"{base}/v1/users/{user}/bookmarks").json()
        if len({p for m in marks for p in m["page_ids"]}) >= len(topics):
            return sorted({p for m in marks for p in m["page_ids"]})
        time.sleep(0.05)
    raise AssertionError("bookmarks were not written")


@pytest.fixture
def paging_server(tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI) -> Iterator[str]:
    with _serve(tmp_path, fake, helper, paging_mode="tools", page_size=4, budget=400) as base:
        yield base


def _index_pages(body: dict[str, Any]) -> list[int]:
    system = str(body["messages"][0]["content"])
    return [int(p) for p in re.findall(r"\[p(\d+) ", system)]


def _recall_call(page: int | str, n: int) -> dict[str, Any]:
    return {
        "id": f"call_r{n}",
        "type": "function",
        "function": {"name": "recall", "arguments": json.dumps({"page_id": page})},
    }


def _pager(final: str) -> Callable[[dict[str, Any]], Any]:
    """An upstream that recalls the first indexed page, then a page that does not exist, then answers."""

    def respond(body: dict[str, Any]) -> Any:
        tool_msgs = [m for m in body["messages"] if m.get("role") == "tool"]
        if not tool_msgs:
            return {"content": None, "tool_calls": [_recall_call(_index_pages(body)[0], 1)]}
        if len(tool_msgs) == 1:
            return {"content": None, "tool_calls": [_recall_call(99999, 2)]}
        return final

    return respond


@pytest.mark.parametrize("stream", [False, True])
def test_recall_loop_is_answered_invisibly(paging_server: str, fake: FakeOpenAI, stream: bool) -> None:
    pages = _seed_pages(paging_server)
    fake.responder = _pager("Kiwi whistles the Mario theme!")
    body = _body(
        "what does my parrot whistle?", user="bob", session="new", tools=[WEATHER_TOOL], stream=stream
    )
    r = _post(paging_server, body)
    assert r.status_code == 200, r.text
    if stream:
        events = _events(r.text)
        assert _streamed_text(events) == "Kiwi whistles the Mario theme!"
        assert not any(e["choices"][0]["delta"].get("tool_calls") for e in events if e["choices"])
        assert events[-1]["choices"][0]["finish_reason"] == "stop"
    else:
        message = r.json()["choices"][0]["message"]
        assert message["content"] == "Kiwi whistles the Mario theme!" and not message.get("tool_calls")
        assert r.json()["choices"][0]["finish_reason"] == "stop"
    reqs = fake.chat_requests
    assert len(reqs) == 3
    names = [t["function"]["name"] for t in reqs[0]["tools"]]
    assert names == ["get_weather", "recall"]  # offered next to the client's tools
    indexed = _index_pages(reqs[0])
    assert indexed and set(indexed) <= set(pages)
    page_text = reqs[1]["messages"][-1]
    assert page_text["role"] == "tool" and page_text["tool_call_id"] == "call_r1"
    assert f"[p{indexed[0]}," in page_text["content"]
    assert reqs[2]["messages"][-1]["content"].startswith("error: no page p99999")  # an error the model reads
    trace = _trace(paging_server, r)
    recalls = trace["llm"]["recall"]
    assert [(x["page_id"], x["ok"]) for x in recalls] == [(indexed[0], True), (99999, False)]
    assert trace["llm"]["rounds"] == 3
    stored = _turns(paging_server, "bob", "new")
    assert [t["role"] for t in stored] == ["user", "assistant"]
    assert stored[1]["meta"]["recalled_pages"] == [indexed[0]]
    # LFU: the recalled page's use was counted
    from memsched.store.sqlite import SQLiteStore

    db = Path(httpx.get(f"{paging_server}/healthz").json()["db"])
    store = SQLiteStore(db)
    try:
        assert store.page_use("bob")[indexed[0]][0] == 1
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["tools", "both"])
def test_recall_rounds_are_bounded(tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI, mode: str) -> None:
    with _serve(tmp_path, fake, helper, paging_mode=mode, page_size=4, budget=400) as base:
        _check_bounded(base, fake)


def _check_bounded(paging_server: str, fake: FakeOpenAI) -> None:
    _seed_pages(paging_server)

    def stubborn(body: dict[str, Any]) -> Any:
        if any(t["function"]["name"] == "recall" for t in body.get("tools") or []):
            return {
                "content": None,
                "tool_calls": [_recall_call(_index_pages(body)[0] if _index_pages(body) else 1, 7)],
            }
        return "I will answer without more pages."

    fake.responder = stubborn
    r = _post(paging_server, _body("tell me everything", user="bob", session="new", stream=True))
    assert _streamed_text(_events(r.text)) == "I will answer without more pages."
    reqs = fake.chat_requests
    assert len(reqs) == 4  # three recall rounds, then a call without the recall tool
    assert all("tools" in q for q in reqs[:3]) and "tools" not in reqs[3]
    assert len(_trace(paging_server, r)["llm"]["recall"]) == 3


def test_recall_is_not_offered_against_the_clients_wishes(paging_server: str, fake: FakeOpenAI) -> None:
    _seed_pages(paging_server)
    fake.script("a")
    _post(
        paging_server,
        _body("what did I adopt?", user="bob", session="new", tools=[WEATHER_TOOL], tool_choice="none"),
    )
    assert [t["function"]["name"] for t in fake.chat_requests[-1]["tools"]] == ["get_weather"]
    own = {
        "type": "function",
        "function": {"name": "recall", "parameters": {"type": "object", "properties": {}}},
    }
    fake.script(
        {"content": None, "tool_calls": [{"id": "own1", "function": {"name": "recall", "arguments": "{}"}}]}
    )
    r = _post(paging_server, _body("我的鹦鹉叫什么？", user="bob", session="new2", tools=[own]))
    assert fake.chat_requests[-1]["tools"] == [own]  # the app's own `recall` wins
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["id"] == "own1"  # and its calls go to the app


def test_no_recall_tool_in_retrieve_mode(server: str, fake: FakeOpenAI) -> None:
    fake.script("ok")
    _post(server, _body("hello"))
    assert "tools" not in fake.chat_requests[-1]


# -- failures --------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_failure_is_a_502_and_a_retry_replaces_the_turn(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    fake.script(Fail(500), Fail(500), Fail(500))
    r = _post(server, _body("are you there?", stream=stream))
    assert r.status_code == 502, r.text
    err = r.json()["error"]
    assert err["type"] == "upstream_error" and "500" in err["message"]
    assert _turns(server)[-1]["meta"]["reply_failed"] is True
    fake.script("I am here.")
    assert _post(server, _body("are you there?", stream=stream)).status_code == 200
    assert [t["content"] for t in _turns(server)] == ["are you there?", "I am here."]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_failure_names_the_turns_trace(server: str, fake: FakeOpenAI, stream: bool) -> None:
    """Every upstream failure answers with the trace header a reply carries, and that trace holds the
    error (before: the 502, 429, 400 and 404 had no header, so the turn's trace could not be found)."""
    limited = Fail(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"})
    for failure, status in (
        ([Fail(500)] * 3, 502),
        ([limited] * 3, 429),
        ([Fail(400, {"error": {"message": "bad value"}})], 400),
        ([Fail(404, {"error": {"message": "no such model"}})], 404),
        ([Malformed()], 502),
    ):
        fake.script(*failure)
        r = _post(server, _body("are you there?", stream=stream))
        assert r.status_code == status, r.text
        trace = _trace(server, r)
        assert trace["error"] and trace["llm"]["outcome"] == "error", trace
        assert trace["turn_ids"] == [_turns(server)[-1]["id"]]  # the user's message, kept
        if status == 429:
            assert r.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("reply", "stream", "names"),
    [
        ({"choices": [{"message": "hi"}]}, False, "choices.0.message is str"),
        ({"choices": [None]}, False, "choices.0 is null"),
        ({"choices": [{"message": {"content": 5}}]}, False, "choices.0.message.content is int"),
        ({"choices": [{"message": {"content": "hi", "tool_calls": [5]}}]}, False, "tool_calls.0 is int"),
        (
            {"choices": [{"message": {"content": None, "tool_calls": [{"id": "a", "function": "f"}]}}]},
            False,
            "choices.0.message.tool_calls.0.function is str",
        ),
        ({"choices": [{"delta": "hi"}]}, True, "choices.0.delta is str"),
        ({"choices": [{"delta": {"content": 5}}]}, True, "choices.0.delta.content is int"),
        ({"choices": [{"delta": {"tool_calls": "x"}}]}, True, "choices.0.delta.tool_calls is str"),
        (
            {"choices": [{"delta": {"tool_calls": [{"index": "a", "function": {"name": "f"}}]}}]},
            True,
            "choices.0.delta.tool_calls.0.index is str",
        ),
    ],
)
def test_an_upstream_reply_memsched_cannot_read_is_a_502_naming_it(
    server: str, fake: FakeOpenAI, reply: dict[str, Any], stream: bool, names: str
) -> None:
    """A completion (or stream chunk) of the wrong shape is the upstream's failure: a 502 naming the
    field, the user's message kept. Before, each was a 500 "internal error" (or, for a content that
    is not a string, a 400 blaming the client, or a stream cut off without an error)."""
    body = json.dumps(reply)
    fake.script(Malformed(body + "\n\ndata: [DONE]" if stream else body))
    r = _post(server, _body("are you there?", stream=stream))
    assert r.status_code == 502, r.text
    err = r.json()["error"]
    assert err["type"] == "upstream_error" and names in err["message"], err
    assert _turns(server)[-1]["meta"]["reply_failed"] is True


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_an_error_the_upstream_sends_with_a_200_is_a_502_that_says_it(
    server: str, fake: FakeOpenAI, path: str
) -> None:
    """Some gateways answer 200 with `{"error": {...}}`; the client must read the upstream's reason,
    not "no choices" (as before)."""
    fake.script(Malformed('{"error": {"message": "model is overloaded, try again", "code": 503}}'))
    body = {"model": "m", "user": "alice", "metadata": {"session_id": "s1"}}
    body |= {"messages": [{"role": "user", "content": "hi"}]} if "chat" in path else {"input": "hi"}
    r = httpx.post(server + path, json=body, timeout=30)
    assert r.status_code == 502, r.text
    assert "model is overloaded, try again" in r.json()["error"]["message"]
    assert _turns(server)[-1]["meta"]["reply_failed"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_reply_is_relayed_as_it_came_and_stored_as_it_can_be(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    """An upstream's text with a NUL or a lone surrogate, a `usage` that is not an object and a
    logprob of -Infinity (JSON readers take it; some servers send it) reach the client as sent; the
    reply is stored without the NUL, the surrogate made U+FFFD. Before, the NUL and the surrogate were
    a 400 blaming the client (the reply lost), or a 500; so were the usage and the -Infinity."""
    text = "cut \\ud83d and nul \\u0000 here"
    if stream:
        chunks = [
            '{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "' + text + '"}}]}',
            '{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": "n/a"}',
        ]
        fake.script(Malformed("\n\ndata: ".join(chunks) + "\n\ndata: [DONE]"))
    else:
        fake.script(
            Malformed(
                '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "' + text + '"},'
                ' "logprobs": {"content": [{"token": "cut", "logprob": -Infinity}]}}], "usage": "n/a"}'
            )
        )
    r = _post(server, _body("say something odd", stream=stream))
    assert r.status_code == 200, r.text
    if stream:
        assert _streamed_text(_events(r.text)) == "cut \ud83d and nul \x00 here"
    else:
        data = r.json()
        assert data["choices"][0]["message"]["content"] == "cut \ud83d and nul \x00 here"
        assert data["choices"][0]["logprobs"]["content"][0]["logprob"] == float("-inf")
        assert data["usage"]["prompt_tokens"] > 0  # counted, the upstream's being unreadable
    assert _turns(server)[-1]["content"] == "cut \ufffd and nul  here"


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_password_in_its_url_never_reaches_a_client(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI, stream: bool
) -> None:
    """An upstream behind HTTP basic auth (`https://user:password@host/v1`) still gets its
    credentials, but an upstream failure's error (sent to every API client) and the turn's trace
    name it without them. Before, both carried the password."""
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url.replace("http://", "http://relay:s3cret-pw@"),
        upstream_model="fake-model",
        llm_base_url=helper.base_url,
        llm_model="helper-model",
    )
    with LiveServer(create_app(cfg)) as base:
        fake.script("hello")
        assert _post(base, _body("hi", stream=stream)).status_code == 200
        basic = "Basic " + base64.b64encode(b"relay:s3cret-pw").decode()
        assert fake.requests[-1].headers.get("authorization") == basic
        for failure in ([Fail(500)] * 3, [Malformed()]):
            fake.script(*failure)
            r = _post(base, _body("are you there?", stream=stream))
            assert r.status_code == 502, r.text
            assert "s3cret-pw" not in r.text and "127.0.0.1" in r.json()["error"]["message"]
            traces = httpx.get(f"{base}/v1/users/alice/traces", timeout=10).json()
            assert "s3cret-pw" not in json.dumps(traces) and "127.0.0.1" in traces[0]["error"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_the_upstream_rejects_is_a_400_naming_it(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    # The app's own parameter was wrong: the SDK must see a 400 (which it does not retry), not a 502.
    fake.script(
        Fail(400, {"error": {"message": "temperature must be <= 2", "type": "invalid_request_error"}})
    )
    r = _post(server, _body("hi", temperature=5, stream=stream))
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["code"] == "upstream_rejected"
    assert "temperature must be <= 2" in err["message"]
    assert len(fake.chat_requests) == 1  # not retried upstream either
    assert _turns(server)[-1]["meta"]["reply_failed"] is True  # the message is kept


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_rate_limit_is_a_429_with_its_retry_after(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    limited = Fail(
        429,
        {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
        headers={"Retry-After": "7"},
    )
    fake.script(limited, limited, limited)  # every attempt memsched makes
    r = _post(server, _body("still there?", stream=stream))
    assert r.status_code == 429, r.text
    assert r.headers["retry-after"] == "7"
    err = r.json()["error"]
    assert err["type"] == "rate_limit_error" and "Rate limit reached" in err["message"]
    # The SDK's own retry after the wait replaces the failed turn instead of adding one.
    fake.script("Yes.")
    assert _post(server, _body("still there?", stream=stream)).status_code == 200
    assert [t["content"] for t in _turns(server)][-2:] == ["still there?", "Yes."]


# -- the openai package as the client --------------------------------------------------------------


def test_openai_sdk_non_streaming_streaming_and_tools(server: str, fake: FakeOpenAI) -> None:
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0)
    fake.script("Nice to meet you, Li Wei.")
    reply = client.chat.completions.create(
        model="m",
        user="liwei",
        metadata={"session_id": "sdk"},
        messages=[{"role": "user", "content": "I'm Li Wei"}],
        temperature=0.2,
    )
    assert reply.choices[0].message.content == "Nice to meet you, Li Wei."
    assert reply.usage is not None and reply.usage.total_tokens > 0
    assert fake.chat_requests[-1]["temperature"] == 0.2

    fake.script("你好，李伟！很高兴再见到你。")
    stream = client.chat.completions.create(
        model="m",
        user="liwei",
        metadata={"session_id": "sdk"},
        messages=[{"role": "user", "content": "还记得我吗？"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, usage = [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        usage = chunk.usage or usage
    assert "".join(pieces) == "你好，李伟！很高兴再见到你。" and len(pieces) > 1
    assert usage is not None and usage.completion_tokens > 0

    fake.script(
        {
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Beijing"}}}
            ],
        }
    )
    with_tools = client.chat.completions.create(
        model="m",
        user="liwei",
        metadata={"session_id": "sdk"},
        messages=[{"role": "user", "content": "Weather in Beijing?"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )
    calls = with_tools.choices[0].message.tool_calls
    assert with_tools.choices[0].finish_reason == "tool_calls" and calls
    assert calls[0].function.name == "get_weather" and json.loads(calls[0].function.arguments) == {
        "city": "Beijing"
    }  # type: ignore[union-attr]
    fake.script("Sunny, 25°C.")
    final = client.chat.completions.create(
        model="m",
        user="liwei",
        metadata={"session_id": "sdk"},
        messages=[
            {"role": "user", "content": "Weather in Beijing?"},
            with_tools.choices[0].message.model_dump(exclude_none=True),  # type: ignore[list-item]
            {"role": "tool", "tool_call_id": "c1", "content": "sunny 25"},
        ],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )
    assert final.choices[0].message.content == "Sunny, 25°C."
    roles = [t["role"] for t in _turns(server, "liwei", "sdk")]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_upstream_proxy_comes_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream client honours HTTP(S)_PROXY and NO_PROXY (read when it is made, not per request)."""
    from memsched.server.upstream import Upstream, env_proxy

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert env_proxy("https://api.example.com/v1/chat/completions") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert env_proxy("https://api.example.com/v1/chat/completions") == "http://proxy.example:3128"
    assert env_proxy("https://internal.example/v1/chat/completions") is None
    assert env_proxy("http://api.example.com/v1/chat/completions") is None  # no HTTP_PROXY set
    up = Upstream("https://api.example.com/v1", None, "m")
    assert up._proxy == "http://proxy.example:3128"


def test_models_are_listed_and_a_one_user_app_needs_no_user_field(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI, server: str
) -> None:
    """Clients that list models first (chat UIs, `client.models.list()`) and apps whose OpenAI client
    never sets `user` work unchanged; without MEMSCHED_DEFAULT_USER the missing user is a 400 that
    says how to set one."""
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    assert client.models.retrieve("gpt-4o-mini").id == "gpt-4o-mini"
    with pytest.raises(openai.BadRequestError, match="MEMSCHED_DEFAULT_USER"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    with _serve(tmp_path / "solo", fake, helper, default_user="solo") as base:
        solo = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        fake.script("Hello!")
        reply = solo.chat.completions.create(model="m", messages=[{"role": "user", "content": "I'm Ann."}])
        assert reply.choices[0].message.content == "Hello!"
        assert [t["content"] for t in _turns(base, "solo", "default")] == ["I'm Ann.", "Hello!"]
        # A blank user in a path is not the default user (before: DELETE /v1/users/%20 deleted solo).
        r = httpx.delete(f"{base}/v1/users/%20", timeout=30)
        assert r.status_code == 400 and "user: ' ' is blank" in r.json()["error"]["message"]
        r = httpx.get(f"{base}/v1/users/%20/sessions", timeout=30)
        assert r.status_code == 400 and "is blank" in r.json()["error"]["message"]
        assert [t["content"] for t in _turns(base, "solo", "default")] == ["I'm Ann.", "Hello!"]
    # No upstream configured: listing models is the same 503 as a chat completion.
    bare = Config.load(home=tmp_path / "bare", embedders="hash")
    with LiveServer(create_app(bare)) as base:
        r = httpx.get(f"{base}/v1/models", timeout=10)
        assert r.status_code == 503 and "MEMSCHED_UPSTREAM_MODEL" in r.json()["error"]["message"]


def test_embeddings_are_relayed_to_the_upstream_unchanged(
    fake: FakeOpenAI, server: str, tmp_path: Path
) -> None:
    """An app that uses one base URL for chat and embeddings (LangChain's OpenAIEmbeddings, RAG UIs)
    gets the upstream's embeddings through the proxy; its errors come back with their status."""
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0)
    out = client.embeddings.create(model="text-embedding-3-small", input=["hello", "world"])
    assert [d.index for d in out.data] == [0, 1] and out.model == "text-embedding-3-small"
    sent = [r for r in fake.requests if r.path.endswith("/embeddings")]
    assert sent[-1].body == {
        "model": "text-embedding-3-small",
        "input": ["hello", "world"],
        "encoding_format": "base64",
    }
    fake.script_embeddings(Fail(400, {"error": {"message": "bad input", "type": "invalid_request_error"}}))
    r = httpx.post(f"{server}/v1/embeddings", json={"model": "m", "input": "x"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["message"] == "bad input"
    r = httpx.post(f"{server}/v1/embeddings", content=b"not json", timeout=30)
    assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
    bare = Config.load(home=tmp_path / "bare", embedders="hash")
    with LiveServer(create_app(bare)) as base:
        r = httpx.post(f"{base}/v1/embeddings", json={"model": "m", "input": "x"}, timeout=30)
        assert r.status_code == 503 and "MEMSCHED_UPSTREAM_BASE_URL" in r.json()["error"]["message"]


def test_history_the_client_sends_from_before_memsched_is_shown_never_stored(
    server: str, fake: FakeOpenAI
) -> None:
    """An app that puts memsched in front of a conversation already under way sends its history with
    every request: the messages memsched never recorded reach the model (oldest first, before what
    memsched recorded) and are not stored; a forget of the session's first recorded turns ends them."""
    earlier = [
        {"role": "user", "content": "My sister is called Alice and she lives in Lyon."},
        {"role": "assistant", "content": "Lyon is lovely!"},
    ]

    def ask(history: list[dict[str, Any]], text: str) -> tuple[httpx.Response, list[dict[str, Any]]]:
        body = _body(text, session="mid")
        body["messages"] = [body["messages"][0], *history, {"role": "user", "content": text}]
        r = _post(server, body)
        assert r.status_code == 200, r.text
        return r, fake.chat_requests[-1]["messages"]

    fake.script("Alice, in Lyon.")
    r, sent = ask(earlier, "Where does my sister live?")
    assert sent[1:] == [*earlier, {"role": "user", "content": "Where does my sister live?"}]
    assert _trace(server, r)["client_history"] == {"sent": 2, "unseen": 2, "unseen_in_context": 2}
    stored = [t["content"] for t in _turns(server, session="mid")]
    assert stored == ["Where does my sister live?", "Alice, in Lyon."]  # the earlier messages are not stored

    # The next request carries the whole history: the unseen part once, then what memsched recorded.
    fake.script("Sure.")
    full = [
        *earlier,
        {"role": "user", "content": "Where does my sister live?"},
        {"role": "assistant", "content": "Alice, in Lyon."},
    ]
    r, sent = ask(full, "Remind me later.")
    assert [m["content"] for m in sent[1:]] == [m["content"] for m in full] + ["Remind me later."]
    assert _trace(server, r)["client_history"]["unseen"] == 2
    # A client that trims its history (the first recorded turn no longer sent) gets nothing added.
    fake.script("Ok.")
    r, sent = ask(full[3:], "ok")
    assert "Alice and she lives" not in json.dumps(sent)
    assert _trace(server, r)["client_history"]["unseen"] == 0

    # The session's first recorded turn is forgotten: the client still sends it, and what came before
    # it can no longer be told apart from it, so none of it reaches the model any more.
    first = _turns(server, session="mid")[0]
    gone = httpx.delete(f"{server}/v1/users/alice/turns/{first['id']}", timeout=30)
    assert gone.status_code == 200, gone.text
    fake.script("Hm?")
    r, sent = ask(full, "What did I ask you first?")
    assert "Lyon" not in json.dumps(sent[1:-1]).replace("Alice, in Lyon.", "")
    assert "Where does my sister live?" not in json.dumps(sent)
    assert _trace(server, r)["client_history"]["unseen"] == 0


@pytest.mark.parametrize("first_answer", ["upstream fails", "tool calls"])
def test_history_from_before_memsched_survives_a_retry_of_the_first_message(
    server: str, fake: FakeOpenAI, first_answer: str
) -> None:
    """The first message memsched records of a conversation it joined midway is replaced by the
    SDK's retry (its upstream call failed) or by the app's follow-up with the tool results: the
    replacement is the session's first recorded turn, so the client's earlier messages still reach
    the model, then and on every later request. Before, the replaced turn counted as a forgotten
    start of the session and they were never shown again."""
    earlier = [
        {"role": "user", "content": "My dog is called Biscuit."},
        {"role": "assistant", "content": "What a cute name!"},
    ]
    question = {"role": "user", "content": "What's the weather for a walk?"}
    body = _body("", session="joined", tools=[WEATHER_TOOL])
    body["messages"] = [body["messages"][0], *earlier, question]
    if first_answer == "upstream fails":
        fake.script(Fail(500), Fail(500), Fail(500))
        assert _post(server, body).status_code == 502
        fake.script("Sunny: a fine walk for Biscuit.")
        retry = body
    else:
        call = {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        fake.script({"content": None, "tool_calls": [call]}, "Sunny: a fine walk for Biscuit.")
        r = _post(server, body)
        assert r.json()["choices"][0]["finish_reason"] == "tool_calls", r.text
        exchange = [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_w", "content": "sunny"},
        ]
        retry = {**body, "messages": [*body["messages"], *exchange]}
    r = _post(server, retry)
    assert r.status_code == 200, r.text
    assert "Biscuit" in json.dumps(fake.chat_requests[-1]["messages"])
    assert _trace(server, r)["client_history"]["unseen"] == 2

    fake.script("It's Biscuit.")
    later = {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "Sunny: a fine walk for Biscuit."},
            {"role": "user", "content": "And what's my dog's name again?"},
        ],
    }
    r = _post(server, later)
    assert r.status_code == 200, r.text
    assert "My dog is called Biscuit." in json.dumps(fake.chat_requests[-1]["messages"])
    assert _trace(server, r)["client_history"]["unseen"] == 2
    assert _turns(server, session="joined")[0]["content"] == question["content"]


def test_a_message_longer_than_the_memory_budget_goes_through_whole(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI
) -> None:
    """The configured budget (2,000 tokens by default) is what memsched pages in; a pasted letter of
    ~3,000 tokens (under MEMSCHED_MAX_MESSAGE_TOKENS) is sent whole with the system prompt and no
    memory, the trace says by how much it went over. Before, it was a 400 and nothing was sent."""
    letter = "Dear Sam, thank you for the long chat about the garden and the old apple tree. " * 170
    with _serve(tmp_path, fake, helper) as base:
        for i, text in enumerate(["My sister planted tulips last spring.", "The tree is forty years old."]):
            body = {"model": "m", "user": "ana", "metadata": {"session_id": "s1"}}
            r = httpx.post(
                f"{base}/v1/chat/completions",
                json={**body, "messages": [{"role": "user", "content": text}]},
                timeout=60,
            )
            assert r.status_code == 200, (i, r.text)
        fake.clear()
        r = httpx.post(
            f"{base}/v1/chat/completions",
            json={
                "model": "m",
                "user": "ana",
                "metadata": {"session_id": "s1"},
                "messages": [
                    {"role": "system", "content": "You are Mo."},
                    {"role": "user", "content": letter},
                ],
            },
            timeout=60,
        )
        assert r.status_code == 200, r.text
        sent = fake.chat_requests[0]["messages"]
        assert sent[-1] == {"role": "user", "content": letter}
        assert sent[0]["role"] == "system" and sent[0]["content"].startswith("You are Mo.")
        trace = httpx.get(f"{base}/v1/traces/{r.headers['X-Memsched-Trace-Id']}", timeout=10).json()
        assert trace["tokens"]["budget"] == 2000 and trace["tokens"]["over_budget"] > 0
        assert trace["tokens"]["memory"] == 0 and trace["tokens"]["recent"] == 0
        # The message is stored like any other.
        turns = httpx.get(f"{base}/v1/users/ana/sessions/s1/turns", timeout=10).json()["turns"]
        assert any(t["content"] == letter for t in turns)
        # A budget the caller asks for is still a promise: too small for the message is a 400.
        r = httpx.post(
            f"{base}/v1/context", json={"user": "ana", "message": letter, "budget": 1000}, timeout=60
        )
        assert r.status_code == 400 and "budget" in r.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_trailing_assistant_prefill_stays_last(server: str, fake: FakeOpenAI, stream: bool) -> None:
    """An app that steers the start of the reply (messages ending with an assistant message) gets it
    forwarded last, after the scheduled context; the recorded reply is the prefill and what the
    upstream continued it with. It used to be dropped."""
    fake.script(' "Bob", "age": 41}')
    body = _body("Give my name and age as JSON.", stream=stream)
    body["messages"].append({"role": "assistant", "content": '{"name":'})
    r = _post(server, body)
    assert r.status_code == 200, r.text
    sent = fake.chat_requests[-1]["messages"]
    assert sent[-1] == {"role": "assistant", "content": '{"name":'}
    assert sent[-2] == {"role": "user", "content": "Give my name and age as JSON."}
    assert "tools" not in fake.chat_requests[-1]
    stored = _turns(server)[-1]
    assert stored["content"] == '{"name": "Bob", "age": 41}' and stored["meta"]["prefill_chars"] == 8
    # An upstream that repeats the prefill in its reply is not recorded twice over.
    fake.script('{"name": "Bob"}')
    body = _body("Just the name.", stream=stream)
    body["messages"].append({"role": "assistant", "content": [{"type": "text", "text": '{"name":'}]})
    assert _post(server, body).status_code == 200
    assert _turns(server)[-1]["content"] == '{"name": "Bob"}'


def test_safety_identifier_names_the_user(server: str, fake: FakeOpenAI) -> None:
    """OpenAI's newer SDKs and docs send `safety_identifier` instead of the deprecated `user`: it
    names whose memory to use when `user` and `metadata.user` are absent (it was "user is
    required"), and it still reaches the upstream as sent."""
    body = _body("My sister Anna lives in Lisbon.", session="si")
    del body["user"]
    body["safety_identifier"] = "hashed-li"
    r = httpx.post(f"{server}/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    assert fake.chat_requests[-1]["safety_identifier"] == "hashed-li"
    sessions = httpx.get(f"{server}/v1/users/hashed-li/sessions", timeout=30).json()
    assert [s["id"] for s in sessions] == ["si"]
    # `user` still wins when both are sent.
    body = _body("And my cat is called Miso.", user="alice", session="si2", safety_identifier="hashed-li")
    assert httpx.post(f"{server}/v1/chat/completions", json=body, timeout=60).status_code == 200
    assert [s["id"] for s in httpx.get(f"{server}/v1/users/alice/sessions", timeout=30).json()] == ["si2"]
    r = httpx.post(
        f"{server}/v1/responses",
        json={"model": "m", "input": "Where does Anna live?", "safety_identifier": "hashed-li"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert {s["id"] for s in httpx.get(f"{server}/v1/users/hashed-li/sessions", timeout=30).json()} == {
        "si",
        "default",
    }
    blank = _body("hi", session="si3", safety_identifier=" ")
    del blank["user"]
    r = httpx.post(f"{server}/v1/chat/completions", json=blank, timeout=60)
    assert r.status_code == 400 and "safety_identifier" in r.text


@pytest.mark.parametrize("stream", [False, True])
def test_parts_memsched_does_not_read_reach_the_upstream_with_the_message(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    """An audio or file part beside the text: memsched records the text, and the model gets the parts
    too. Before, they were dropped: the upstream answered "summarise this file" without the file."""
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    pdf = {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}}
    content = [{"type": "text", "text": "summarise this file and this clip"}, pdf, audio]
    body = _body("", stream=stream)
    body["messages"][-1]["content"] = content
    assert _post(server, body).status_code == 200
    last = fake.chat_requests[-1]["messages"][-1]
    assert last["role"] == "user" and last["content"][1:] == [pdf, audio]
    assert "summarise this file and this clip" in last["content"][0]["text"]
    assert _turns(server)[0]["content"] == "summarise this file and this clip"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_a_retry_after_the_client_timed_out_replaces_the_exchange(
    server: str, fake: FakeOpenAI, path: str, stream: bool
) -> None:
    """An SDK that times out waiting for a slow model sends the same message again. The first reply is
    recorded when it comes (the client has gone: it is marked undelivered) and the retry replaces that
    exchange, streamed or not (a stream the client left before its first event). Before, the session
    held the message twice, with both replies."""
    gate = threading.Event()
    fake.script(Hold(gate, "the slow reply", after=0), "the reply the client reads")
    body: dict[str, Any] = {"model": "m", "user": "alice", "metadata": {"session_id": "s1"}, "stream": stream}
    body |= (
        {"messages": [{"role": "user", "content": "are you there?"}]}
        if "chat" in path
        else {"input": "are you there?"}
    )
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server + path, json=body, timeout=httpx.Timeout(30, read=0.5))
    time.sleep(0.3)  # the hang-up reaches the server before the model answers, as an SDK's timeout does
    gate.set()
    for _ in range(200):  # the first attempt is over once its message or its reply is marked
        if any(t["meta"].get("undelivered") or t["meta"].get("reply_failed") for t in _turns(server)):
            break
        time.sleep(0.05)
    marks = [
        (t["content"], t["meta"].get("reply_failed"), t["meta"].get("undelivered")) for t in _turns(server)
    ]
    if stream:  # relayed no further: what came of the reply before the route saw the client gone
        assert marks in (
            [("are you there?", True, None)],
            [("are you there?", None, None), ("the ", None, True)],
        )
    else:
        assert marks == [("are you there?", None, None), ("the slow reply", None, True)]
    assert httpx.post(server + path, json=body, timeout=30).status_code == 200
    assert [t["content"] for t in _turns(server)] == ["are you there?", "the reply the client reads"]
    # Said again once its reply was read, the same message is a new turn.
    fake.script("yes, still here")
    assert httpx.post(server + path, json=body, timeout=30).status_code == 200
    assert len(_turns(server)) == 4


@pytest.mark.parametrize("stream", [False, True])
def test_a_user_deleted_while_the_model_answers_stays_deleted(
    server: str, fake: FakeOpenAI, stream: bool, tmp_path: Path
) -> None:
    """DELETE /v1/users/{user} while the upstream is still answering: the reply (which may repeat what
    was deleted) and the turn's trace are not stored when it comes. Before, they were, and the deleted
    user was back with them."""
    gate = threading.Event()
    fake.script(Hold(gate, "noted: your pin is 4821"))
    done: list[httpx.Response] = []
    talk = threading.Thread(target=lambda: done.append(_post(server, _body("my pin is 4821", stream=stream))))
    talk.start()
    for _ in range(200):
        if fake.chat_requests:
            break
        time.sleep(0.05)
    assert httpx.delete(f"{server}/v1/users/alice", timeout=30).status_code == 200
    gate.set()
    talk.join(30)
    assert done and done[0].status_code == 200  # the client still gets its reply
    assert httpx.get(f"{server}/v1/users/alice/sessions", timeout=10).status_code == 404
    files = list((tmp_path / "srv").glob("memsched.db*"))
    assert files and not [f.name for f in files if b"4821" in f.read_bytes()]


def test_a_reply_slower_than_the_helpers_timeout_still_comes(
    tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI
) -> None:
    """A non-streamed reply is silent until it is written: on a slow model that takes longer than the
    helper LLM's 20 s (`llm_timeout`), which the upstream used to share, so such replies were a 502
    after three tries. The upstream has its own `upstream_timeout` (600 s, the OpenAI SDK's)."""
    fake.script(Delay(1.5, then="worth the wait"))
    with _serve(tmp_path, fake, helper, llm_timeout=0.5) as base:
        r = _post(base, _body("take your time"))
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "worth the wait"
    fake.script(*[Delay(1.5, then="too late")] * 3)
    with _serve(tmp_path / "short", fake, helper, upstream_timeout=0.5) as base:
        r = _post(base, _body("take your time"))
        assert r.status_code == 502 and "timed out after 0.5s" in r.json()["error"]["message"]
