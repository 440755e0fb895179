"""Cooperative paging through tools: the bookmark index, the `recall` tool, LFU bookkeeping, the
`tools` paging mode, and the `memsched bookmarks` command and `eval locomo --ablation`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memsched.bookmarks import generate_bookmarks
from memsched.cli import app
from memsched.config import Config
from memsched.embed.hashing import HashEmbedder
from memsched.errors import InputError
from memsched.eval import locomo
from memsched.memory import Memory
from memsched.model import Turn
from memsched.tools import INDEX_HEADER, handle_tool_call, recall_tool, render_index, resolve_recall

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
TALKS = [
    [
        "We chose the OT algorithm for collaborative editing.",
        "OT needs a central server.",
        "The frontend uses Yjs.",
        "Yjs and OT then.",
    ],
    [
        "I cooked tomato scrambled eggs with Grandma Li.",
        "Grandma Li's recipe uses sugar.",
        "Sugar in eggs?",
        "Yes, a pinch.",
    ],
    [
        "The Berlin marathon is in September.",
        "Are you running the Berlin marathon?",
        "Yes, my first marathon.",
        "Good luck!",
    ],
]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()}, page_size=4)
    for day, talk in enumerate(TALKS):
        m.add_many(
            [
                Turn(
                    "u",
                    f"s{day}",
                    "user" if i % 2 == 0 else "assistant",
                    text,
                    created_at=T0 + timedelta(days=day, minutes=i),
                )
                for i, text in enumerate(talk)
            ]
        )
    generate_bookmarks(m, "u")
    yield m
    m.close()


def test_index_lists_pages_not_in_context_compactly(mem: Memory) -> None:
    pages = mem.store.pages("u")
    text = render_index(mem, "u", exclude_pages=[pages[1].id])
    lines = text.split("\n")
    assert lines[0] == INDEX_HEADER
    assert len(lines) == 3  # page 2 is already in the context
    assert re.fullmatch(rf"\[p{pages[0].id} 2023-05-08: [^\]]+\]", lines[1]), lines[1]
    assert "OT" in lines[1] and "Berlin" in lines[2]
    assert f"p{pages[1].id} " not in text
    # A token share too small for every line keeps the most important pages only.
    small = render_index(mem, "u", max_tokens=mem.counter.count(INDEX_HEADER) + 28)
    assert 0 < len(small.split("\n")) - 1 < 3
    assert render_index(mem, "u", max_tokens=3) == ""


def test_a_tight_index_keeps_the_preferred_pages_first(mem: Memory) -> None:
    # The pages of the message's retrieval candidates that did not fit the context come first.
    pages = [p.id for p in mem.store.pages("u")]
    room = mem.counter.count(INDEX_HEADER) + 28
    for wanted in pages:
        tight = render_index(mem, "u", max_tokens=room, prefer=[wanted])
        assert f"[p{wanted} " in tight, (wanted, tight)
    whole = render_index(mem, "u", prefer=[pages[2], pages[0]])
    assert [int(x) for x in re.findall(r"\[p(\d+) ", whole)] == pages  # still in time order


def test_recall_tool_schema_and_resolver_with_lfu_bookkeeping(mem: Memory) -> None:
    schema = recall_tool()
    assert schema["type"] == "function" and schema["function"]["name"] == "recall"
    assert schema["function"]["parameters"]["required"] == ["page_id"]
    page = mem.store.pages("u")[2]
    text = resolve_recall(mem, "u", page.id, at=T0 + timedelta(days=10))
    assert text.splitlines()[0] == f"[p{page.id}, s2]"
    assert "(2023-05-10 13:00) user: The Berlin marathon is in September." in text
    resolve_recall(mem, "u", page.id, at=T0 + timedelta(days=11))
    uses, last = mem.store.page_use("u")[page.id]
    assert uses == 2 and last == T0 + timedelta(days=11)
    with pytest.raises(InputError):
        resolve_recall(mem, "u", 9999)
    assert mem.store.page_use("someone-else") == {}
    # A page that was used stays in a tight index ahead of equally important ones.
    tight = render_index(mem, "u", max_tokens=mem.counter.count(INDEX_HEADER) + 28)
    assert f"[p{page.id} " in tight


def test_tool_calls_in_openai_format(mem: Memory) -> None:
    page = mem.store.pages("u")[0]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "recall", "arguments": json.dumps({"page_id": page.id})},
    }
    reply = handle_tool_call(mem, "u", call)
    assert reply["role"] == "tool" and reply["tool_call_id"] == "call_1"
    assert "central server" in reply["content"]
    as_text = handle_tool_call(
        mem, "u", {"id": "c2", "function": {"name": "recall", "arguments": f'{{"page_id": "p{page.id}"}}'}}
    )
    assert "central server" in as_text["content"]
    bad = handle_tool_call(
        mem, "u", {"id": "c3", "function": {"name": "recall", "arguments": '{"page_id": 424242}'}}
    )
    assert bad["content"].startswith("error: no page p424242")
    unknown = handle_tool_call(
        mem, "u", {"id": "c4", "function": {"name": "delete_everything", "arguments": "{}"}}
    )
    assert unknown["content"].startswith("error: unknown tool")


@pytest.mark.parametrize("mode", ["tools", "both"])
def test_tools_paging_mode_puts_the_index_in_the_context_within_budget(tmp_path: Path, mode: str) -> None:
    m = Memory(home=tmp_path / "t", embedders={"hash": HashEmbedder()}, page_size=4, paging_mode=mode)
    try:
        for day, talk in enumerate(TALKS * 3):
            m.add_many(
                [
                    Turn("u", f"s{day}", "user", text, created_at=T0 + timedelta(days=day, minutes=i))
                    for i, text in enumerate(talk)
                ]
            )
        generate_bookmarks(m, "u")
        result = m.context("u", "How is the marathon training going?", session_id="s2", budget=400)
        system = result.messages[0]["content"]
        assert INDEX_HEADER in system
        tools = result.trace["paging_tools"]
        assert tools["tools"] == ["recall"] and tools["index_pages"] >= 1
        assert m.counter.messages_tokens(result.messages) <= 400
        assert result.trace["tokens"]["total"] <= 400
        # Pages already in the context (the recent window of s2) are not listed again.
        s2 = next(p.id for p in m.store.pages("u") if p.session_id == "s2")
        assert f"[p{s2} " not in system
    finally:
        m.close()


def test_bookmarks_command_lists_and_generates(tmp_path: Path, mem: Memory) -> None:
    runner = CliRunner()
    db = mem.config.db_path
    out = runner.invoke(app, ["bookmarks", "--user", "u", "--db", str(db), "--embedders", "hash", "--json"])
    assert out.exit_code == 0, out.output
    listed = json.loads(out.output)
    assert len(listed) == 3 and {"keywords", "aliases", "summary", "page_ids", "turn_ids"} <= set(listed[0])
    table = runner.invoke(app, ["bookmarks", "--user", "u", "--db", str(db), "--embedders", "hash"])
    assert table.exit_code == 0 and "Berlin" in table.output
    missing = runner.invoke(app, ["bookmarks", "--user", "nobody", "--db", str(db), "--embedders", "hash"])
    assert missing.exit_code != 0
    assert "--generate" in runner.invoke(app, ["bookmarks", "--help"]).output


def test_eval_ablation_reports_every_stage(tmp_path: Path, locomo_file: Path) -> None:
    cfg = Config.load(home=tmp_path / "e", embedders="hash")
    result = locomo.run(locomo_file, [300], cfg, systems=locomo.ABLATION)
    per = result["results"]["300"]
    assert list(per) == list(locomo.ABLATION)
    assert all(0.0 <= m["evidence_recall"] <= 1.0 for m in per.values())
    assert per["full memsched"]["evidence_recall"] > 0
    cli = CliRunner().invoke(
        app,
        [
            "eval",
            "locomo",
            "--ablation",
            "--data",
            str(locomo_file),
            "--budget",
            "300",
            "--embedders",
            "hash",
            "--json",
            "--home",
            str(tmp_path / "e2"),
        ],
    )
    assert cli.exit_code == 0, cli.output
    assert set(json.loads(cli.output)["results"]["300"]) == set(locomo.ABLATION)
