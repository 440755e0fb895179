"""`memsched chat` through typer's CliRunner, the upstream a FakeOpenAI server on loopback."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import daytime_strategies
from typer.testing import CliRunner

from memsched.bookmarks import generate_bookmarks
from memsched.cli import app
from memsched.cli.chat import side_line
from memsched.config import Config
from memsched.memory import Memory
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer

runner = CliRunner()

HISTORY = [
    ("old-1", "user", "My cat is called Sesame, she is a British Shorthair."),
    ("old-1", "assistant", "Sesame is a lovely name."),
    ("old-2", "user", "我下周三要去杭州出差，住在西湖边的酒店。"),
    ("old-2", "assistant", "杭州很美，祝你出差顺利。"),
    ("old-3", "user", "I started learning the cello last month."),
    ("old-3", "assistant", "How are the lessons going?"),
]


@pytest.fixture
def upstream_env(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAI) -> FakeOpenAI:
    monkeypatch.setenv("MEMSCHED_UPSTREAM_BASE_URL", fake.base_url)
    monkeypatch.setenv("MEMSCHED_UPSTREAM_MODEL", "fake-model")
    monkeypatch.setenv("MEMSCHED_EMBEDDERS", "hash")
    return fake


def _history(home: Path) -> None:
    with Memory(home=home, embedders="hash") as mem:
        at = datetime(2024, 3, 2, 12, 0, tzinfo=UTC)
        for session, role, text in HISTORY:
            mem.add("li", session, role, text, created_at=at)  # type: ignore[arg-type]


def test_chat_streams_replies_and_shows_what_was_recalled(
    upstream_env: FakeOpenAI, isolated_env: Path
) -> None:
    fake = upstream_env
    _history(isolated_env)
    fake.script("She is Sesame, your British Shorthair.", "你住在西湖边。")
    result = runner.invoke(
        app,
        ["chat", "--user", "li", "--session", "new", "--system", "You are Xiaoyu."],
        input="What's my cat called?\n我出差住在哪里？\n/exit\n",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ai › She is Sesame, your British Shorthair." in out and "ai › 你住在西湖边。" in out
    sides = [line for line in out.splitlines() if line.strip().startswith("↳")]
    assert len(sides) == 2 and all("mode " in s and "trace " in s for s in sides)
    # What memsched paged in from the older sessions is named in the side line ...
    assert "recalled" in sides[0] and "old-1#" in sides[0]
    assert "old-2#" in sides[1]
    # ... and it is what the upstream saw, under the persona the chat was given.
    first = fake.chat_requests[0]["messages"]
    assert first[0]["role"] == "system" and first[0]["content"].startswith("You are Xiaoyu.")
    assert any("Sesame" in str(m["content"]) for m in first)
    assert any("西湖" in str(m["content"]) for m in fake.chat_requests[1]["messages"])
    # Both exchanges are stored in the session.
    with Memory(home=isolated_env, embedders="hash") as mem:
        stored = [t.content for t in mem.store.session_turns("li", "new")]
    assert stored == [
        "What's my cat called?",
        "She is Sesame, your British Shorthair.",
        "我出差住在哪里？",
        "你住在西湖边。",
    ]


def test_chat_side_line_names_the_pages_the_model_recalled(
    upstream_env: FakeOpenAI, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paging mode `both`: the model calls `recall` on a page of the bookmark index, then answers."""
    monkeypatch.setenv("MEMSCHED_PAGING_MODE", "both")
    # `memsched chat` sends no timestamp: the hour the suite runs at must not decide the strategy.
    monkeypatch.setenv(
        "MEMSCHED_STRATEGIES", str(daytime_strategies(isolated_env.parent / "strategies.toml"))
    )
    monkeypatch.setenv("MEMSCHED_PAGE_SIZE", "2")
    monkeypatch.setenv("MEMSCHED_BUDGET", "600")
    _history(isolated_env)
    with Memory(home=isolated_env, embedders="hash", page_size=2) as mem:
        for i in range(30):  # more history than the context holds: the rest is in the bookmark index
            mem.add(
                "li", f"week-{i // 10}", "user", f"Day {i}: walked the dog by the canal and cooked noodles"
            )
        generate_bookmarks(mem, "li")
    asked: list[int] = []

    def respond(body: dict[str, Any]) -> Any:
        system = str(body["messages"][0]["content"])
        pages = [int(p) for p in re.findall(r"\[p(\d+)\b", system)]
        offered = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        if "recall" in offered and pages and not any(m.get("role") == "tool" for m in body["messages"]):
            asked.append(pages[0])
            call = {"name": "recall", "arguments": json.dumps({"page_id": pages[0]})}
            return {"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": call}]}
        return "Found it."

    upstream_env.responder = respond
    result = runner.invoke(app, ["chat", "--user", "li", "--session", "new"], input="我的大提琴呢？\n")
    assert result.exit_code == 0, result.output
    assert "ai › Found it." in result.output
    side = next(line for line in result.output.splitlines() if line.strip().startswith("↳"))
    assert asked and f"paged in p{asked[0]}" in side


def test_chat_through_a_running_server(tmp_path: Path, fake: FakeOpenAI) -> None:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    fake.script("Hello Li!")
    with LiveServer(create_app(cfg)) as base:
        result = runner.invoke(
            app, ["chat", "-u", "li", "-s", "s1", "--server", base, "--ui-links"], input="hi there\n"
        )
    assert result.exit_code == 0, result.output
    assert "ai › Hello Li!" in result.output
    assert f"{base}/ui/u/li/trace/" in result.output  # --ui-links: the turn in the debug UI


def test_chat_without_upstream_says_what_to_set(isolated_env: Path) -> None:
    result = runner.invoke(app, ["chat", "--user", "li"], input="hi\n")
    assert result.exit_code == 1
    assert "MEMSCHED_UPSTREAM_BASE_URL" in result.output and "--server" in result.output


def test_chat_unreachable_server_is_one_line(isolated_env: Path) -> None:
    result = runner.invoke(app, ["chat", "--user", "li", "--server", "http://127.0.0.1:9"], input="hi\n")
    assert result.exit_code == 1 and "cannot reach memsched" in result.output


def test_side_line_reads_every_stage() -> None:
    trace = {
        "id": "abcdef0123456789",
        "route": {"mode": "comfort", "signals": {"recall": True, "late_night": True, "command": False}},
        "mood": {"label": "low", "valence": -0.5},
        "strategy": {"name": "listen_first"},
        "selected": [{"session_id": f"s{i}", "turn_id": i} for i in range(7)],
        "recent": [10, 11],
        "llm": {"recall": [{"page_id": 4, "ok": True}, {"page_id": 99999, "ok": False}]},
        "tokens": {"total": 812, "budget": 2000},
    }
    line = side_line(trace)
    for part in (
        "mode comfort",
        "signals recall,late_night",
        "mood low",
        "strategy listen_first",
        "recalled 7: s0#0 s1#1 s2#2 s3#3 s4#4 +2",
        "recent 2 turns",
        "paged in p4 p99999!",
        "812/2000 tokens",
        "trace abcdef01",
    ):
        assert part in line, (part, line)
    assert "command" not in line
    companion = side_line({**trace, "mood": {"carried": {"label": "calm"}, "after": {"label": "sad"}}})
    assert "mood sad" in companion
    assert side_line(None) == "memsched: no trace"
