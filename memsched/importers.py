"""Read conversations from files: memsched JSONL and the LoCoMo benchmark format.

Readers yield batches of turns so callers store them as they go: a malformed line stops the import
with its line number, and everything before it stays stored.
"""

from __future__ import annotations

import codecs
import io
import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsched.errors import ImportFileError, InputError
from memsched.model import ROLES, Turn, as_utc, unstorable
from memsched.zones import zone_info

if TYPE_CHECKING:
    from memsched.store import Store


@dataclass(slots=True)
class LocomoSample:
    """One LoCoMo conversation: its turns (as one user) and its questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    qa: list[dict[str, Any]]


# What a text editor may put at the start of a file: UTF-8's byte order mark is read past; UTF-16 text
# (what some Windows tools save) is named, since every line of it would fail as "not valid UTF-8".
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def utf16_error(path: Path | str) -> ImportFileError:
    return ImportFileError(f"{path}: the file is UTF-16 text; memsched reads UTF-8: save it as UTF-8")


def detect_format(path: Path) -> str:
    """'locomo' for a JSON list of samples with a `conversation`, else 'jsonl'."""
    with path.open("rb") as fh:
        raw = fh.read(4096)
    if raw.startswith(UTF16_BOMS):
        raise utf16_error(path)
    # A cut multi-byte character or other bad bytes are the reader's to report, with their line.
    head = raw.decode("utf-8-sig", errors="replace").lstrip()
    if (head.startswith("[") and '"conversation"' in head) or '"sample_id"' in head:
        return "locomo"
    return "jsonl"


def parse_timestamp(value: Any, where: str, zone: str | None = None) -> datetime:
    """An aware UTC datetime from ISO 8601 text or epoch seconds; naive text is local time in the IANA
    `zone` when one is given (an app asking "as of 10:00" means the user's 10:00), else UTC."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return as_utc(datetime.fromtimestamp(float(value)).astimezone())
        except (OverflowError, OSError, ValueError):
            raise InputError(f"{where}: epoch seconds {value!r} are out of range") from None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: timestamp missing or not a string")
    text = value.strip().replace("Z", "+00:00")
    try:
        iso = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if iso.tzinfo is None and zone:
            iso = iso.replace(tzinfo=zone_info(zone) or UTC)
        return as_utc(iso)
    import dateparser

    try:
        parsed = dateparser.parse(
            text, settings={"TIMEZONE": zone or "UTC", "RETURN_AS_TIMEZONE_AWARE": True}
        )
    except (ValueError, OverflowError, OSError):
        parsed = None
    if parsed is None:
        raise InputError(f"{where}: cannot parse timestamp {value!r}")
    return as_utc(parsed)


def read_jsonl(path: Path, user_id: str, batch: int = 500) -> Iterator[list[Turn]]:
    """Turns from `{"session_id","role","content","timestamp"}` lines (optional: speaker, external_id,
    meta - a JSON object kept with the turn, as an export writes it; a line without `timestamp` is
    dated now)."""
    for lines in read_jsonl_lines(path, user_id, batch):
        yield [turn for turn, _ in lines]


def json_lines(source: Path | bytes) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON value) of each non-blank line of a JSONL file (or of a request body
    as bytes); text that is not UTF-8 (a UTF-16 file: `utf16_error`) or not JSON is an
    `ImportFileError` naming its line."""
    with source.open("rb") if isinstance(source, Path) else io.BytesIO(source) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(UTF16_BOMS):
                raise utf16_error(source if isinstance(source, Path) else "the body")
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ImportFileError("not valid UTF-8 text", line=lineno) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFileError(f"not valid JSON ({exc.msg})", line=lineno) from None
            except RecursionError:
                raise ImportFileError("JSON nested too deeply", line=lineno) from None
            yield lineno, obj


def read_jsonl_lines(path: Path, user_id: str, batch: int = 500) -> Iterator[list[tuple[Turn, bool]]]:
    """As `read_jsonl`, each turn with whether its line gave a `timestamp`."""
    pending: list[tuple[Turn, bool]] = []
    lines = json_lines(path)
    while True:
        try:
            item = next(lines, None)
            if item is None:
                break
            lineno, obj = item
            try:
                pending.append((jsonl_turn(obj, user_id), isinstance(obj, dict) and "timestamp" in obj))
            except InputError as exc:
                raise ImportFileError(str(exc), line=lineno) from None
        except ImportFileError:
            if pending:  # hand over the good lines before it, so they are kept
                yield pending
            raise
        if len(pending) >= batch:
            yield pending
            pending = []
    if pending:
        yield pending


class Reimport:
    """Which undated lines of a JSONL import an earlier import of the same file already stored.

    A line without `timestamp` is dated when it is imported, so the store's duplicate check (same
    session, role, text and time) cannot see that it is there from a previous run. Such a line counts
    as stored while its session holds more turns of the same role and text than the lines before it
    in this import have used up: importing a file again adds nothing, a file with lines appended adds
    those lines. Each session's turns are counted the first time this import meets it, before it
    stores anything there.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._left: dict[tuple[str, str], Counter[tuple[str, str]]] = {}

    def new_turns(self, lines: list[tuple[Turn, bool]]) -> list[Turn]:
        """The turns of `lines` to store (dated ones all: the store recognises those itself)."""
        out = []
        for turn, dated in lines:
            key = (turn.user_id, turn.session_id)
            left = self._left.get(key)
            if left is None:
                stored = self.store.session_turns(turn.user_id, turn.session_id)
                left = self._left[key] = Counter((t.role, t.hash) for t in stored)
            if not dated and left[(turn.role, turn.hash)] > 0:
                left[(turn.role, turn.hash)] -= 1
                continue
            out.append(turn)
        return out


def check_meta(value: Any, where: str = "meta") -> dict[str, Any]:
    """A `meta` object as read from a file, refused (naming the problem) when no store can hold it."""
    if not isinstance(value, dict):
        raise InputError(f"{where} must be a JSON object")

    def walk(x: Any) -> None:
        if isinstance(x, str):
            problem = unstorable(x)
            if problem is not None:
                raise InputError(f"{where}: a string {problem}")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, float) and not math.isfinite(x):
            raise InputError(f"{where}: {x} is not a number JSON can hold")

    walk(value)
    return value


def jsonl_turn(obj: Any, user_id: str) -> Turn:
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object")
    missing = [k for k in ("session_id", "role", "content") if k not in obj]
    if missing:
        raise InputError(f"missing field(s): {', '.join(missing)}")
    role = obj["role"]
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    content = obj["content"]
    if not isinstance(content, str):
        raise InputError("content must be a string")
    session = obj["session_id"]
    if not isinstance(session, str | int) or not str(session).strip():
        raise InputError("session_id must be a non-empty string")
    for key in ("speaker", "external_id", "user_id"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise InputError(f"{key} must be a string")
    for key in ("session_id", "content", "speaker", "external_id", "user_id"):
        # Named with the line (the store would name its column, and a surrogate raised mid-hash).
        problem = unstorable(obj[key]) if isinstance(obj.get(key), str) else None
        if problem is not None:
            raise InputError(f"{key}: {problem}")
    created = parse_timestamp(obj.get("timestamp"), "timestamp") if "timestamp" in obj else None
    meta = obj.get("meta")
    if meta is not None:
        # What an export wrote with the turn (its date notes, image descriptions, ...): kept, so the
        # turn is not dated afresh (`stamp` leaves a turn with date notes alone).
        meta = dict(check_meta(meta))
    turn = Turn(
        user_id=str(obj.get("user_id") or user_id),
        session_id=str(session),
        role=role,
        content=content,
        speaker=obj.get("speaker"),
        external_id=obj.get("external_id"),
        meta=meta or {},
    )
    if created is not None:
        turn.created_at = created
    return turn


def read_locomo(path: Path, user_prefix: str | None = None) -> list[LocomoSample]:
    """Samples of a LoCoMo file (official `locomo10.json` format): one user per sample.

    speaker_a's turns become role `user`, speaker_b's `assistant`; session date strings become
    timestamps (turns of a session spaced a minute apart, keeping order); `dia_id` is the external
    id; a shared photo's `blip_caption` is appended as an image description.
    """
    try:
        raw = path.read_bytes()
        if raw.startswith(UTF16_BOMS):
            raise utf16_error(path)
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ImportFileError(f"{path}: not valid UTF-8 text") from None
    except RecursionError:
        raise ImportFileError(f"{path}: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})", line=exc.lineno
        ) from None
    if not isinstance(data, list):
        raise ImportFileError(f"{path}: a LoCoMo file is a JSON list of samples")
    samples = []
    for i, sample in enumerate(data):
        if not isinstance(sample, dict) or "conversation" not in sample:
            raise ImportFileError(f"{path}: sample {i} has no 'conversation'")
        sid = str(sample.get("sample_id", f"sample-{i}"))
        user_id = f"{user_prefix}{sid}" if user_prefix else sid
        conv = sample["conversation"]
        if not isinstance(conv, dict):
            raise ImportFileError(f"{path}: sample {sid}: 'conversation' must be an object")
        a, b = conv.get("speaker_a"), conv.get("speaker_b")
        if not a or not b or not isinstance(a, str) or not isinstance(b, str):
            raise ImportFileError(f"{path}: sample {sid} lacks speaker_a/speaker_b")
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            date_key = f"session_{n}_date_time"
            when = parse_timestamp(conv.get(date_key), f"sample {sid} {date_key}")
            session = conv[f"session_{n}"]
            if not isinstance(session, list) or not all(isinstance(t, dict) for t in session):
                raise ImportFileError(f"{path}: sample {sid} session_{n} must be a list of turn objects")
            for j, t in enumerate(session):
                if not isinstance(t.get("text", ""), str) or not isinstance(t.get("dia_id"), str | None):
                    raise ImportFileError(
                        f"{path}: sample {sid} session_{n} turn {j}: text and dia_id must be strings"
                    )
                text = str(t.get("text", ""))
                if t.get("blip_caption"):
                    text = f"{text} [shared a photo: {t['blip_caption']}]"
                speaker = t.get("speaker")
                speaker = speaker if isinstance(speaker, str) else None
                turns.append(
                    Turn(
                        user_id=user_id,
                        session_id=f"session_{n}",
                        role="user" if speaker == a else "assistant",
                        content=text,
                        speaker=speaker,
                        external_id=t.get("dia_id"),
                        created_at=when.replace(second=0) + _minutes(j),
                    )
                )
            n += 1
        qa = sample.get("qa", [])
        if not isinstance(qa, list):
            raise ImportFileError(f"{path}: sample {sid}: 'qa' must be a list")
        samples.append(LocomoSample(sid, a, b, turns, list(qa)))
    return samples


def _minutes(n: int) -> Any:
    from datetime import timedelta

    return timedelta(minutes=n)
