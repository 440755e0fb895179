"""`memsched export` and GET /v1/users/{user}/export: everything held about a user as ndjson (export
format version 2: a header, the turns as the JSONL `memsched import` reads, profile facts with their
history, summaries, bookmarks, session state, mood, routine, traces), so export then import gives the
same sessions, turns (with meta) and profile; import refuses a user that has data; unknown users are
errors; forgotten turns are not exported; an export creates no database."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memsched.cli import app
from memsched.config import Config
from memsched.export import export_pages
from memsched.model import Bookmark, Turn
from memsched.profile import Profile
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


def _records(text: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in text.splitlines()]


def _turn_lines(text: str) -> list[dict[str, Any]]:
    return [x for x in _records(text) if x["type"] == "turn"]


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
    assert "exported 6 turns" in result.output and "of 'alice'" in result.output
    lines = _records(out.read_text(encoding="utf-8"))
    header, turns = lines[0], _turn_lines(out.read_text(encoding="utf-8"))
    assert header["type"] == "header" and header["format"] == "memsched-export" and header["version"] == 2
    assert header["user"] == "alice"
    assert len(turns) == len(LINES) and lines[1 : 1 + len(LINES)] == turns  # turns first, in a row
    assert [x["content"] for x in turns] == [x["content"] for x in LINES]  # stored order, not time
    assert [x["ref"] for x in turns] == list(range(1, len(LINES) + 1))
    assert turns[0]["speaker"] == "林晓" and turns[0]["external_id"] == "msg-1"
    assert "user_id" not in turns[0]  # the importer names the user

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

    # Exported again, the copy gives the same records (the header says when, and whose).
    result = invoke("export", "--user", "alice2", "--home", str(tmp_path / "other"))
    assert result.exit_code == 0
    assert _records(result.stdout)[1:] == lines[1:]


def test_turns_only_is_version_1_and_its_meta_is_imported(tmp_path: Path) -> None:
    """A JSONL line's `meta` (date notes, image descriptions) is kept by import, not replaced by dating
    the turn afresh; `--turns-only` writes the turn lines any memsched import reads, meta included."""
    meta = {"dates": ["上周三 = 2024-02-21"], "images": ["a grey cat asleep on a keyboard"]}
    f = tmp_path / "m.jsonl"
    lines = [
        {
            "session_id": "s",
            "role": "user",
            "content": "上周三我拍了张照片",
            "timestamp": "2024-03-01T10:00:00Z",
        },
        {"session_id": "s", "role": "assistant", "content": "好可爱！", "timestamp": "2024-03-01T10:00:01Z"},
    ]
    lines[0]["meta"] = meta
    f.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    _import(f, "m")
    store = open_store(Config.load())
    try:
        assert [t.meta for t in store.turns_by_id("m", 0, 10)] == [meta, {}]
    finally:
        store.close()
    result = invoke("export", "--user", "m", "--turns-only")
    assert result.exit_code == 0, result.output
    rows = _records(result.stdout)
    assert [r["content"] for r in rows] == ["上周三我拍了张照片", "好可爱！"]
    assert all("type" not in r and "ref" not in r for r in rows) and rows[0]["meta"] == meta
    f.write_text(result.stdout, encoding="utf-8")
    _import(f, "m2")
    store = open_store(Config.load())
    try:
        assert [t.meta for t in store.turns_by_id("m2", 0, 10)] == [meta, {}]
    finally:
        store.close()


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
    rows = _turn_lines(result.stdout)
    assert [r["content"] for r in rows] == ["My name is Marzipanova"]
    exported = [x for x in _records(result.stdout) if x["type"] == "fact"]
    assert {"key": "name", "value": "Marzipanova"} in [
        {"key": x["key"], "value": x["value"]} for x in exported
    ]
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
    contents = [x["content"] for x in _turn_lines(result.stdout)]
    assert len(contents) == len(LINES) - 1 and not any("Sesame" in c for c in contents)


def test_http_export_equals_the_cli_export(tmp_path: Path) -> None:
    _seed(tmp_path)
    cli = invoke("export", "--user", "alice")
    assert cli.exit_code == 0
    with LiveServer(create_app(Config.load(embedders="hash"), warm_up=False)) as base:
        r = httpx.get(f"{base}/v1/users/alice/export", timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/x-ndjson")
        assert _records(r.content.decode("utf-8"))[1:] == _records(cli.stdout)[1:]  # but exported_at
        only = httpx.get(f"{base}/v1/users/alice/export", params={"turns_only": "true"}, timeout=30)
        assert [x["content"] for x in _records(only.text)] == [x["content"] for x in LINES]
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
    assert cli.exit_code == 0 and _records(r.text)[1:] == _records(cli.stdout)[1:]
    assert len(_turn_lines(r.text)) == len(LINES)


def test_export_pages_through_a_history_in_id_order(store: Store) -> None:
    turns = [
        Turn(user_id="u", session_id=f"s{i % 2}", role="user", content=f"turn {i} 第{i}句") for i in range(7)
    ]
    store.add_turns(turns)
    store.add_turns([Turn(user_id="v", session_id="s0", role="user", content="someone else")])
    chunks = list(export_pages(store, "u", page=3, turns_only=True))
    assert [c.count("\n") for c in chunks] == [3, 3, 1]
    rows = [json.loads(x) for c in chunks for x in c.splitlines()]
    assert [r["content"] for r in rows] == [f"turn {i} 第{i}句" for i in range(7)]
    full = list(export_pages(store, "u", page=3))
    assert [c.count("\n") for c in full] == [1, 3, 3, 1]  # the header, then the same pages
    assert [r["content"] for c in full[1:] for r in _records(c)] == [f"turn {i} 第{i}句" for i in range(7)]
    assert list(export_pages(store, "nobody", turns_only=True)) == []


T0 = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)


def _seed_everything(user: str, name: str = "林晓") -> None:
    """A user with a superseded fact, a summary, a bookmark, session state, mood, routine and a trace."""
    store = open_store(Config.load())
    try:
        turns = store.add_turns(
            [
                Turn(user_id=user, session_id="s1", role="user", content=f"我叫{name}", created_at=T0),
                Turn(user_id=user, session_id="s1", role="assistant", content="你好！", created_at=T0),
                Turn(
                    user_id=user,
                    session_id="s1",
                    role="user",
                    content="以后叫我大王",
                    created_at=T0 + timedelta(days=1),
                    meta={"images": ["a crown made of paper"]},
                ),
                Turn(
                    user_id=user, session_id="s2", role="user", content="I moved to Shanghai", created_at=T0
                ),
            ]
        )
        ids = [t.id or 0 for t in turns]
        profile = Profile(store)
        profile.set(user, "name", name, at=T0, source_turn_ids=[ids[0]], meta={"rule": "zh_name"})
        profile.set(user, "name", "大王", at=T0 + timedelta(days=1), source_turn_ids=[ids[2]])
        profile.set(user, "timezone", "Asia/Shanghai", at=T0, source_turn_ids=[ids[3]])
        store.add_bookmarks(
            user,
            [
                Bookmark(
                    user_id=user,
                    session_id="s1",
                    keywords=["大王"],
                    summary="The user wants to be called 大王.",
                    page_ids=[turns[2].page_id or 0],
                    turn_ids=[ids[2]],
                    first_at=T0,
                    last_at=T0,
                )
            ],
        )
        with store.transaction() as tx:
            store.summary_add(
                tx,
                {
                    "user_id": user,
                    "session_id": "s1",
                    "first_seq": 0,
                    "last_seq": 1,
                    "kind": "span",
                    "method": "rule",
                    "content": "They greeted each other.",
                    "tokens": 5,
                    "source_tokens": 12,
                    "source_turn_ids": ids[:2],
                    "created_at": T0.timestamp(),
                },
            )
            store.session_state_update(tx, user, "s1", {"topic": "names"}, now=T0.timestamp())
            store.mood_put(
                tx,
                user,
                {
                    "label": "proud",
                    "intensity": 0.5,
                    "cause_turn_ids": [ids[2]],
                    "updated_at": T0.timestamp(),
                },
            )
            store.routine_put(
                tx,
                user,
                {
                    "sleep_minute": 1380,
                    "wake_minute": 420,
                    "confidence": 0.8,
                    "timezone": "Asia/Shanghai",
                    "days": 9,
                    "source_turn_ids": ids,
                    "updated_at": T0.timestamp(),
                },
            )
            store.trace_put(
                tx, f"tr-{user}", user, "s1", created_at=T0.timestamp(), turn_ids=[ids[0]], data={"n": name}
            )
    finally:
        store.close()


def _profile_of(store: Store, user: str) -> list[tuple[Any, ...]]:
    """A user's facts as a round trip must keep them: ids as the values and turn texts they name."""
    text = {t.id: t.content for t in store.turns_by_id(user, 0, 100)}
    facts = store.export_facts(user)
    value = {f["id"]: f["value"] for f in facts}
    return [
        (
            f["key"],
            f["value"],
            f["valid_from"],
            f["superseded_at"],
            value.get(f["superseded_by"]),
            sorted(text[i] for i in f["source_turn_ids"]),
            f["meta"],
            round(f["created_at"], 5),
        )
        for f in facts
    ]


def test_everything_is_exported_and_the_profile_history_survives_import(tmp_path: Path) -> None:
    _seed_everything("alice")
    out = tmp_path / "alice.ndjson"
    result = invoke("export", "--user", "alice", "--out", str(out))
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # the console wraps lines
    assert "4 turns, 3 profile facts, 1 summaries, 1 bookmarks, 1 session states, 1 traces" in said
    records = _records(out.read_text(encoding="utf-8"))
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(r["type"], []).append(r)
    assert set(by_type) == {
        "header", "turn", "fact", "summary", "bookmark", "session_state", "mood", "routine", "trace"
    }  # fmt: skip
    names = [f for f in by_type["fact"] if f["key"] == "name"]
    old, new = names
    assert (old["value"], old["superseded_by"], old["superseded_at"]) == (
        "林晓",
        new["ref"],
        new["valid_from"],
    )
    assert new["superseded_at"] is None and new["source_turns"] == [3] and old["meta"] == {"rule": "zh_name"}
    assert by_type["turn"][2]["meta"] == {"images": ["a crown made of paper"]}
    assert by_type["bookmark"][0]["turns"] == [3] and by_type["summary"][0]["source_turns"] == [1, 2]
    assert by_type["routine"][0]["timezone"] == "Asia/Shanghai" and by_type["trace"][0]["data"] == {
        "n": "林晓"
    }

    # Into an empty home (on PostgreSQL the same database, so under another name).
    other_home = tmp_path / "other"
    result = invoke("import", str(out), "--user", "alice2", "--home", str(other_home), "--no-index")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "4 turns, 3 profile facts" in said
    assert "not restored" in said and "1 bookmark," in said and "1 summary," in said
    cfg = Config.load()
    other = open_store(cfg.database_url or other_home / "memsched.db")
    store = open_store(cfg)
    try:
        assert _stored(other, "alice2") == _stored(store, "alice")
        assert [t.meta for t in other.turns_by_id("alice2", 0, 10)] == [
            t.meta for t in store.turns_by_id("alice", 0, 10)
        ]
        assert _profile_of(other, "alice2") == _profile_of(store, "alice")
        # The superseded name is history, not in force: the current name is the new one.
        assert [f.value for f in Profile(other).facts("alice2", "name", current=True)] == ["大王"]
        assert [f.value for f in Profile(other).facts("alice2", "name")] == ["林晓", "大王"]
        mood, routine = other.mood_get("alice2"), other.routine_get("alice2")
        assert mood is not None and mood["label"] == "proud"
        assert [t.content for t in other.get_turns("alice2", mood["cause_turn_ids"])] == ["以后叫我大王"]
        assert routine is not None and routine["timezone"] == "Asia/Shanghai" and routine["days"] == 9
        assert len(routine["source_turn_ids"]) == 4
        # Derived data is made again by memsched, not written back.
        assert other.bookmark_count("alice2") == 0 and other.export_summaries("alice2") == []
    finally:
        other.close()
        store.close()


def test_import_of_an_export_refuses_a_user_with_data(tmp_path: Path) -> None:
    _seed_everything("alice")
    out = tmp_path / "alice.ndjson"
    assert invoke("export", "--user", "alice", "--out", str(out)).exit_code == 0
    result = invoke("import", str(out), "--user", "alice", "--no-index")
    said = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "user 'alice' already has data in this home (4 turns)" in said
    assert "forget --user alice --all" in said
    store = open_store(Config.load())
    try:
        assert store.turn_count("alice") == 4 and len(store.export_facts("alice")) == 3
    finally:
        store.close()


def test_a_bad_export_line_imports_nothing(tmp_path: Path) -> None:
    _seed_everything("alice")
    out = tmp_path / "alice.ndjson"
    assert invoke("export", "--user", "alice", "--out", str(out)).exit_code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    n = next(i for i, x in enumerate(lines) if json.loads(x)["type"] == "fact")
    broken = {**json.loads(lines[n]), "superseded_by": "the new one"}
    bad = tmp_path / "bad.ndjson"
    bad.write_text("\n".join([*lines[:n], json.dumps(broken), *lines[n + 1 :]]) + "\n", encoding="utf-8")
    result = invoke("import", str(bad), "--user", "carol", "--no-index")
    said = " ".join(result.output.split())
    assert result.exit_code == 1
    assert f"line {n + 1}: superseded_by must be a fact ref" in said and "nothing was imported" in said

    newer = tmp_path / "newer.ndjson"
    header = {**json.loads(lines[0]), "version": 3}
    newer.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    result = invoke("import", str(newer), "--user", "carol", "--no-index")
    assert result.exit_code == 1 and "export format version 3" in " ".join(result.output.split())
    store = open_store(Config.load())
    try:
        assert not store.has_user("carol")
    finally:
        store.close()


def test_http_export_of_a_tenant_carries_its_profile_history_only(tmp_path: Path) -> None:
    acme, globex = "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"
    _seed_everything("acme/bob", name="Bob")
    _seed_everything("globex/bob", name="Robert")
    cfg = Config.load(embedders="hash", api_keys=f"acme:{acme},globex:{globex}")
    with LiveServer(create_app(cfg, warm_up=False)) as base:
        url = f"{base}/v1/users/bob/export"
        assert httpx.get(url).status_code == 401
        r = httpx.get(url, headers={"Authorization": f"Bearer {acme}"}, timeout=30)
        assert r.status_code == 200
    records = _records(r.text)
    assert records[0]["user"] == "bob"  # the name the caller knows, not the tenant's prefix
    names = [
        (f["value"], f["superseded_at"] is None)
        for f in records
        if f["type"] == "fact" and f["key"] == "name"
    ]
    assert names == [("Bob", False), ("大王", True)]
    assert "Robert" not in r.text
    assert [t["data"] for t in records if t["type"] == "trace"] == [{"n": "Bob"}]


# -- POST /v1/users/{user}/import ------------------------------------------------------------------

KEPT = ("turn", "fact", "mood", "routine")  # what an import writes back as it was


def _kept(text: str) -> list[dict[str, Any]]:
    return [r for r in _records(text) if r["type"] in KEPT]


def _jobs_of(base: str, user: str, **headers: str) -> dict[int, dict[str, Any]]:
    r = httpx.get(f"{base}/v1/jobs", params={"user": user, "limit": 1000}, headers=headers, timeout=10)
    return {j["id"]: j for j in r.json()} if r.status_code == 200 else {}


def _wait_for_jobs(base: str, user: str, ids: list[int]) -> None:
    for _ in range(2400):  # a bounded wait for a state, not a timing assertion
        jobs = _jobs_of(base, user)
        if all(jobs.get(i, {}).get("status") == "done" for i in ids):
            return
        assert not any(jobs.get(i, {}).get("status") == "dead" for i in ids), jobs
        time.sleep(0.025)
    raise AssertionError(f"jobs {ids} did not run: {_jobs_of(base, user)}")


NDJSON = {"Content-Type": "application/x-ndjson"}


def _post_import(base: str, user: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/users/{user}/import", content=body, headers={**NDJSON, **headers}, timeout=60
    )


def test_http_import_restores_an_export_after_a_delete_and_its_turns_are_found(tmp_path: Path) -> None:
    open_store(Config.load(page_size=4)).close()  # a home of 4-turn pages (fixed when it is made)
    _seed_everything("alice")
    _seed(tmp_path, user="alice")  # session s1 now has 6 turns: its first page is full, to bookmark
    cfg = Config.load(embedders="hash", page_size=4)
    with LiveServer(create_app(cfg, warm_up=False)) as base:
        before = httpx.get(f"{base}/v1/users/alice/export", timeout=30)
        assert before.status_code == 200
        body = before.content
        assert httpx.delete(f"{base}/v1/users/alice", timeout=30).status_code == 200
        assert httpx.get(f"{base}/v1/users/alice/export").status_code == 404

        r = _post_import(base, "alice", body)
        assert r.status_code == 201, r.text
        done = r.json()
        assert done["user"] == "alice" and done["exported_user"] == "alice"
        n_facts = sum(1 for x in _records(body.decode()) if x["type"] == "fact")
        assert done["restored"] == {"turn": 4 + len(LINES), "fact": n_facts, "mood": 1, "routine": 1}
        assert done["rebuilt"] == {"summary": 1, "bookmark": 1, "session_state": 1, "trace": 1}
        assert set(done["jobs"]) >= {"embed", "bookmark"}
        # The vectors and the page's bookmarks (the tidy-up of a user's bookmarks waits ten minutes).
        _wait_for_jobs(base, "alice", done["jobs"]["embed"] + done["jobs"]["bookmark"])

        after = httpx.get(f"{base}/v1/users/alice/export", timeout=30)
        assert _kept(after.text) == _kept(before.text)  # the same turns (meta, times), facts, mood, routine
        marks = httpx.get(f"{base}/v1/users/alice/bookmarks").json()
        assert marks and all(m["session_id"] == "s1" for m in marks)  # made again by the queued job
        hits = httpx.get(f"{base}/v1/users/alice/search", params={"q": "cello lessons"}, timeout=30).json()
        cello = next(h for h in hits if "cello" in h["content"])
        assert "hash" in cello["scores"], cello  # found by its vector too: the embed job has run

        # Into a user that has data now: a 409 naming the user and the way out; nothing changes.
        again = _post_import(base, "alice", body)
        assert again.status_code == 409, again.text
        err = again.json()["error"]
        assert err["code"] == "user_has_data" and "'alice'" in err["message"]
        assert "DELETE /v1/users/alice" in err["message"] and "nothing was imported" in err["message"]
        assert (
            httpx.get(f"{base}/v1/users/alice/export", timeout=30).text.split("\n")[1:]
            == (after.text.split("\n")[1:])
        )

        # Under another id (moving a user): the path's user, whatever the header names.
        moved = _post_import(base, "alice-2", body, **{"Content-Type": "text/plain"})
        assert moved.status_code == 201, moved.text
        assert moved.json()["user"] == "alice-2" and moved.json()["exported_user"] == "alice"
        copy = httpx.get(f"{base}/v1/users/alice-2/export", timeout=30)
        assert _records(copy.text)[0]["user"] == "alice-2" and _kept(copy.text) == _kept(before.text)

        spec = httpx.get(f"{base}/openapi.json").json()["paths"]["/v1/users/{user}/import"]["post"]
        assert set(spec["responses"]) >= {"201", "400", "409", "413"}
        assert "application/x-ndjson" in spec["requestBody"]["content"]


def test_http_import_of_a_bad_line_names_it_and_stores_nothing(tmp_path: Path) -> None:
    _seed_everything("alice")
    with LiveServer(create_app(Config.load(embedders="hash"), warm_up=False)) as base:
        lines = httpx.get(f"{base}/v1/users/alice/export", timeout=30).text.splitlines()
        turn = next(i for i, x in enumerate(lines) if json.loads(x)["type"] == "turn")
        bad = list(lines)
        bad[turn + 2] = bad[turn + 2].replace('"role": "user"', '"role": "robot"')
        assert bad != lines
        r = _post_import(base, "carol", ("\n".join(bad) + "\n").encode())
        assert r.status_code == 400, r.text
        said = r.json()["error"]["message"]
        assert (
            f"line {turn + 3}:" in said and "role must be one of" in said and "nothing was imported" in said
        )
        broken = list(lines)
        broken[-1] = broken[-1][:-5]
        r = _post_import(base, "carol", ("\n".join(broken) + "\n").encode())
        assert r.status_code == 400 and f"line {len(lines)}: not valid JSON" in r.json()["error"]["message"]
        # `curl -d @file` takes the newlines out: every record on line 1, and the message says why.
        r = _post_import(
            base, "carol", "".join(lines).encode(), **{"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 400 and "--data-binary" in r.json()["error"]["message"]
        r = _post_import(base, "carol", b"")
        assert r.status_code == 400 and "the body is empty" in r.json()["error"]["message"]
        # The turns of a version 1 export (no header) are no export: the CLI imports those.
        r = _post_import(base, "carol", "".join(x + "\n" for x in lines[1:]).encode())
        assert r.status_code == 400 and "line 1: not a memsched export" in r.json()["error"]["message"]
        r = httpx.post(f"{base}/v1/users/carol/import", files={"file": ("a.ndjson", "\n".join(lines))})
        assert r.status_code == 415 and "--data-binary" in r.json()["error"]["message"]
        assert httpx.get(f"{base}/v1/users/carol/export").status_code == 404
        assert _jobs_of(base, "carol") == {}
    store = open_store(Config.load())
    try:
        assert not store.has_user("carol") and not store.export_facts("carol")
    finally:
        store.close()


def test_http_import_over_the_body_limit_is_a_413_naming_the_cli(tmp_path: Path) -> None:
    _seed_everything("alice")
    with LiveServer(create_app(Config.load(embedders="hash"), warm_up=False)) as base:
        body = httpx.get(f"{base}/v1/users/alice/export", timeout=30).content
    with LiveServer(
        create_app(Config.load(embedders="hash", max_body_bytes=len(body) - 1), warm_up=False)
    ) as base:
        r = _post_import(base, "dave", body)
        assert r.status_code == 413, r.text
        said = r.json()["error"]["message"]
        assert f"MEMSCHED_MAX_BODY_BYTES={len(body) - 1}" in said and "memsched import FILE --user" in said
        # Another route's 413 names the limit only.
        big = {"user": "dave", "session_id": "s", "role": "user", "content": "x" * len(body)}
        other = httpx.post(f"{base}/v1/turns", json=big)
        assert other.status_code == 413 and "memsched import" not in other.json()["error"]["message"]
        assert httpx.get(f"{base}/v1/users/dave/export").status_code == 404


def test_http_import_is_behind_the_api_keys_as_the_export_is(tmp_path: Path) -> None:
    acme, globex = "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"
    _seed_everything("acme/bob", name="Bob")
    cfg = Config.load(embedders="hash", api_keys=f"acme:{acme},globex:{globex}")
    with LiveServer(create_app(cfg, warm_up=False)) as base:
        url = f"{base}/v1/users/bob/export"
        as_acme, as_globex = {"Authorization": f"Bearer {acme}"}, {"Authorization": f"Bearer {globex}"}
        body = httpx.get(url, headers=as_acme, timeout=30).content
        assert _post_import(base, "bob", body).status_code == 401
        assert httpx.get(url, headers=as_acme, timeout=30).content.split(b"\n")[1:] == body.split(b"\n")[1:]
        # acme's bob has data: its own key is refused.
        assert _post_import(base, "bob", body, **as_acme).status_code == 409
        # globex's key names globex's bob: it imports there, and acme's bob is untouched.
        r = _post_import(base, "bob", body, **as_globex)
        assert r.status_code == 201, r.text
        theirs = httpx.get(url, headers=as_globex, timeout=30)
        assert _kept(theirs.text) == _kept(body.decode())
        assert httpx.get(url, headers=as_acme, timeout=30).content.split(b"\n")[1:] == body.split(b"\n")[1:]
        # A name of the default tenant's form is no way into another tenant.
        assert _post_import(base, "acme/bob", body, **as_globex).status_code in (400, 404, 409)
    store = open_store(Config.load())
    try:
        assert store.turn_count("acme/bob") == 4 and store.turn_count("globex/bob") == 4
    finally:
        store.close()


def test_two_imports_of_one_user_at_once_store_it_once(tmp_path: Path) -> None:
    """Both imports read the user as empty before either wrote (a client's retry while the first
    import still runs): the second's claim on the user inside its transaction refuses it, instead of
    writing every turn a second time."""
    from memsched.errors import UserHasDataError
    from memsched.export import restore

    _seed_everything("alice")
    out = tmp_path / "alice.ndjson"
    assert invoke("export", "--user", "alice", "--out", str(out)).exit_code == 0
    store = open_store(Config.load())
    try:
        assert restore(store, out, "bob").written["turn"] == 4  # the first import
        # The second import's look came before the first one wrote: it saw no user.
        store.has_user = lambda user_id: False  # type: ignore[method-assign]
        store.export_facts = lambda user_id: []  # type: ignore[method-assign]
        with pytest.raises(UserHasDataError, match="'bob' was created while this import ran"):
            restore(store, out, "bob")
        del store.has_user, store.export_facts
        assert store.turn_count("bob") == 4  # once, not twice
        assert len(store.export_facts("bob")) == len(store.export_facts("alice"))
    finally:
        store.close()
