"""The fake OpenAI server: scripting, routing, failures, streaming, embeddings, shutdown."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from memsched.testing import Delay, Fail, FakeOpenAI, Malformed, fake_embedding


def chat(fake: FakeOpenAI, text: str, **extra: object) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    return httpx.post(f"{fake.base_url}/chat/completions", json=body, timeout=5)


def content(resp: httpx.Response) -> str:
    return resp.json()["choices"][0]["message"]["content"]


def test_base_url_is_local_v1_and_models_lists_the_fake_model(fake: FakeOpenAI) -> None:
    assert fake.base_url == f"http://127.0.0.1:{fake.port}/v1"
    resp = httpx.get(f"{fake.base_url}/models", timeout=5)
    assert resp.status_code == 200
    assert [m["id"] for m in resp.json()["data"]] == ["fake-model"]


def test_default_responder_echoes_the_last_user_message(fake: FakeOpenAI) -> None:
    resp = chat(fake, "x" * 60)
    assert resp.status_code == 200
    assert content(resp) == "ok: " + "x" * 40
    assert resp.json()["choices"][0]["finish_reason"] == "stop"
    assert resp.json()["usage"]["prompt_tokens"] == 1


def test_requests_are_recorded_with_path_and_body(fake: FakeOpenAI) -> None:
    chat(fake, "hello", temperature=0)
    (req,) = fake.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.body["messages"] == [{"role": "user", "content": "hello"}]
    assert req.body["temperature"] == 0
    assert fake.chat_requests == [req.body]


def test_custom_responder_is_used_when_nothing_is_scripted() -> None:
    with FakeOpenAI(responder=lambda body: f"{len(body['messages'])} messages") as fake:
        assert content(chat(fake, "hi")) == "1 messages"


def test_scripted_replies_come_first_in_order_then_the_responder(fake: FakeOpenAI) -> None:
    fake.script("one", "two")
    assert [content(chat(fake, "q")) for _ in range(3)] == ["one", "two", "ok: q"]


def test_script_for_routes_by_message_text(fake: FakeOpenAI) -> None:
    fake.script_for("BOOKMARK", "bm-1", "bm-2")
    fake.script_for("RERANK", "rr-1")
    fake.script("plain")
    assert content(chat(fake, "please RERANK these")) == "rr-1"
    assert content(chat(fake, "write a BOOKMARK")) == "bm-1"
    assert content(chat(fake, "something else")) == "plain"
    assert content(chat(fake, "BOOKMARK again")) == "bm-2"
    # The routed queue is empty now: the request falls through to the responder.
    assert content(chat(fake, "BOOKMARK third")) == "ok: BOOKMARK third"


def test_dict_reply_with_tool_calls_is_normalised(fake: FakeOpenAI) -> None:
    fake.script(
        {"content": None, "tool_calls": [{"function": {"name": "page_in", "arguments": {"page": 3}}}]}
    )
    choice = chat(fake, "q").json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["id"]
    assert call["function"]["name"] == "page_in"
    assert json.loads(call["function"]["arguments"]) == {"page": 3}


def test_fail_sends_the_status_and_body(fake: FakeOpenAI) -> None:
    fake.script(Fail(503), Fail(status=400, body="bad request"))
    first = chat(fake, "q")
    assert first.status_code == 503
    assert first.json()["error"]["type"] == "server_error"
    second = chat(fake, "q")
    assert second.status_code == 400
    assert second.text == "bad request"


def test_malformed_is_200_with_a_body_that_is_not_json(fake: FakeOpenAI) -> None:
    fake.script(Malformed())
    resp = chat(fake, "q")
    assert resp.status_code == 200
    with pytest.raises(ValueError):
        resp.json()


def test_delay_then_answers(fake: FakeOpenAI) -> None:
    fake.script(Delay(0.05, then="late"), Delay(0.01))
    assert content(chat(fake, "q")) == "late"
    # A Delay without `then` answers with whatever would come next: here the responder.
    assert content(chat(fake, "q2")) == "ok: q2"


def test_delay_times_a_client_out(fake: FakeOpenAI) -> None:
    fake.script(Delay(5.0, then="too late"))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{fake.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "q"}]},
            timeout=0.2,
        )
    # The server is still healthy for the next request.
    assert content(chat(fake, "after")) == "ok: after"


def test_stream_sends_openai_sse_chunks_ending_with_done(fake: FakeOpenAI) -> None:
    fake.script("hello there world")
    with httpx.stream(
        "POST",
        f"{fake.base_url}/chat/completions",
        json={"messages": [{"role": "user", "content": "q"}], "stream": True},
        timeout=5,
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "hello there world"
    assert len([c for c in chunks if c["choices"][0]["delta"].get("content")]) == 3
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_embeddings_are_deterministic_unit_vectors(fake: FakeOpenAI) -> None:
    resp = httpx.post(
        f"{fake.base_url}/embeddings",
        json={"model": "e", "input": ["the cat sat", "the cat sat", "dogs bark loudly"]},
        timeout=5,
    )
    assert resp.status_code == 200
    vectors = np.array([d["embedding"] for d in sorted(resp.json()["data"], key=lambda d: d["index"])])
    assert vectors.shape == (3, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.array_equal(vectors[0], vectors[1])
    assert not np.allclose(vectors[0], vectors[2])
    assert vectors[0].tolist() == fake_embedding("the cat sat")


def test_embeddings_accept_a_single_string_and_scripted_failures(fake: FakeOpenAI) -> None:
    fake.script_embeddings(Fail(500))
    url = f"{fake.base_url}/embeddings"
    assert httpx.post(url, json={"input": "x"}, timeout=5).status_code == 500
    resp = httpx.post(url, json={"input": "x"}, timeout=5)
    assert len(resp.json()["data"]) == 1


def test_api_key_is_enforced_when_set() -> None:
    with FakeOpenAI(api_key="sk-test") as fake:
        url = f"{fake.base_url}/models"
        assert httpx.get(url, timeout=5).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer sk-test"}, timeout=5).status_code == 200


def test_unknown_route_and_bad_body(fake: FakeOpenAI) -> None:
    assert httpx.post(f"{fake.base_url}/nope", json={}, timeout=5).status_code == 404
    bad = httpx.post(f"{fake.base_url}/chat/completions", content=b"{not json", timeout=5)
    assert bad.status_code == 400


def test_concurrent_requests_each_get_one_answer(fake: FakeOpenAI) -> None:
    fake.script(*[f"r{i}" for i in range(16)])
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda i: content(chat(fake, f"q{i}")), range(16)))
    assert sorted(replies) == sorted(f"r{i}" for i in range(16))
    assert len(fake.requests) == 16


def test_close_stops_the_server_and_is_idempotent() -> None:
    fake = FakeOpenAI()
    port = fake.port
    fake.close()
    fake.close()
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(1)
        sock.connect(("127.0.0.1", port))


def test_close_cuts_a_pending_delay_short() -> None:
    fake = FakeOpenAI()
    fake.script(Delay(30.0, then="never mind"))
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(chat, fake, "q")
        while not fake.requests:  # wait until the server holds the request
            time.sleep(0.01)
        fake.close()
        # Either the delayed answer arrives early or the connection drops; it must not hang for 30s.
        try:
            resp = pending.result(timeout=10)
            assert content(resp) == "never mind"
        except httpx.HTTPError:
            pass


def test_labeller_requests_have_their_own_queue_and_list(fake: FakeOpenAI) -> None:
    from memsched.testing.fake_openai import LABEL_MARK, NO_LABEL

    fake.script("reply for the turn")
    label = f"{LABEL_MARK}.\nThe message to label:\nreply for the turn"
    assert content(chat(fake, label)) == NO_LABEL  # unscripted: no opinion, the script is left alone
    fake.script_labels('{"mode": "conflict", "mood": "upset"}')
    assert json.loads(content(chat(fake, label)))["mode"] == "conflict"
    assert content(chat(fake, "hello")) == "reply for the turn"
    assert [b["messages"][0]["content"] for b in fake.chat_requests] == ["hello"]
    assert len(fake.label_requests) == 2 and len(fake.requests) == 3
