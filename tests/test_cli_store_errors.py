"""A database file memsched cannot use is one clear line naming the file and the cause, never a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memsched.cli import app
from memsched.cli.common import reports_errors
from memsched.errors import StoreError
from memsched.store.sqlite import SQLiteStore

runner = CliRunner()


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "content",
    [b"hello, I am a text file\n", b"SQLite format 3\x00" + b"\xff" * 4000, bytes(range(256)) * 20],
    ids=["text", "bad-header", "binary"],
)
def test_a_corrupt_database_file_is_named_not_a_traceback(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "memsched.db"
    db.write_bytes(content)
    code, out = _run("search", "--db", str(db), "--user", "li", "--embedders", "hash", "cat")
    assert code == 1
    assert "Traceback" not in out
    assert str(db) in out and "not a readable SQLite database" in out
    assert db.read_bytes() == content  # nothing was written over it


def test_a_home_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, out = _run("search", "--home", str(blocker / "home"), "--user", "li", "--embedders", "hash", "x")
    assert code == 1
    assert "Traceback" not in out
    assert "cannot create the directory of database" in out and "MEMSCHED_HOME" in out


def test_the_store_raises_store_error_for_a_corrupt_file(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    db.write_bytes(b"garbage" * 100)
    with pytest.raises(StoreError, match="not a readable SQLite database"):
        SQLiteStore(db)


def test_a_write_refused_later_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    @reports_errors
    def command() -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    with pytest.raises(typer.Exit) as exc:
        command()
    assert exc.value.exit_code == 1
    err = capsys.readouterr().err
    assert "refused a write" in err and "write access" in err and "Traceback" not in err
