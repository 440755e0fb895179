from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memsched.cli import app
from memsched.config import Config
from memsched.store import open_store

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _jsonl(path: Path, n: int = 3, bad_line: str | None = None) -> Path:
    lines = [
        json.dumps(
            {
                "session_id": "s1",
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"line {i} about my cat Sesame" if i == 0 else f"chat {i}",
                "timestamp": f"2024-03-0{1 + i % 9}T10:00:00Z",
            }
        )
        for i in range(n)
    ]
    if bad_line is not None:
        lines.append(bad_line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_context_search(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "c.jsonl")
    code, out = invoke("import", str(f), "--user", "alice", "--embedders", "hash")
    assert code == 0 and "imported 3 new turns" in out
    code, out = invoke("import", str(f), "--user", "alice", "--embedders", "hash")
    assert code == 0 and "imported 0 new turns" in out  # idempotent

    code, out = invoke(
        "context", "--user", "alice", "--json", "--budget", "300", "--embedders", "hash", "my cat?"
    )
    assert code == 0
    data = json.loads(out)
    assert "Sesame" in data["messages"][0]["content"]
    assert data["trace"]["tokens"]["total"] <= 300

    code, out = invoke("search", "--user", "alice", "--json", "--embedders", "hash", "Sesame")
    assert code == 0 and "Sesame" in json.loads(out)[0]["content"]


def test_import_learns_the_rule_facts_in_timestamp_order(tmp_path: Path, isolated_env: Path) -> None:
    from memsched.profile import Profile

    rows = [  # deliberately not in time order: the later move must win
        ("2024-03-05T10:00:00Z", "user", "I moved to Tokyo last month"),
        ("2024-03-01T10:00:00Z", "user", "I live in Berlin with my wife"),
        ("2024-03-01T10:01:00Z", "assistant", "I live in Paris, by the way"),  # not the user's fact
        ("2024-03-02T10:00:00Z", "user", "以后叫我大王吧"),
        ("2024-03-03T10:00:00Z", "user", "I'm allergic to peanuts and my sister is too"),
    ]
    f = tmp_path / "facts.jsonl"
    f.write_text(
        "\n".join(
            json.dumps({"session_id": "s1", "role": r, "content": c, "timestamp": ts}) for ts, r, c in rows
        )
        + "\n",
        encoding="utf-8",
    )
    for _ in range(2):  # a re-import adds no turn and no fact twice
        code, out = invoke("import", str(f), "--user", "carol", "--embedders", "hash")
        assert code == 0, out
    store = open_store(Config.load())
    try:
        profile = Profile(store)
        history = [(x.value, x.current) for x in profile.history("carol", "location")]
        assert sorted(history) == [("Berlin", False), ("Tokyo", True)]
        berlin, tokyo = sorted(profile.history("carol", "location"), key=lambda x: x.valid_from)
        assert berlin.superseded_by == tokyo.id and tokyo.valid_from.isoformat().startswith("2024-03-05")
        assert profile.values("carol", "preferred_name") == ["大王"]
        assert profile.values("carol", "allergies") == ["peanuts"]
        assert len(profile.history("carol")) == 4
        (moved,) = [t for t in store.session_turns("carol", "s1") if "Tokyo" in t.content]
        assert tokyo.source_turn_ids == (moved.id,)
    finally:
        store.close()


def test_context_record_stores_message(tmp_path: Path, isolated_env: Path) -> None:
    _jsonl(tmp_path / "c.jsonl")
    invoke("import", str(tmp_path / "c.jsonl"), "--user", "alice", "--embedders", "hash")
    code, _ = invoke(
        "context", "--user", "alice", "--session", "s2", "--record", "--embedders", "hash", "new one"
    )
    assert code == 0
    store = open_store(Config.load())
    assert [t.content for t in store.session_turns("alice", "s2")] == ["new one"]
    store.close()


def test_context_record_stores_a_new_users_first_message(isolated_env: Path) -> None:
    code, out = invoke(
        "context", "--user", "newcomer", "--session", "s1", "--record", "--embedders", "hash", "I'm Ana"
    )
    assert code == 0, out
    store = open_store(Config.load())
    assert [t.content for t in store.session_turns("newcomer", "s1")] == ["I'm Ana"]
    store.close()
    # Without --record an unknown user is still an error, as for the other read commands.
    code, out = invoke("context", "--user", "nobody", "--embedders", "hash", "hi")
    assert code == 1 and "unknown user 'nobody'" in out


def test_context_is_what_the_service_builds_and_record_learns_as_it_does(isolated_env: Path) -> None:
    """`memsched context` printed `Memory.context` alone: no profile, no local time (what the service
    sends has both), and `--record` stored the message without applying "call me ..." or learning
    the facts in it. It now goes through the scheduler, as POST /v1/context does."""
    from memsched.profile import Profile

    said = "I moved to Berlin last week, call me Kimmy"
    code, out = invoke("context", "--user", "kim", "--session", "a", "--record", "--embedders", "hash", said)
    assert code == 0, out
    store = open_store(Config.load())
    try:
        facts = {k: f.value for k, f in Profile(store).current("kim").items()}
        assert [t.content for t in store.session_turns("kim", "a")] == [said]
    finally:
        store.close()
    assert facts.get("preferred_name") == "Kimmy" and facts.get("location") == "Berlin"
    code, out = invoke("context", "--user", "kim", "--session", "b", "--embedders", "hash", "--json", "hi")
    assert code == 0, out
    system = json.loads(out)["messages"][0]["content"]
    assert "Now (user's local time)" in system and "Kimmy" in system.split("Memories")[0]


def test_reimporting_lines_without_timestamps_adds_nothing_twice(tmp_path: Path, isolated_env: Path) -> None:
    lines = [
        {"session_id": "s1", "role": "user", "content": "ok"},
        {"session_id": "s1", "role": "assistant", "content": "Good to hear"},
        {"session_id": "s1", "role": "user", "content": "ok"},  # said twice: both are kept
        {"session_id": "s2", "role": "user", "content": "dated", "timestamp": "2024-03-02T10:00:00Z"},
    ]
    f = tmp_path / "undated.jsonl"
    f.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, out = invoke("import", str(f), "--user", "carol", "--embedders", "hash")
    assert code == 0 and "imported 4 new turns" in out
    code, out = invoke("import", str(f), "--user", "carol", "--embedders", "hash")
    assert code == 0 and "imported 0 new turns" in out and "4 already stored" in out
    # Lines appended to the file are imported, a third "ok" included.
    with f.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"session_id": "s1", "role": "user", "content": "ok"}) + "\n")
        fh.write(json.dumps({"session_id": "s1", "role": "user", "content": "new line"}) + "\n")
    code, out = invoke("import", str(f), "--user", "carol", "--embedders", "hash")
    assert code == 0 and "imported 2 new turns" in out
    store = open_store(Config.load())
    try:
        assert [t.content for t in store.session_turns("carol", "s1")] == [
            "ok",
            "Good to hear",
            "ok",
            "ok",
            "new line",
        ]
        assert store.turn_count("carol") == 6
    finally:
        store.close()


def test_db_option_takes_a_postgresql_url(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    f = _jsonl(tmp_path / "c.jsonl")
    code, out = invoke("import", str(f), "--user", "dora", "--db", pg_url, "--embedders", "hash")
    assert code == 0 and "imported 3 new turns" in out
    code, out = invoke("search", "--user", "dora", "--db", pg_url, "--json", "--embedders", "hash", "Sesame")
    assert code == 0 and "Sesame" in json.loads(out)[0]["content"]
    store = open_store(pg_url)
    try:
        assert store.turn_count("dora") == 3
    finally:
        store.close()
    # Nothing went to a SQLite file named after the URL (a Path folds "postgresql://" to "postgresql:/").
    assert not (tmp_path / "postgresql:").exists() and not (tmp_path / "postgres:").exists()


def test_import_refuses_an_unknown_timezone_before_storing(tmp_path: Path, isolated_env: Path) -> None:
    f = _jsonl(tmp_path / "c.jsonl")
    result = runner.invoke(app, ["import", str(f), "--user", "erin", "--timezone", "Mars/Base"])
    assert result.exit_code == 1
    assert "--timezone: unknown time zone 'Mars/Base'" in result.output and "Traceback" not in result.output
    code, out = invoke("search", "--user", "erin", "--embedders", "hash", "cat")
    assert code == 1 and "unknown user 'erin'" in out  # nothing was stored


def test_malformed_line_keeps_what_came_before(tmp_path: Path, isolated_env: Path) -> None:
    f = _jsonl(tmp_path / "bad.jsonl", n=4, bad_line='{"session_id": "s1", "role": "user"')
    result = runner.invoke(app, ["import", str(f), "--user", "bob", "--embedders", "hash"])
    assert result.exit_code == 1
    assert "line 5" in result.output and "4 turns before it were imported and kept" in result.output
    store = open_store(Config.load())
    assert store.turn_count("bob") == 4
    store.close()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"content": "my pin is 12\x0034"}, "line 2: content: has a NUL character"),
        ({"content": "hi \ud83d"}, "line 2: content: has an unpaired UTF-16 surrogate (\\ud83d"),
        ({"session_id": "s\x00"}, "line 2: session_id: has a NUL character"),
        ({"speaker": "Mel\udc00"}, "line 2: speaker: has an unpaired"),
        ({"session_id": "  "}, "line 2: session_id must be a non-empty string"),
    ],
)
def test_an_unstorable_string_in_an_import_names_its_line_and_field(
    tmp_path: Path, isolated_env: Path, line: dict[str, Any], message: str
) -> None:
    """Before: a NUL was 'turn content contains a NUL character' (no line, no file), and an unpaired
    surrogate a UnicodeEncodeError traceback; a blank session id was imported as the session "  "."""
    bad = json.dumps({"session_id": "s1", "role": "user", "content": "x", **line})  # ASCII: escapes kept
    f = _jsonl(tmp_path / "odd.jsonl", n=1, bad_line=bad)
    result = runner.invoke(app, ["import", str(f), "--user", "bob", "--embedders", "hash"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert message in result.output, result.output
    assert "1 turns before it were imported and kept" in result.output
    store = open_store(Config.load())
    assert store.turn_count("bob") == 1
    store.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "/nonexistent/file.jsonl", "--user", "x"], "file not found"),
        (["context", "--user", "ghost", "--embedders", "hash", "hi"], "unknown user 'ghost'"),
        (["search", "--user", "ghost", "--embedders", "hash", "hi"], "unknown user 'ghost'"),
        (["context", "--user", "x", "--record", "--embedders", "hash", "hi"], "--record needs --session"),
        (["eval", "locomo", "--data", "/nonexistent.json"], "file not found"),
        (["eval", "locomo", "--budget", "abc"], "--budget"),
        (["proactive", "--user", "x", "--timezone", "Mars/Base"], "unknown time zone 'Mars/Base'"),
        # serve and worker: found out before the server starts, not as a traceback while it does
        (["serve", "--port", "70000", "--embedders", "hash"], "--port (or MEMSCHED_PORT) must be between 1"),
        (["serve", "--embedders", "hash,bogus"], "unknown embedder 'bogus'"),
        (["serve", "--log-level", "loud", "--embedders", "hash"], "--log-level must be debug"),
        (["worker", "--once", "--kinds", "embed,bogus", "--embedders", "hash"], "unknown job kind 'bogus'"),
        # before: -1 named the library's lease_seconds, NaN was taken, and a negative --poll spun a core
        (["worker", "--once", "--lease", "-1", "--embedders", "hash"], "--lease must be a positive number"),
        (["worker", "--once", "--lease", "nan", "--embedders", "hash"], "--lease must be a positive number"),
        (["worker", "--once", "--poll", "-1", "--embedders", "hash"], "--poll must be zero or more"),
        # a blank id, refused as the HTTP API refuses it (before: stored as a user or session " ")
        (["import", "/nonexistent/file.jsonl", "--user", " "], "is blank"),
        (["context", "--user", "x", "--session", " ", "--record", "--embedders", "hash", "hi"], "is blank"),
        (["forget", "--user", "", "--all"], "is blank"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_import_locomo_and_eval_json_shape(locomo_file: Path) -> None:
    code, out = invoke("import", str(locomo_file), "--embedders", "hash")
    assert code == 0 and "conv-test" in out
    code, out = invoke(
        "eval", "locomo", "--data", str(locomo_file), "--budget", "200,400", "--json", "--embedders", "hash"
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"questions", "full_context_tokens", "results"}
    assert data["questions"] == 3  # category 5 is left out
    assert data["over_budget"] == 0
    assert set(data["results"]) == {"200", "400"}
    systems = data["results"]["400"]
    assert set(systems) >= {"memsched", "window", "bm25", "dense", "hybrid"}
    fields = {"evidence_recall", "answer_in_context", "avg_tokens", "p50_ms", "p95_ms"}
    for metrics in systems.values():
        assert set(metrics) == fields | {"by_category"}
        assert metrics["avg_tokens"] <= 400
        # the tiny file has one question each of categories 1, 2 and 4
        assert set(metrics["by_category"]) == {"multi-hop", "temporal", "single-hop"}
        for per_category in metrics["by_category"].values():
            assert set(per_category) == fields
    assert systems["memsched"]["evidence_recall"] == 1.0  # the whole tiny conversation fits
    assert systems["memsched"]["by_category"]["temporal"]["evidence_recall"] == 1.0
    assert any((Path(os.environ["MEMSCHED_HOME"]) / "cache" / "eval").glob("vectors-*.npz"))


def test_demo_runs_offline() -> None:
    code, out = invoke("demo", "--embedders", "hash", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["turns"] > 300
    found = sum(len(q["memsched_found"]) for q in data["questions"])
    window = sum(len(q["window_found"]) for q in data["questions"])
    assert found > window
    assert data["bookmark_index"].count("\n") >= 3  # bookmarks were written and indexed


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for name, cmd in group.commands.items():
        out.append((prefix + name, cmd))
        if hasattr(cmd, "commands"):  # a command group
            out += _commands(cmd, prefix + name + " ")
    return out


def test_every_command_has_help() -> None:
    import typer.main

    root = typer.main.get_command(app)
    commands = _commands(root)
    assert {"import", "context", "search", "demo", "eval locomo", "serve"} <= {n for n, _ in commands}
    for name, cmd in commands:
        assert cmd.help or cmd.short_help, f"{name} has no help text"
        code, out = invoke(*name.split(), "--help")
        assert code == 0 and "Usage" in out
    # Help is markdown (lines of a docstring join into one paragraph): placeholders must survive it.
    code, out = invoke("forget", "--help")
    assert "<home>/memsched.db" in out


@pytest.mark.parametrize("fmt", ["auto", "jsonl"])
def test_an_editor_s_byte_order_mark_is_read_past_and_utf16_is_named(
    tmp_path: Path, isolated_env: Path, fmt: str
) -> None:
    """A file saved by Notepad starts with UTF-8's byte order mark: it was refused ('Unexpected UTF-8
    BOM (decode using utf-8-sig)'); UTF-16 text (other Windows tools) was a traceback."""
    line = '{"session_id": "s1", "role": "user", "content": "我的猫叫芝麻"}\n'
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + line.encode())
    code, out = invoke("import", str(bom), "--user", "u", "--format", fmt, "--embedders", "hash")
    assert code == 0, out
    assert "imported 1 new turns" in out
    u16 = tmp_path / "u16.jsonl"
    u16.write_text(line, encoding="utf-16")
    result = runner.invoke(app, ["import", str(u16), "--user", "u2", "--format", fmt, "--embedders", "hash"])
    assert result.exit_code == 1
    assert "UTF-16 text" in result.output and "Traceback" not in result.output


def test_a_locomo_file_with_a_byte_order_mark_imports(
    tmp_path: Path, isolated_env: Path, locomo_file: Path
) -> None:
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + locomo_file.read_bytes())
    code, out = invoke("import", str(bom), "--embedders", "hash", "--no-index")
    assert code == 0, out
    assert "imported" in out


def test_forget_with_a_turn_id_past_64_bits_names_it_and_keeps_everything(tmp_path: Path) -> None:
    """`forget --turn 36893488147419103239` was a traceback (the driver's OverflowError, on SQLite
    and on PostgreSQL); no turn has such an id."""
    f = _jsonl(tmp_path / "c.jsonl")
    code, out = invoke("import", str(f), "--user", "alice", "--embedders", "hash", "--no-index")
    assert code == 0, out
    huge = str(2**65 + 7)
    result = runner.invoke(app, ["forget", "--user", "alice", "--turn", huge, "--turn", "1"])
    assert result.exit_code == 1 and f"has no turn {huge}" in result.output, result.output
    code, out = invoke("search", "--user", "alice", "--json", "--embedders", "hash", "Sesame")
    assert code == 0 and json.loads(out)
