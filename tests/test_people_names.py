""" "What did I tell you about my sister?" finds what was said about her by name.

The turns about the user's sister say "Leah" (or 小雨), not "sister": the profile's people
("sister Leah", "妹妹 小雨") whose relation a question names add the name to its lexical layers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _say(base: str, user: str, text: str, at: datetime) -> int:
    r = httpx.post(
        f"{base}/v1/turns",
        json={
            "user": user,
            "session_id": at.strftime("%Y-%m-%d"),
            "role": "user",
            "content": text,
            "timestamp": at.isoformat(),
        },
        timeout=60,
    )
    assert r.status_code == 201, r.text
    return int(r.json()["turn_id"])


def _bm25(base: str, user: str, question: str, at: datetime) -> tuple[list[int], str]:
    r = httpx.post(
        f"{base}/v1/context",
        json={
            "user": user,
            "message": question,
            "session_id": "ask",
            "timestamp": at.isoformat(),
            "budget": 400,
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    hits = [int(h[0]) for h in body["trace"]["retrieval"]["scores"]["bm25"]]
    return hits, "\n".join(str(m["content"]) for m in body["messages"])


@pytest.mark.parametrize(
    ("intro", "about", "question"),
    [
        (
            "My sister's name is Leah, she's at university.",
            "Leah says she wants to study in France after graduation.",
            "What did I tell you about my sister?",
        ),
        ("我妹妹叫小雨，在上海读大三。", "小雨说她毕业以后想去法国留学。", "我跟你说过我妹妹什么来着？"),
    ],
)
def test_a_question_about_a_relative_searches_their_name(
    server: str, intro: str, about: str, question: str
) -> None:
    t0 = datetime(2026, 3, 2, 19, tzinfo=UTC)
    _say(server, "ana", intro, t0)
    for d in range(1, 12):
        _say(
            server,
            "ana",
            f"Long day at the office again, meetings until six, day {d}.",
            t0 + timedelta(days=d),
        )
    said = _say(server, "ana", about, t0 + timedelta(days=12))
    facts = httpx.get(f"{server}/v1/users/ana/profile", timeout=10).json()["facts"]
    assert any(f["key"] == "people" for f in facts)
    hits, text = _bm25(server, "ana", question, t0 + timedelta(days=20))
    assert said in hits and about in text
