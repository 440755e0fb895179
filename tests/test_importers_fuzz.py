"""Hypothesis against the import parsers: whatever a file holds, they return well-formed turns or raise
`ImportFileError`/`InputError` naming the problem — never another exception."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.errors import ImportFileError, InputError
from memsched.importers import parse_timestamp, read_jsonl, read_locomo
from memsched.model import ROLES

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_values = {
    "session_id": st.text(max_size=10) | st.integers() | st.none() | json_values,
    "role": st.sampled_from([*ROLES, "wizard", ""]) | json_values,
    "content": st.text(max_size=40) | json_values,
    "timestamp": st.sampled_from(
        ["2024-05-08T13:56:00+08:00", "9999-12-31", "1:56 pm on 8 May, 2023", "", "x"]
    )
    | st.integers()
    | st.floats(allow_nan=True)
    | json_values,
    "speaker": st.text(max_size=10) | json_values,
    "external_id": st.text(max_size=10) | json_values,
    "user_id": st.text(max_size=10) | json_values,
}
turn_objects = st.fixed_dictionaries({}, optional=field_values)
lines = st.lists(
    turn_objects.map(lambda o: json.dumps(o, allow_nan=True))
    | st.text(max_size=40).filter(lambda t: "\n" not in t and "\r" not in t)
    | json_values.map(json.dumps),
    max_size=6,
)


def _write(data: bytes) -> Path:
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as fh:
        fh.write(data)
    return Path(fh.name)


@FUZZ
@given(lines=lines, junk=st.binary(max_size=8))
def test_jsonl_lines_become_turns_or_a_numbered_error(lines: list[str], junk: bytes) -> None:
    path = _write(("\n".join(lines) + "\n").encode() + junk)
    try:
        for batch in read_jsonl(path, "u"):
            for turn in batch:
                assert isinstance(turn.content, str) and turn.role in ROLES
                assert isinstance(turn.session_id, str) and turn.session_id
                assert turn.speaker is None or isinstance(turn.speaker, str)
                assert turn.external_id is None or isinstance(turn.external_id, str)
                assert isinstance(turn.user_id, str) and turn.user_id
    except ImportFileError as exc:
        assert exc.line is None or exc.line >= 1
    finally:
        path.unlink()


@FUZZ
@given(value=st.text(max_size=40) | st.integers() | st.floats(allow_nan=True) | json_values)
def test_timestamps_parse_or_say_why(value: Any) -> None:
    try:
        parsed = parse_timestamp(value, "timestamp")
    except InputError as exc:
        assert "timestamp" in str(exc)
    else:
        assert isinstance(parsed, datetime) and parsed.tzinfo is not None


sessions = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "speaker": st.sampled_from(["A", "B"]) | json_values,
            "text": json_values,
            "dia_id": json_values,
            "blip_caption": json_values,
        },
    )
    | json_values,
    max_size=3,
)
conversations = st.fixed_dictionaries(
    {},
    optional={
        "speaker_a": st.just("A") | json_values,
        "speaker_b": st.just("B") | json_values,
        "session_1": sessions,
        "session_1_date_time": st.just("1:56 pm on 8 May, 2023") | json_values,
        "session_2": sessions | json_values,
    },
)
samples = st.lists(
    st.fixed_dictionaries(
        {},
        optional={"conversation": conversations | json_values, "sample_id": json_values, "qa": json_values},
    )
    | json_values,
    max_size=3,
)


@FUZZ
@given(data=samples | json_values, junk=st.binary(max_size=4))
def test_locomo_files_become_samples_or_an_error(data: Any, junk: bytes) -> None:
    path = _write(json.dumps(data, allow_nan=True).encode() + junk)
    try:
        for sample in read_locomo(path):
            assert isinstance(sample.sample_id, str)
            for turn in sample.turns:
                assert isinstance(turn.content, str) and turn.role in ROLES
                assert turn.external_id is None or isinstance(turn.external_id, str)
    except (ImportFileError, InputError):
        pass
    finally:
        path.unlink()
