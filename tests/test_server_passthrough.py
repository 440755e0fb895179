"""Other /v1 paths through the proxy: relayed to the upstream as they came (method, query, body and
content type, memsched's upstream key), answered with the upstream's status, headers and body,
streamed as it arrives, without memory; legacy /v1/completions among them. memsched's own resource
paths are never relayed. A real uvicorn server on loopback, a FakeOpenAI upstream, the `openai`
package and httpx as clients.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import Fail, FakeOpenAI, Hold, LiveServer

UPSTREAM_KEY = "sk-upstream-secret"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, FakeOpenAI]]:
    with FakeOpenAI(api_key=UPSTREAM_KEY) as fake:
        cfg = Config.load(
            home=tmp_path / "srv",
            embedders="hash",
            upstream_base_url=fake.base_url,
            upstream_api_key=UPSTREAM_KEY,
            upstream_model="fake-model",
            llm_timeout=5.0,
        )
        with LiveServer(create_app(cfg)) as base:
            yield base, fake


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="the-apps-own-key", max_retries=0)


def test_moderations_files_and_speech_through_the_openai_sdk(server: tuple[str, FakeOpenAI]) -> None:
    base, fake = server
    client = _client(base)
    moderation = client.moderations.create(input=["hello", "I will kill the process"])
    assert [r.flagged for r in moderation.results] == [False, True]
    sent = fake.requests[-1]
    assert sent.path == "/v1/moderations" and sent.body["input"] == ["hello", "I will kill the process"]
    assert sent.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"  # memsched's key, not the app's

    uploaded = client.files.create(file=("notes.jsonl", b'{"a": 1}\n'), purpose="batch")
    assert uploaded.id.startswith("file-fake-") and uploaded.purpose == "batch"
    upload = fake.requests[-1]
    assert upload.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'{"a": 1}\n' in upload.raw and b'filename="notes.jsonl"' in upload.raw  # the bytes as sent

    listing = httpx.get(f"{base}/v1/files", params={"purpose": "batch", "limit": "3"}, timeout=10)
    assert listing.status_code == 200 and listing.headers["x-memsched-memory"] == "none"
    assert listing.json()["query"] == {"purpose": "batch", "limit": "3"}  # the query string went along
    assert [f["id"] for f in listing.json()["data"]] == [uploaded.id]
    assert client.files.delete(uploaded.id).deleted is True
    with pytest.raises(openai.NotFoundError):  # the upstream's 404, with its status
        client.files.delete(uploaded.id)

    speech = client.audio.speech.create(model="tts-1", voice="alloy", input="hello there")
    assert speech.response.headers["content-type"] == "audio/mpeg"
    assert speech.content == b"hello there" * 64


def test_legacy_completions_are_relayed_unchanged_and_streamed(server: tuple[str, FakeOpenAI]) -> None:
    """Legacy completions take a raw prompt (a base model's text, fill-in-the-middle): memsched cannot
    tell the user's message from the rest, and memory put in front of it would change what is being
    completed, so the prompt is relayed as it is and nothing is recorded."""
    base, fake = server
    client = _client(base)
    fake.script("Paris.")
    done = client.completions.create(model="davinci-002", prompt="The capital of France is", user="ana")
    assert done.choices[0].text == "Paris."
    assert fake.requests[-1].body == {
        "model": "davinci-002",
        "prompt": "The capital of France is",
        "user": "ana",
    }
    assert httpx.get(f"{base}/v1/users/ana/sessions", timeout=10).status_code == 404  # nothing stored

    gate = threading.Event()
    fake.script(Hold(gate, "one two three four", after=2))
    body = {"model": "m", "prompt": "count:", "stream": True}
    with httpx.stream("POST", f"{base}/v1/completions", json=body, timeout=30) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = r.iter_lines()
        first: list[str] = []
        for line in lines:
            if line.startswith("data: {"):
                first.append(json.loads(line[6:])["choices"][0]["text"])
            if len(first) == 2:
                break
        assert first == ["one ", "two "]  # arrived while the upstream is still held
        gate.set()
        rest = [json.loads(line[6:])["choices"][0]["text"] for line in lines if line.startswith("data: {")]
    assert "".join(first + rest) == "one two three four"


def test_the_upstreams_errors_come_back_as_they_are(server: tuple[str, FakeOpenAI]) -> None:
    base, fake = server
    fake.script(Fail(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "9"}))
    r = httpx.post(f"{base}/v1/completions", json={"model": "m", "prompt": "x"}, timeout=10)
    assert r.status_code == 429 and r.headers["retry-after"] == "9"
    assert r.json() == {"error": {"message": "slow down"}}
    assert len(fake.requests) == 1  # not retried: the client's SDK does that
    r = httpx.get(f"{base}/v1/batches", timeout=10)
    assert r.status_code == 404 and "no route for GET /v1/batches" in r.json()["error"]["message"]
    # A stored response or chat completion is the upstream's too.
    r = httpx.get(f"{base}/v1/responses/resp_123", timeout=10)
    assert r.status_code == 404 and fake.requests[-1].path == "/v1/responses/resp_123"


def test_memscheds_own_paths_are_never_relayed(server: tuple[str, FakeOpenAI], tmp_path: Path) -> None:
    base, fake = server
    before = len(fake.requests)
    r = httpx.get(f"{base}/v1/users/bob/secrets", timeout=10)
    assert r.status_code == 404 and "no such memsched resource" in r.json()["error"]["message"]
    r = httpx.get(f"{base}/v1/context", timeout=10)  # /v1/context is POST only
    assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.delete(f"{base}/v1/traces", timeout=10)
    assert r.status_code == 404
    assert len(fake.requests) == before
    bare = Config.load(home=tmp_path / "bare", embedders="hash")
    with LiveServer(create_app(bare)) as other:
        r = httpx.get(f"{other}/v1/files", timeout=10)
        assert r.status_code == 503 and "MEMSCHED_UPSTREAM_BASE_URL" in r.json()["error"]["message"]


def test_an_upstream_that_cannot_be_reached_is_a_502(tmp_path: Path) -> None:
    with FakeOpenAI() as gone:
        url = gone.base_url
    cfg = Config.load(
        home=tmp_path, embedders="hash", upstream_base_url=url, upstream_model="m", llm_timeout=2.0
    )
    with LiveServer(create_app(cfg)) as base:
        r = httpx.get(f"{base}/v1/files", timeout=10)
    assert r.status_code == 502 and "connection failed" in r.json()["error"]["message"]


def test_with_several_tenants_only_stateless_paths_are_relayed(tmp_path: Path) -> None:
    """Files, batches and stored responses upstream belong to memsched's one upstream key: with keys of
    two tenants, one tenant must not list what the other uploaded, so those paths are refused."""
    acme, globex = "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"
    with FakeOpenAI() as fake:
        for keys, files_status in ((f"acme:{acme}", 200), (f"acme:{acme},globex:{globex}", 403)):
            cfg = Config.load(
                home=tmp_path / str(files_status),
                embedders="hash",
                upstream_base_url=fake.base_url,
                upstream_model="m",
                api_keys=keys,
            )
            with LiveServer(create_app(cfg)) as base:
                auth = {"Authorization": f"Bearer {acme}"}
                before = len(fake.requests)
                r = httpx.get(f"{base}/v1/files", headers=auth, timeout=10)
                assert r.status_code == files_status, r.text
                if files_status == 403:
                    assert r.json()["error"]["code"] == "shared_upstream_state"
                    assert len(fake.requests) == before  # not relayed
                r = httpx.post(f"{base}/v1/moderations", json={"input": "hi"}, headers=auth, timeout=10)
                assert r.status_code == 200 and r.json()["results"][0]["flagged"] is False
                assert httpx.get(f"{base}/v1/files", timeout=10).status_code == 401  # no key
