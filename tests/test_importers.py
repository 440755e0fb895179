from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsched.errors import ImportFileError
from memsched.importers import detect_format, read_jsonl, read_locomo

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_turns_and_timestamps(tmp_path: Path) -> None:
    f = _jsonl(
        tmp_path / "a.jsonl",
        [
            json.dumps(
                {
                    "session_id": "s1",
                    "role": "user",
                    "content": "你好",
                    "timestamp": "2024-03-02T20:14:00+08:00",
                }
            ),
            json.dumps(
                {"session_id": 2, "role": "assistant", "content": "hi", "timestamp": "2024-03-02T12:15:00Z"}
            ),
            "",
        ],
    )
    (batch,) = list(read_jsonl(f, "u"))
    assert [t.content for t in batch] == ["你好", "hi"]
    assert batch[0].created_at.isoformat() == "2024-03-02T12:14:00+00:00"
    assert batch[1].session_id == "2"
    assert detect_format(f) == "jsonl"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"role": "user", "content": "x"}', "session_id"),
        ('{"session_id": "s", "role": "bot", "content": "x"}', "role must be one of"),
        ('{"session_id": "s", "role": "user", "content": 5}', "content must be a string"),
        (
            '{"session_id": "s", "role": "user", "content": "x", "timestamp": "someday maybe"}',
            "cannot parse timestamp",
        ),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_line_reported_with_number(tmp_path: Path, line: str, message: str) -> None:
    good = json.dumps({"session_id": "s", "role": "user", "content": "fine"})
    f = _jsonl(tmp_path / "b.jsonl", [good, good, line])
    with pytest.raises(ImportFileError, match=rf"line 3: .*{message}") as info:
        for _ in read_jsonl(f, "u", batch=1):
            pass
    assert info.value.line == 3


def test_locomo_sample_becomes_one_user(locomo_file: Path) -> None:
    assert detect_format(locomo_file) == "locomo"
    (sample,) = read_locomo(locomo_file)
    assert sample.sample_id == "conv-test"
    turns = sample.turns
    assert [t.external_id for t in turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0].speaker == "Caroline" and turns[0].session_id == "session_1"
    assert turns[0].created_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert turns[3].created_at.date().isoformat() == "2023-05-25"
    assert "[shared a photo: a photo of a blue ceramic bowl]" in turns[2].content
    assert turns[0].created_at < turns[1].created_at  # order inside a session is kept


def test_locomo_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "x"}]', encoding="utf-8")
    with pytest.raises(ImportFileError, match="no 'conversation'"):
        read_locomo(bad)
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(ImportFileError, match="not valid JSON"):
        read_locomo(bad)
