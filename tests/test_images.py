"""Images in user messages, through the HTTP service: the vision model (the loopback fake) describes
them, the caption is stored with the turn, searchable, in the reply's context and read by the router;
without a vision model the turn says so. The upstream records everything it receives."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.testing import Fail, FakeOpenAI, LiveServer
from memsched.testing.fake_openai import CAPTION_MARK
from memsched.testing.service import proxy_server
from memsched.vision import NO_VISION_MODEL, Image

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


def _start(tmp_path: Path, fake: FakeOpenAI, **overrides: Any) -> LiveServer:
    return proxy_server(tmp_path / "srv", fake, **overrides)


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    # Only the model is set: the upstream's base URL (the fake) serves as the vision endpoint.
    with _start(tmp_path, fake, vision_model="fake-vision") as base:
        yield base


def _chat(base: str, text: str, url: str = PNG, session: str = "s1", user: str = "li") -> httpx.Response:
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}}]
    if text:
        content.insert(0, {"type": "text", "text": text})
    return httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": user,
            "metadata": {"session_id": session},
            "messages": [
                {"role": "system", "content": "You are Xiaoyu."},
                {"role": "user", "content": content},
            ],
        },
        timeout=60,
    )


def _split(fake: FakeOpenAI) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(vision requests, reply requests) the fake received."""
    vision = [b for b in fake.chat_requests if CAPTION_MARK in str(b["messages"][0]["content"])]
    reply = [b for b in fake.chat_requests if b not in vision]
    return vision, reply


@pytest.mark.parametrize(
    ("text", "caption", "query"),
    [
        ("下班了，累死我了", "夕阳下堵成长龙的马路，车灯连成一片", "夕阳 堵车 马路"),
        ("Finally off work, I'm exhausted", "a sunset over a highway jammed with cars", "sunset highway"),
    ],
)
def test_photo_and_tired_message_caption_in_context_and_comfort(
    server: str, fake: FakeOpenAI, text: str, caption: str, query: str
) -> None:
    fake.script_caption(caption)
    r = _chat(server, text)
    assert r.status_code == 200, r.text
    vision, reply = _split(fake)
    # The vision model got the image as the client sent it (memsched fetched nothing itself).
    (vreq,) = vision
    assert vreq["model"] == "fake-vision"
    assert {"type": "image_url", "image_url": {"url": PNG}} in vreq["messages"][0]["content"]
    assert text in vreq["messages"][0]["content"][0]["text"]  # the caption is asked in the user's language
    # The reply model got the caption as text, and no image part (MEMSCHED_UPSTREAM_VISION is off).
    last = reply[-1]["messages"][-1]
    assert last["role"] == "user" and last["content"] == f"{text}\n[image: {caption}]"
    trace = httpx.get(f"{server}/v1/traces/{r.headers['X-Memsched-Trace-Id']}").json()
    assert trace["route"]["mode"] == "comfort"
    assert trace["images"][0]["caption"] == caption and trace["images"][0]["model"] == "fake-vision"
    # Stored with the turn (no image bytes kept), and searchable.
    hits = httpx.get(f"{server}/v1/users/li/memories", params={"q": query}).json()
    assert hits and hits[0]["content"] == f"{text}\n[image: {caption}]"
    turns = httpx.get(f"{server}/v1/users/li/sessions/s1/turns").json()["turns"]
    images = turns[0]["meta"]["images"]
    assert images[0]["caption"] == caption and images[0]["ref"].startswith("data:image/png;sha256=")
    assert "base64" not in str(turns[0]["meta"])
    # Weeks later, in another session, the photo is recalled as text.
    fake.clear()
    assert (
        _chat_text(
            server, "还记得我发过的那张夕阳照片吗？" if "夕阳" in caption else "Remember my sunset photo?"
        ).status_code
        == 200
    )
    assert caption in fake.chat_requests[-1]["messages"][0]["content"]


def _chat_text(base: str, text: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "m",
            "user": "li",
            "metadata": {"session_id": "s9"},
            "messages": [{"role": "user", "content": text}],
        },
        timeout=60,
    )


def test_without_a_vision_model_the_turn_says_not_described_and_why(tmp_path: Path, fake: FakeOpenAI) -> None:
    with _start(tmp_path, fake) as base:
        r = _chat(base, "看看这个")
        assert r.status_code == 200, r.text
        vision, reply = _split(fake)
        assert vision == []
        assert reply[-1]["messages"][-1]["content"] == "看看这个\n[image: not described]"
        trace = httpx.get(f"{base}/v1/traces/{r.headers['X-Memsched-Trace-Id']}").json()
        assert trace["images"][0]["caption"] is None and trace["images"][0]["reason"] == NO_VISION_MODEL


def test_a_failing_vision_model_does_not_fail_the_turn(server: str, fake: FakeOpenAI) -> None:
    fake.script_caption(Fail(500), Fail(500), Fail(500), Fail(500))
    r = _chat(server, "look at this")
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{server}/v1/traces/{r.headers['X-Memsched-Trace-Id']}").json()
    assert trace["images"][0]["caption"] is None and "vision model failed" in trace["images"][0]["reason"]
    assert _split(fake)[1][-1]["messages"][-1]["content"] == "look at this\n[image: not described]"


def test_upstream_vision_sends_the_image_itself_and_an_image_only_message_works(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    url = "http://127.0.0.1:9/never-fetched.jpg"  # a URL memsched must pass on, not fetch
    with _start(tmp_path, fake, vision_model="fake-vision", upstream_vision=True) as base:
        fake.script_caption("a cat asleep on a keyboard")
        r = _chat(base, "", url=url)
        assert r.status_code == 200, r.text
        vision, reply = _split(fake)
        assert vision[0]["messages"][0]["content"][1]["image_url"]["url"] == url
        assert reply[-1]["messages"][-1]["content"] == [
            {"type": "text", "text": "[image: a cat asleep on a keyboard]"},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        turns = httpx.get(f"{base}/v1/users/li/sessions/s1/turns").json()["turns"]
        assert (
            turns[0]["content"] == "[image: a cat asleep on a keyboard]"
            and turns[0]["meta"]["images"][0]["ref"] == url
        )


def test_an_image_with_blank_text_is_an_image_only_message(server: str, fake: FakeOpenAI) -> None:
    """A photo sent with a text part of only spaces (a chat box left blank) is the image alone, in the
    proxy and the Responses API. Before, it was a 400 'the message must be a non-empty string'."""
    fake.script_caption("a red kite over a beach", "a bowl of ramen")
    r = _chat(server, "  \n ")
    assert r.status_code == 200, r.text
    content = [{"type": "input_text", "text": " "}, {"type": "input_image", "image_url": PNG}]
    r = httpx.post(
        f"{server}/v1/responses",
        json={
            "model": "m",
            "user": "li",
            "metadata": {"session_id": "s1"},
            "input": [{"role": "user", "content": content}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    turns = httpx.get(f"{server}/v1/users/li/sessions/s1/turns").json()["turns"]
    users = [t["content"] for t in turns if t["role"] == "user"]
    assert users == ["[image: a red kite over a beach]", "[image: a bowl of ramen]"]


def test_image_refs_keep_no_bytes() -> None:
    assert Image(PNG).ref.startswith("data:image/png;sha256=") and len(Image(PNG).ref) < 60
    assert Image("https://example.com/a.jpg").ref == "https://example.com/a.jpg"


@pytest.mark.parametrize("vision", [False, True])
def test_responses_api_input_images_are_described_and_sent_on(
    tmp_path: Path, fake: FakeOpenAI, vision: bool
) -> None:
    """An `input_image` part of the Responses API is described like a chat `image_url` part; a vision
    upstream also gets the image itself, as an `input_image` part beside the caption."""
    url = "http://127.0.0.1:9/never-fetched.jpg"
    with _start(tmp_path, fake, vision_model="fake-vision", upstream_vision=vision) as base:
        fake.script_caption("a cat asleep on a keyboard")
        content = [{"type": "input_text", "text": "Look!"}, {"type": "input_image", "image_url": url}]
        r = httpx.post(
            f"{base}/v1/responses",
            json={
                "model": "m",
                "user": "li",
                "metadata": {"session_id": "s1"},
                "input": [{"role": "user", "content": content}],
            },
            timeout=60,
        )
        assert r.status_code == 200, r.text
        vision_requests, _ = _split(fake)
        assert vision_requests[0]["messages"][0]["content"][1]["image_url"]["url"] == url
        sent = fake.response_requests[-1]["input"][-1]
        if vision:
            assert sent["content"][1] == {"type": "input_image", "image_url": url, "detail": "auto"}
            assert "a cat asleep on a keyboard" in sent["content"][0]["text"]
        else:
            assert "a cat asleep on a keyboard" in sent["content"] and "Look!" in sent["content"]
        turns = httpx.get(f"{base}/v1/users/li/sessions/s1/turns").json()["turns"]
        assert (
            "a cat asleep on a keyboard" in turns[0]["content"]
            and turns[0]["meta"]["images"][0]["ref"] == url
        )


@pytest.mark.parametrize(
    ("text", "caption"),
    [
        ("", "A screenshot of an angry text message conversation: 'I hate you, leave me alone'"),
        ("看看这个", "一张截图：聊天记录里有人说“我真的很生气，你根本不在乎我”"),
    ],
)
def test_feelings_in_a_caption_are_not_the_users_anger(
    server: str, fake: FakeOpenAI, text: str, caption: str
) -> None:
    """A caption describes the picture: its cue words ("angry", "leave me alone", 生气) are not the
    user angry with the companion, so they set no upset mood and get no cold or repair voice."""
    fake.script_caption(caption)
    r = _chat(server, text)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{server}/v1/traces/{r.headers['X-Memsched-Trace-Id']}", timeout=10).json()
    assert trace["route"]["cues"].get("conflict", []) == [], trace["route"]["cues"]
    assert trace["strategy"]["name"] not in ("conflict_cold", "repair")
    assert trace["mood"]["after"]["label"] != "upset"
    _, reply = _split(fake)
    assert caption in str(reply[-1]["messages"][-1]["content"])  # the caption still reaches the model
