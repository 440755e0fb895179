"""The Responses API through the proxy (`POST /v1/responses`), end to end: a real uvicorn server on
loopback, a FakeOpenAI upstream that speaks /v1/responses and records what reaches it, the `openai`
package and httpx as clients. Covered: the memory context in `instructions`/`input`, the fields
passed through (previous_response_id, store), what is recorded, streaming (events relayed unchanged,
chunks arriving before the upstream finishes, a cut-off stream), tools (a chained follow-up of
tool results completes the waiting turn), bad input, and the upstream's errors (a 404 said plainly).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from conftest import daytime_strategies

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import Cut, Fail, FakeOpenAI, Hold, LiveServer, Malformed


@pytest.fixture
def helper() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as f:
        yield f


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI, helper: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        llm_base_url=helper.base_url,
        llm_model="helper-model",
        llm_timeout=5.0,
        strategies=daytime_strategies(tmp_path / "strategies.toml"),
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)


def _turns(base: str, user: str = "ana", session: str = "r1") -> list[dict[str, Any]]:
    r = httpx.get(f"{base}/v1/users/{user}/sessions/{session}/turns", params={"limit": 100}, timeout=10)
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return list(r.json()["turns"])


def _post(base: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{base}/v1/responses", json=body, timeout=30)


def _body(text: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-x", "user": "ana", "metadata": {"session_id": "r1"}, "input": text, **extra}


# -- non-streaming ---------------------------------------------------------------------------------


def test_a_response_with_memory_through_the_openai_sdk(server: str, fake: FakeOpenAI) -> None:
    client = _client(server)
    fake.script("Rex is a fine name.")
    first = client.responses.create(
        model="gpt-x",
        input="My dog is called Rex.",
        instructions="You are Mo, brief and kind.",
        user="ana",
        metadata={"session_id": "r1"},
        temperature=0.4,
        max_output_tokens=120,
        store=False,
        previous_response_id="resp_earlier",
    )
    assert first.output_text == "Rex is a fine name."
    sent = fake.response_requests[-1]
    assert sent["model"] == "fake-model"  # the configured upstream model
    assert sent["instructions"].startswith("You are Mo, brief and kind.")
    assert sent["input"][-1] == {"role": "user", "content": "My dog is called Rex."}
    # The client's own fields reach the upstream as they are; memsched's own do not.
    assert sent["temperature"] == 0.4 and sent["max_output_tokens"] == 120
    assert sent["store"] is False and sent["previous_response_id"] == "resp_earlier"
    assert "user" not in sent and "metadata" not in sent and "stream" not in sent
    assert [(t["role"], t["content"]) for t in _turns(server)] == [
        ("user", "My dog is called Rex."),
        ("assistant", "Rex is a fine name."),
    ]

    fake.script("Rex.")
    raw = client.responses.with_raw_response.create(
        model="gpt-x", input="What is my dog called?", user="ana", metadata={"session_id": "r1"}
    )
    assert raw.parse().output_text == "Rex."
    sent = fake.response_requests[-1]
    # The earlier exchange is in what the upstream got (memsched's context, not the client's input).
    context = json.dumps([sent.get("instructions"), sent["input"][:-1]], ensure_ascii=False)
    assert "My dog is called Rex." in context and "Rex is a fine name." in context
    trace = httpx.get(f"{server}/v1/traces/{raw.headers['X-Memsched-Trace-Id']}", timeout=10).json()
    call = trace["llm"]["calls"][0]
    assert call["api"] == "responses" and call["usage"]["completion_tokens"] == 1
    assert trace["llm"]["usage"]["counted"] is False  # the upstream's input/output tokens


def test_input_items_persona_history_and_parts(server: str, fake: FakeOpenAI) -> None:
    fake.script("Lyon, as you said.")
    items = [
        {"role": "developer", "content": "Answer in one line."},
        {"role": "user", "content": [{"type": "input_text", "text": "My sister lives in Lyon."}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Lovely city!", "annotations": []}],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "Where does my sister live?"}]},
    ]
    r = _post(server, _body(items, instructions="You are Mo."))
    assert r.status_code == 200, r.text
    sent = fake.response_requests[-1]
    assert sent["instructions"].startswith("You are Mo.\n\nAnswer in one line.")
    # The history memsched never recorded reaches the model, and is not stored.
    texts = [m["content"] for m in sent["input"]]
    assert texts[-3:] == ["My sister lives in Lyon.", "Lovely city!", "Where does my sister live?"]
    assert all(m["role"] in ("user", "assistant") for m in sent["input"])
    assert [t["content"] for t in _turns(server)] == ["Where does my sister live?", "Lyon, as you said."]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"model": "m", "user": "ana"}, "input: field required"),
        (_body([]), "input: expected a string or a non-empty list"),
        (_body([{"role": "robot", "content": "hi"}]), "input.0.role"),
        (_body([{"role": "user", "content": 5}]), "input.0.content"),
        (_body(["hi"]), "input.0: expected an object"),
        (_body([{"content": "hi"}]), "input.0: an input item needs a `type`"),
        (_body([{"role": "system", "content": "be kind"}]), "input: must contain a user message"),
        (_body([{"role": "user", "content": "  "}]), "input.0.content: the last user message is empty"),
        (
            _body([{"role": "user", "content": [{"type": "input_image", "image_url": "file:///etc/x"}]}]),
            "input.0.content.0.image_url",
        ),
        (
            _body([{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]),
            "input: must contain a user message",
        ),
        ({"model": "m", "input": "hi"}, "MEMSCHED_DEFAULT_USER"),
        (_body("hi", metadata={"session_id": "r1", "timezone": "Mars/Base"}), "metadata.timezone"),
    ],
)
def test_bad_input_is_a_400_naming_it_and_nothing_is_stored(
    server: str, fake: FakeOpenAI, body: dict[str, Any], where: str
) -> None:
    r = _post(server, body)
    assert r.status_code == 400, r.text
    assert where in r.json()["error"]["message"]
    assert fake.response_requests == [] and _turns(server) == []


# -- the upstream's errors -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_without_the_responses_api_is_a_clear_404(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    fake.serve_responses = False
    with pytest.raises(openai.NotFoundError) as caught:
        _client(server).responses.create(
            model="m", input="hello?", user="ana", metadata={"session_id": "r1"}, stream=stream
        )
    message = str(caught.value)
    assert "does not serve /responses" in message and "/v1/chat/completions" in message
    # The message is kept (marked), and a retry once the upstream serves it replaces it.
    assert _turns(server)[-1]["meta"]["reply_failed"] is True
    fake.serve_responses = True
    fake.script("Hi!")
    assert (
        _client(server)
        .responses.create(model="m", input="hello?", user="ana", metadata={"session_id": "r1"})
        .output_text
        == "Hi!"
    )
    assert [t["content"] for t in _turns(server)] == ["hello?", "Hi!"]


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_rate_limits_and_rejections_keep_their_status(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    limited = Fail(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"})
    fake.script(limited, limited, limited)
    r = _post(server, _body("still there?", stream=stream))
    assert r.status_code == 429 and r.headers["retry-after"] == "7", r.text
    assert "Rate limit reached" in r.json()["error"]["message"]
    fake.script(Fail(400, {"error": {"message": "max_output_tokens must be >= 16"}}))
    r = _post(server, _body("again?", stream=stream, max_output_tokens=1))
    assert r.status_code == 400 and r.json()["error"]["code"] == "upstream_rejected"
    assert "max_output_tokens must be >= 16" in r.json()["error"]["message"]
    fake.script(Fail(500), Fail(500), Fail(500))
    r = _post(server, _body("and now?", stream=stream))
    assert r.status_code == 502 and r.json()["error"]["type"] == "upstream_error"
    assert [t["meta"].get("reply_failed") for t in _turns(server)] == [True, True, True]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_failure_names_the_turns_trace(server: str, fake: FakeOpenAI, stream: bool) -> None:
    """Every upstream failure answers with the trace header a reply carries, and that trace holds the
    error (before: the error response had no header, so the turn's trace could not be found)."""
    limited = Fail(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"})
    for failure, status in (
        ([Fail(500)] * 3, 502),
        ([limited] * 3, 429),
        ([Fail(400, {"error": {"message": "bad value"}})], 400),
        ([Malformed()], 502),
    ):
        fake.script(*failure)
        r = _post(server, _body("are you there?", stream=stream))
        assert r.status_code == status, r.text
        trace = httpx.get(f"{server}/v1/traces/{r.headers['X-Memsched-Trace-Id']}", timeout=10).json()
        assert trace["error"] and trace["llm"]["outcome"] == "error", trace
        if status == 429:
            assert r.headers["retry-after"] == "7"


# -- streaming -------------------------------------------------------------------------------------


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out, name = [], ""
    for line in text.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, json.loads(line[6:])))
    return out


def test_streamed_events_are_relayed_unchanged_and_the_text_recorded(server: str, fake: FakeOpenAI) -> None:
    fake.script("你好，阿娜！很高兴认识你。")
    stream = _client(server).responses.create(
        model="m", input="我叫阿娜。", user="ana", metadata={"session_id": "r1"}, stream=True
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]  # type: ignore[union-attr]
    assert len(deltas) > 1 and "".join(deltas) == "你好，阿娜！很高兴认识你。"
    assert [t["content"] for t in _turns(server)] == ["我叫阿娜。", "你好，阿娜！很高兴认识你。"]
    assert fake.response_requests[-1]["stream"] is True

    # Byte for byte: what the client reads is what the upstream sent.
    fake.script("Nice.")
    r = _post(server, _body("ok", stream=True))
    assert r.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in _events(r.text)]
    assert names == [data["type"] for _, data in _events(r.text)]
    assert "data: [DONE]" not in r.text  # the Responses API has no [DONE]
    completed = _events(r.text)[-1][1]["response"]
    assert completed["output"][0]["content"][0]["text"] == "Nice."


def test_events_arrive_before_the_upstream_finishes(server: str, fake: FakeOpenAI) -> None:
    gate = threading.Event()
    fake.script(Hold(gate, "one two three four five", after=4))
    with httpx.stream("POST", f"{server}/v1/responses", json=_body("count", stream=True), timeout=30) as r:
        lines = r.iter_lines()
        seen = []
        for line in lines:
            if line.startswith("event: "):
                seen.append(line[7:])
            if "response.output_text.delta" in seen:
                break
        assert "response.completed" not in seen  # the upstream is still held
        gate.set()
        rest = "\n".join(lines)
    assert "response.completed" in rest
    assert _turns(server)[-1]["content"] == "one two three four five"


def test_a_client_hanging_up_mid_stream_leaves_the_partial_reply(server: str, fake: FakeOpenAI) -> None:
    gate = threading.Event()
    # Events 0-3: created, in_progress, output_item.added, content_part.added; 4-5: "I ", "remember ".
    fake.script(Hold(gate, "I remember the shop was called Xiaoman", after=5))
    with httpx.stream(
        "POST", f"{server}/v1/responses", json=_body("The shop?", stream=True), timeout=30
    ) as r:
        got = ""
        for line in r.iter_lines():
            if line.startswith("data: "):
                got += json.loads(line[6:]).get("delta") or ""
            if got == "I remember ":
                break
    stored: list[dict[str, Any]] = []
    for _ in range(200):  # a bounded wait for the recording, not a timing assertion
        stored = _turns(server)
        if len(stored) == 2:
            break
        time.sleep(0.05)
    gate.set()
    assert [t["role"] for t in stored] == ["user", "assistant"]
    assert stored[1]["content"] == "I remember "
    assert stored[1]["meta"]["partial_reason"] == "client_disconnected"
    # memsched closed its upstream connection when the client left: the rest had nowhere to go.
    for _ in range(200):
        if fake.streams_broken + fake.streams_finished:
            break
        time.sleep(0.05)
    assert (fake.streams_broken, fake.streams_finished) == (1, 0)


def test_a_stream_cut_off_midway_is_an_error_event_and_a_partial_turn(server: str, fake: FakeOpenAI) -> None:
    fake.script(Cut("alpha beta gamma delta", after=5))
    r = _post(server, _body("go", stream=True))
    assert r.status_code == 200
    events = _events(r.text)
    assert events[-1][0] == "error" and events[-1][1]["code"] == "upstream_error"
    last = _turns(server)[-1]
    assert last["role"] == "assistant" and last["meta"]["partial"] is True
    assert last["content"].startswith("alpha")


def test_an_upstream_that_ignores_stream_true_still_streams(server: str, fake: FakeOpenAI) -> None:
    fake.ignore_stream = True
    fake.script("Whole at once.")
    events = list(
        _client(server).responses.create(
            model="m", input="hi", user="ana", metadata={"session_id": "r1"}, stream=True
        )
    )
    assert [e.type for e in events] == [
        "response.created",
        "response.output_text.delta",
        "response.completed",
    ]
    assert _turns(server)[-1]["content"] == "Whole at once."


# -- tools -----------------------------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.mark.parametrize("stream", [False, True])
def test_tool_results_chained_by_previous_response_id_complete_the_turn(
    server: str, fake: FakeOpenAI, stream: bool
) -> None:
    client = _client(server)
    call = {"id": "call_1", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    fake.script({"content": None, "tool_calls": [call]})
    ask = {"model": "m", "user": "ana", "metadata": {"session_id": "r1"}, "tools": [WEATHER]}
    if stream:
        events = list(client.responses.create(input="Weather in Paris?", stream=True, **ask))  # type: ignore[call-overload]
        first = events[-1].response
    else:
        first = client.responses.create(input="Weather in Paris?", **ask)  # type: ignore[call-overload]
    calls = [o for o in first.output if o.type == "function_call"]
    assert calls and calls[0].name == "get_weather" and json.loads(calls[0].arguments) == {"city": "Paris"}
    assert fake.response_requests[-1]["tools"] == [WEATHER]
    assert _turns(server)[-1]["meta"]["awaiting_tools"] is True

    fake.script("Sunny in Paris, 21°C.")
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21C"}
    final = client.responses.create(input=[output], previous_response_id=first.id, **ask)  # type: ignore[call-overload]
    assert final.output_text == "Sunny in Paris, 21°C."
    sent = fake.response_requests[-1]
    assert sent["previous_response_id"] == first.id and sent["input"][-1] == output
    assert sent["input"][-2] == {"role": "user", "content": "Weather in Paris?"}
    turns = _turns(server)
    assert [t["role"] for t in turns] == ["user", "assistant"]  # recorded once
    assert turns[1]["content"].startswith("Sunny in Paris, 21°C.") and "sunny, 21C" in turns[1]["content"]
    # The follow-up sent only the output: the call's name and arguments come from the pending turn,
    # as a chat client's resent tool_calls give them.
    exchange = turns[1]["meta"]["tool_exchange"]
    assert [(x["id"], x["name"]) for x in exchange] == [("call_1", "get_weather")]
    assert json.loads(exchange[0]["arguments"]) == {"city": "Paris"}
    assert "get_weather(" in turns[1]["content"]


def test_a_stateless_client_resending_its_tool_exchange(server: str, fake: FakeOpenAI) -> None:
    exchange = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "c9", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "c9", "output": "snow"},
    ]
    fake.script("Snow in Oslo.")
    r = _post(server, _body(exchange, tools=[WEATHER], store=False))
    assert r.status_code == 200, r.text
    assert fake.response_requests[-1]["input"][-2:] == exchange[1:]  # forwarded verbatim, last
    stored = _turns(server)[-1]
    assert stored["meta"]["tool_exchange"][0]["name"] == "get_weather"
    assert "get_weather" in stored["content"] and "snow" in stored["content"]


def test_an_assistant_prefill_item_stays_last(server: str, fake: FakeOpenAI) -> None:
    fake.script(" is the capital of France.")
    items = [
        {"role": "user", "content": "Tell me about Paris."},
        {"role": "assistant", "content": "Paris"},
    ]
    r = _post(server, _body(items))
    assert r.status_code == 200, r.text
    assert fake.response_requests[-1]["input"][-1] == {"role": "assistant", "content": "Paris"}
    assert _turns(server)[-1]["content"] == "Paris is the capital of France."


def test_an_input_file_reaches_the_upstream_with_the_message(server: str, fake: FakeOpenAI) -> None:
    """An `input_file` part beside the text goes upstream with the message (before, it was dropped)."""
    pdf = {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}
    content = [{"type": "input_text", "text": "what does this contract say?"}, pdf]
    r = _post(server, _body([{"role": "user", "content": content}]))
    assert r.status_code == 200, r.text
    last = fake.response_requests[-1]["input"][-1]
    assert last["role"] == "user" and last["content"][-1] == pdf
    assert last["content"][0] == {"type": "input_text", "text": "what does this contract say?"}
    assert _turns(server)[0]["content"] == "what does this contract say?"
