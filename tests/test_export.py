"""`memsched export` and GET /v1/users/{user}/export: a user's turns out as the JSONL `memsched import`
reads, so export then import gives the same sessions and turns; unknown users are errors; forgotten
turns are not exported; an export creates no database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memsched.cli import app
from memsched.config import Config
from memsched.export import export_pages
from memsched.model import Turn
from memsched.server.app import create_app
from memsched.store import Store, open_store
from memsched.testing import LiveServer

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

runner = CliRunner()

LINES: list[dict[str, Any]] = [
    {
        "session_id": "s1",
        "role": "user",
        "speaker": "林晓",
        "content": "我下周三要去杭州出差，住在西湖边。",
        "timestamp": "2024-03-01T10:00:00Z",
        "external_id": "msg-1",
    },
    {
        "session_id": "s1",
        "role": "assistant",
        "content": "杭州很美，祝出差顺利。",
        "timestamp": "2024-03-01T10:00:05.250000Z",
    },
    # Earlier than the line before it, in the same session: the export keeps the stored order.
    {
        "session_id": "s1",
        "role": "user",
        "content": 'My cat "Sesame" loves tuna\nand naps all day.',
        "timestamp": "2024-03-01T09:59:00Z",
        "external_id": "msg-3",
    },
    {
        "session_id": "2024/03/02",
        "role": "user",
        "speaker": "Lin",
        "content": "I started learning the cello last month.",
        "timestamp": "2024-03-02T21:30:00+08:00",
    },
    {
        "session_id": "2024/03/02",
        "role": "assistant",
        "content": "How are the lessons going?",
        "timestamp": "2024-03-02T13:31:00Z",
    },
    {
        "session_id": "s0",
        "role": "user",
        "content": "an older session, imported last",
        "timestamp": 1700000000,
    },
]


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def _import(path: Path, user: str, *extra: str) -> None:
    result = invoke("import", str(path), "--user", user, "--no-index", *extra)
    assert result.exit_code == 0, result.output


def _seed(tmp_path: Path, user: str = "alice") -> Path:
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in LINES), encoding="utf-8")
    _import(f, user)
    return f


def _stored(store: Store, user: str) -> list[tuple[Any, ...]]:
    """What a round trip must keep of each turn, in id order."""
    turns: list[Turn] = []
    after = 0
    while batch := store.turns_by_id(user, after, 100):
        turns += batch
        after = batch[-1].id or after
    return [(t.session_id, t.seq, t.role, t.speaker, t.content, t.created_at, t.external_id) for t in turns]


def test_export_then_import_into_an_empty_home_round_trips(tmp_path: Path) -> None:
    _seed(tmp_path)
    out = tmp_path / "alice.jsonl"
    result = invoke("export", "--user", "alice", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "exported 6 turns of 'alice'" in result.output
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(LINES)  # one line per turn, nothing after them
    assert [x["content"] for x in lines] == [x["content"] for x in LINES]  # stored order, not time
    assert lines[0]["speaker"] == "林晓" and lines[0]["external_id"] == "msg-1"
    assert "user_id" not in lines[0]  # the importer names the user

    # Into another home (on PostgreSQL the same database, so under another name).
    _import(out, "alice2", "--home", str(tmp_path / "other"))
    if not Config.load().database_url:
        assert (tmp_path / "other" / "memsched.db").exists()
    cfg = Config.load()
    other = open_store(cfg.database_url or tmp_path / "other" / "memsched.db")
    store = open_store(cfg)
    try:
        before, after = _stored(store, "alice"), _stored(other, "alice2")
        assert after == before and len(after) == len(LINES)
        assert {s.id for s in other.sessions("alice2")} == {"s0", "s1", "2024/03/02"}
    finally:
        other.close()
        store.close()

    # Exported again, the copy gives the same file.
    result = invoke("export", "--user", "alice2", "--home", str(tmp_path / "other"))
    assert result.exit_code == 0 and result.stdout == out.read_text(encoding="utf-8")


def test_export_to_stdout_and_profile_file(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(
        json.dumps({"session_id": "s", "role": "user", "content": "My name is Marzipanova"}) + "\n",
        encoding="utf-8",
    )
    _import(f, "mz")
    prof = tmp_path / "profile.json"
    result = invoke("export", "--user", "mz", "--profile", str(prof))
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["content"] for r in rows] == ["My name is Marzipanova"]
    facts = json.loads(prof.read_text(encoding="utf-8"))
    assert facts["user"] == "mz"
    assert all(fact["current"] for fact in facts["facts"])
    assert {"key": "name", "value": "Marzipanova"} in [
        {"key": x["key"], "value": x["value"]} for x in facts["facts"]
    ]


def test_unknown_user_is_an_error_and_an_empty_home_gets_no_database(tmp_path: Path, backend: str) -> None:
    home = tmp_path / "empty"
    result = invoke("export", "--user", "ghost", "--home", str(home), "--out", str(tmp_path / "g.jsonl"))
    assert result.exit_code == 1
    assert "unknown user 'ghost'" in result.output
    assert not (tmp_path / "g.jsonl").exists()
    if backend == "sqlite":
        assert not home.exists() and not (home / "memsched.db").exists()

    _seed(tmp_path)
    result = invoke("export", "--user", "ghost")
    assert result.exit_code == 1 and "unknown user 'ghost'" in result.output and not result.stdout


def test_a_forgotten_turn_is_not_exported(tmp_path: Path) -> None:
    _seed(tmp_path)
    store = open_store(Config.load())
    try:
        cat = next(t.id for t in store.turns_by_id("alice", 0, 100) if "Sesame" in t.content)
    finally:
        store.close()
    assert invoke("forget", "--user", "alice", "--turn", str(cat)).exit_code == 0
    result = invoke("export", "--user", "alice")
    assert result.exit_code == 0, result.output
    contents = [json.loads(x)["content"] for x in result.stdout.splitlines()]
    assert len(contents) == len(LINES) - 1 and not any("Sesame" in c for c in contents)


def test_http_export_equals_the_cli_export(tmp_path: Path) -> None:
    _seed(tmp_path)
    cli = invoke("export", "--user", "alice")
    assert cli.exit_code == 0
    with LiveServer(create_app(Config.load(embedders="hash"), warm_up=False)) as base:
        r = httpx.get(f"{base}/v1/users/alice/export", timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/x-ndjson")
        assert r.content.decode("utf-8") == cli.stdout
        gone = httpx.get(f"{base}/v1/users/ghost/export")
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "not_found_error"
        spec = httpx.get(f"{base}/openapi.json").json()
        assert "/v1/users/{user}/export" in spec["paths"]


def test_http_export_is_behind_the_api_keys(tmp_path: Path) -> None:
    acme, globex = "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"
    _seed(tmp_path, user="acme/bob")  # bob of tenant acme
    cfg = Config.load(embedders="hash", api_keys=f"acme:{acme},globex:{globex}")
    with LiveServer(create_app(cfg, warm_up=False)) as base:
        url = f"{base}/v1/users/bob/export"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {globex}"}).status_code == 404
        r = httpx.get(url, headers={"Authorization": f"Bearer {acme}"}, timeout=30)
        assert r.status_code == 200
    cli = invoke("export", "--user", "bob", "--tenant", "acme")
    assert cli.exit_code == 0 and r.text == cli.stdout and len(r.text.splitlines()) == len(LINES)


def test_export_pages_through_a_history_in_id_order(store: Store) -> None:
    turns = [
        Turn(user_id="u", session_id=f"s{i % 2}", role="user", content=f"turn {i} 第{i}句") for i in range(7)
    ]
    store.add_turns(turns)
    store.add_turns([Turn(user_id="v", session_id="s0", role="user", content="someone else")])
    chunks = list(export_pages(store, "u", page=3))
    assert [c.count("\n") for c in chunks] == [3, 3, 1]
    rows = [json.loads(x) for c in chunks for x in c.splitlines()]
    assert [r["content"] for r in rows] == [f"turn {i} 第{i}句" for i in range(7)]
    assert list(export_pages(store, "nobody")) == []
