"""The OpenAI-compatible chat client, `complete_json`, the call counter and the `openai` embedder,
all against the real-HTTP fake server."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from memsched.config import Config
from memsched.embed.openai import OpenAIEmbedder, from_config
from memsched.errors import ConfigError, EmbedderError, LLMError
from memsched.llm import (
    OpenAIChatClient,
    client_from_config,
    complete_json,
    extract_json_object,
    llm_calls,
)
from memsched.testing import Delay, Fail, FakeOpenAI, Malformed

KEY = "sk-secret-test-key"
USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def client(fake: FakeOpenAI) -> Iterator[OpenAIChatClient]:
    with OpenAIChatClient(fake.base_url, KEY, "test-model", timeout=5.0, backoff=0.01) as c:
        yield c


class Bookmark(BaseModel):
    title: str
    score: float


# --- complete --------------------------------------------------------------------------------


def test_complete_returns_content_usage_and_raw(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script("hi back")
    result = client.complete(USER, max_tokens=50, temperature=0.2)
    assert result.content == "hi back"
    assert result.tool_calls == []
    assert result.model == "test-model"
    assert result.usage["completion_tokens"] == 2
    assert result.raw["choices"][0]["message"]["content"] == "hi back"
    assert result.elapsed_ms != 0.0  # it was measured (no bound: timing belongs in benchmarks)
    (req,) = fake.requests
    assert req.path == "/v1/chat/completions"
    assert req.body == {"model": "test-model", "messages": USER, "max_tokens": 50, "temperature": 0.2}
    assert req.headers["authorization"] == f"Bearer {KEY}"  # recorded headers are case-insensitive


def test_trailing_slash_and_no_api_key(fake: FakeOpenAI) -> None:
    with OpenAIChatClient(fake.base_url + "/", None, "m") as c:
        assert c.complete(USER).content == "ok: hello there"
    (req,) = fake.requests
    assert req.path == "/v1/chat/completions"
    assert "Authorization" not in req.headers


def test_tool_calls_are_returned(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    tools = [{"type": "function", "function": {"name": "page_in", "parameters": {"type": "object"}}}]
    fake.script(
        {"content": "", "tool_calls": [{"id": "c1", "function": {"name": "page_in", "arguments": "{}"}}]}
    )
    result = client.complete(USER, tools=tools)
    assert result.tool_calls == [
        {"id": "c1", "type": "function", "function": {"name": "page_in", "arguments": "{}"}}
    ]
    assert result.content == ""
    assert fake.chat_requests[0]["tools"] == tools


def test_500_then_success_is_retried(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Fail(500), Fail(502), "finally")
    assert client.complete(USER).content == "finally"
    assert len(fake.chat_requests) == 3


def test_429_is_retried(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Fail(429), "ok")
    assert client.complete(USER).content == "ok"
    assert len(fake.chat_requests) == 2


def test_500_always_raises_after_retries_without_leaking_the_key(
    client: OpenAIChatClient, fake: FakeOpenAI
) -> None:
    fake.script(*[Fail(500, body=f"boom, you sent {KEY}")] * 3)
    with pytest.raises(LLMError) as info:
        client.complete(USER)
    message = str(info.value)
    assert "500" in message
    assert f"{fake.base_url}/chat/completions" in message
    assert KEY not in message
    assert len(fake.chat_requests) == 3  # 1 + retries=2


def test_a_password_in_the_url_is_sent_as_basic_auth_and_never_shown(fake: FakeOpenAI) -> None:
    """A helper LLM or embedding endpoint behind basic auth (`http://user:password@host/v1`) gets the
    credentials; errors (logs, a job's last_error, a trace) name the URL without them."""
    url = fake.base_url.replace("http://", "http://relay:s3cret-pw@")
    basic = "Basic " + base64.b64encode(b"relay:s3cret-pw").decode()
    with OpenAIChatClient(url, None, "fake-model", timeout=5, backoff=0.0) as chat:
        assert chat.complete(USER).content
        assert "".join(chat.stream(USER))
        assert [r.headers.get("authorization") for r in fake.requests] == [basic, basic]
        for failure in ([Fail(500)] * 3, [Malformed()]):
            fake.script(*failure)
            with pytest.raises(LLMError) as info:
                chat.complete(USER)
            assert "s3cret-pw" not in str(info.value) and "127.0.0.1" in str(info.value)
        fake.script(*[Fail(500)] * 3)
        with pytest.raises(LLMError) as info:
            "".join(chat.stream(USER))
        assert "s3cret-pw" not in str(info.value)
    embedder = OpenAIEmbedder(url.removesuffix("/v1") + "/v1", None, "emb", timeout=5, backoff=0.0)
    assert embedder.embed(["hello"]).shape[0] == 1
    assert fake.requests[-1].headers.get("authorization") == basic
    fake.script_embeddings(*[Fail(500)] * 3)
    with pytest.raises(EmbedderError) as failed:
        embedder.embed(["hello again"])
    assert "s3cret-pw" not in str(failed.value)


def test_400_is_not_retried(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Fail(400, body={"error": {"message": "bad model"}}), "never used")
    with pytest.raises(LLMError, match="400"):
        client.complete(USER)
    assert len(fake.chat_requests) == 1


def test_timeout_raises_llm_error(fake: FakeOpenAI) -> None:
    fake.script(*[Delay(5.0, then="late")] * 2)
    with (
        OpenAIChatClient(fake.base_url, KEY, "m", timeout=0.2, retries=1, backoff=0.0) as c,
        pytest.raises(LLMError, match="timed out") as info,
    ):
        c.complete(USER)
    assert fake.base_url in str(info.value)
    assert len(fake.chat_requests) == 2


def test_timeout_then_success_recovers(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Delay(5.0, then="late"), "in time")
    assert client.complete(USER, timeout=0.2).content == "in time"


def test_connect_error_names_the_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on `port` now.
    url = f"http://127.0.0.1:{port}/v1"
    with OpenAIChatClient(url, KEY, "m", retries=1, backoff=0.0) as c, pytest.raises(LLMError) as info:
        c.complete(USER)
    assert "connection failed" in str(info.value)
    assert url in str(info.value)


def test_malformed_body_raises_llm_error(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Malformed())
    with pytest.raises(LLMError, match="not JSON"):
        client.complete(USER)
    assert len(fake.chat_requests) == 1


# --- complete_json ---------------------------------------------------------------------------


def test_complete_json_extracts_from_fences_and_prose(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script('Sure! Here it is:\n```json\n{"title": "trip to Kyoto", "score": 0.75}\n```\nAnything else?')
    bookmark = complete_json(client, USER, Bookmark, purpose="bookmark")
    assert bookmark == Bookmark(title="trip to Kyoto", score=0.75)
    assert fake.chat_requests[0]["response_format"] == {"type": "json_object"}


def test_extract_json_object_skips_braces_that_are_not_json() -> None:
    assert extract_json_object('use {braces} like {"a": {"b": 1}} ok') == {"a": {"b": 1}}
    with pytest.raises(ValueError):
        extract_json_object("[1, 2] and no object")


@pytest.mark.parametrize("reply", ["no json here", '{"title": "x"}', '{"title": "x", "score": "high"}'])
def test_complete_json_invalid_raises(client: OpenAIChatClient, fake: FakeOpenAI, reply: str) -> None:
    fake.script(reply)
    with pytest.raises(LLMError, match="invalid JSON from LLM"):
        complete_json(client, USER, Bookmark, purpose="bookmark")


# --- streaming -------------------------------------------------------------------------------


def test_stream_deltas_concatenate(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script("the quick brown fox")
    deltas = list(client.stream(USER))
    assert len(deltas) == 4
    assert "".join(deltas) == "the quick brown fox"
    assert fake.chat_requests[0]["stream"] is True


def test_stream_retries_500_before_the_first_byte(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Fail(503), "second try")
    assert "".join(client.stream(USER)) == "second try"
    assert len(fake.chat_requests) == 2


def test_stream_errors_raise_llm_error(client: OpenAIChatClient, fake: FakeOpenAI) -> None:
    fake.script(Fail(401, body="no"))
    with pytest.raises(LLMError, match="401"):
        list(client.stream(USER))
    fake.script(Malformed())
    with pytest.raises(LLMError, match="invalid stream chunk"):
        list(client.stream(USER))


# --- call counter ----------------------------------------------------------------------------


def test_calls_are_counted_per_purpose_once_per_logical_call(
    client: OpenAIChatClient, fake: FakeOpenAI
) -> None:
    before = llm_calls()
    fake.script(Fail(500), "ok")  # a retried call still counts once
    client.complete(USER, purpose="rerank")
    fake.script('{"title": "t", "score": 1}')
    complete_json(client, USER, Bookmark, purpose="bookmark")
    list(client.stream(USER))
    after = llm_calls()
    assert after.get("rerank", 0) - before.get("rerank", 0) == 1
    assert after.get("bookmark", 0) - before.get("bookmark", 0) == 1
    assert after.get("reply", 0) - before.get("reply", 0) == 1


# --- client_from_config ----------------------------------------------------------------------


def test_client_from_config(tmp_path: Path) -> None:
    bare = Config.load(env={}, home=tmp_path)
    assert client_from_config(bare) is None
    assert client_from_config(bare, "upstream") is None

    up = Config.load(
        env={}, home=tmp_path, upstream_base_url="http://up/v1", upstream_model="big", upstream_api_key="k"
    )
    helper = client_from_config(up)
    assert helper is not None and helper.url == "http://up/v1/chat/completions" and helper.model == "big"
    assert helper.timeout == up.llm_timeout

    both = up.replace(llm_base_url="http://helper/v1/", llm_model="small")
    helper = client_from_config(both)
    upstream = client_from_config(both, "upstream")
    assert helper is not None and helper.url == "http://helper/v1/chat/completions"
    assert helper.model == "small"
    assert upstream is not None and upstream.model == "big"


# --- the openai embedder ---------------------------------------------------------------------


def test_openai_embedder_returns_normalised_float32(fake: FakeOpenAI) -> None:
    emb = OpenAIEmbedder(fake.base_url, KEY, "text-embed", batch_size=2)
    assert emb.model_id == "openai:text-embed"
    out = emb.embed(["a cat", "", "a dog", "a bird", "   ", "a fish"])
    assert out.dtype == np.float32
    assert out.shape == (6, 64)
    assert emb.dim == 64
    norms = np.linalg.norm(out, axis=1)
    assert np.allclose(norms[[0, 2, 3, 5]], 1.0, atol=1e-5)
    assert np.array_equal(norms[[1, 4]], [0.0, 0.0])  # blank texts are not sent
    embed_requests = [r.body for r in fake.requests if r.path.endswith("/embeddings")]
    assert [r["input"] for r in embed_requests] == [["a cat", "a dog"], ["a bird", "a fish"]]
    assert all(r["model"] == "text-embed" for r in embed_requests)
    emb.close()


def test_openai_embedder_discovers_dim_lazily_and_handles_empty_input() -> None:
    with FakeOpenAI(embed_dim=16) as fake:
        emb = OpenAIEmbedder(fake.base_url, None, "e")
        assert fake.requests == []  # nothing sent on construction
        empty = emb.embed([])
        assert empty.shape == (0, 16)
        assert empty.dtype == np.float32
        assert len(fake.requests) == 1  # the one probe that found the width
        emb.close()


def test_openai_embedder_errors_are_embedder_errors(fake: FakeOpenAI) -> None:
    fake.script_embeddings(Fail(400, body="nope"))
    emb = OpenAIEmbedder(fake.base_url, KEY, "e", backoff=0.0)
    with pytest.raises(EmbedderError, match="400"):
        emb.embed(["x"])
    emb.close()


def test_openai_embedder_from_config_requires_url_and_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMSCHED_EMBED_BASE_URL and MEMSCHED_EMBED_MODEL"):
        from_config(Config.load(env={}, home=tmp_path))
    with pytest.raises(ConfigError, match="MEMSCHED_EMBED_MODEL"):
        from_config(Config.load(env={}, home=tmp_path, embed_base_url="http://x/v1"))


def test_openai_embedder_is_registered(fake: FakeOpenAI, tmp_path: Path) -> None:
    # `create` imports every built-in embedder module (hashing, minilm, wordllama too).
    from memsched.embed.base import create

    cfg = Config.load(env={}, home=tmp_path, embed_base_url=fake.base_url, embed_model="e", embed_api_key=KEY)
    emb = create("openai", cfg)
    assert isinstance(emb, OpenAIEmbedder)
    vectors = emb.embed(["hello world"])
    assert vectors.shape == (1, 64)
    assert fake.requests[-1].headers["Authorization"] == f"Bearer {KEY}"
