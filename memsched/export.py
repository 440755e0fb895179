"""A user's data out of memsched and back in: the export (data portability) and its restore.

The export is memsched export format version 2, one JSON object per line (ndjson), each with a
`type` (docs/design.md, "Export next to forget"):

- `header` first: `format` "memsched-export", `version`, `user` (the name exported), `exported_at`.
- `turn`, one per turn in the order stored (id order): `ref` (the turn's number in this file,
  1, 2, ...: what the other records name turns by), then the fields `memsched import` has always
  read (session_id, role, speaker, content, timestamp, external_id) and `meta` when the turn has
  any. Without `type` and `ref` such a line is a line of version 1 (turns only).
- `fact`, every profile fact, superseded and retracted ones included: `ref`, key, value,
  valid_from, superseded_at (null while in force), superseded_by (the `ref` of the fact that
  replaced it; null when retracted or in force), source_turns, meta, created_at.
- `summary` (session summaries), `bookmark` (keyword bookmarks of pages), `session_state`,
  `mood`, `routine` and `trace` records: the rest of what the store holds about the user.

Times are ISO 8601 UTC text; lineage names turns by their `ref` (a turn forgotten since is left out).
Read page by page: a long history is never held in memory at once (only a map of turn id -> ref).

`restore` reads a version 2 file (or a request body: POST /v1/users/{user}/import) into a user with
no data: turns with their meta and profile facts with their history, mood and routine; summaries,
bookmarks, session state and traces are derived data that memsched makes again (or that only described
the old home) and are not written back. Given a job queue, it queues the work that makes them again
(`rebuild_jobs`) in the same transaction.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsched.errors import ImportFileError, InputError, UserHasDataError
from memsched.importers import check_meta, json_lines, jsonl_turn
from memsched.model import Turn, unstorable

if TYPE_CHECKING:
    from memsched.jobs.queue import Job, JobQueue
    from memsched.store import Store

PAGE = 500
FORMAT = "memsched-export"
VERSION = 2
# Record types of version 2, in the order they are written.
TYPES = ("header", "turn", "fact", "summary", "bookmark", "session_state", "mood", "routine", "trace")
# What `restore` writes back; the other types are made again by memsched or described the old home.
RESTORED = ("turn", "fact", "mood", "routine")


def turn_record(turn: Turn) -> dict[str, Any]:
    """The JSONL object of one turn (without the user id: the importer names the user)."""
    out: dict[str, Any] = {
        "session_id": turn.session_id,
        "role": turn.role,
        "speaker": turn.speaker,
        "content": turn.content,
        "timestamp": turn.created_at.isoformat(),
        "external_id": turn.external_id,
    }
    if turn.meta:
        out["meta"] = turn.meta
    return out


def _iso(value: float | datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return datetime.fromtimestamp(float(value), UTC).isoformat()


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _refs(ids: list[int], refs: dict[int, int]) -> list[int]:
    """Store turn ids as the file's turn refs (a turn no longer stored is left out)."""
    return [refs[i] for i in ids if i in refs]


def export_pages(
    store: Store,
    user_id: str,
    page: int = PAGE,
    *,
    user: str | None = None,
    turns_only: bool = False,
    counts: Counter[str] | None = None,
) -> Iterator[str]:
    """The user's export, one string of up to `page` lines (each ending in a newline) at a time: what
    a streamed HTTP response sends as one chunk. `user` is the name the header gives (default the id).
    With `turns_only`, version 1: the turn lines alone, without `type` and `ref`. `counts` (when
    given) is told how many records of each type were written."""
    counts = Counter() if counts is None else counts
    if not turns_only:
        header = {
            "type": "header",
            "format": FORMAT,
            "version": VERSION,
            "user": user if user is not None else user_id,
            "exported_at": _iso(datetime.now(UTC)),
        }
        counts["header"] += 1
        yield _line(header)
    refs: dict[int, int] = {}
    after = 0
    while True:
        turns = store.turns_by_id(user_id, after, page)
        lines = []
        for t in turns:
            if turns_only:
                lines.append(_line(turn_record(t)))
                continue
            refs[t.id or 0] = len(refs) + 1
            lines.append(_line({"type": "turn", "ref": refs[t.id or 0], **turn_record(t)}))
        counts["turn"] += len(lines)
        if lines:
            yield "".join(lines)
        if len(turns) < page:
            break
        after = turns[-1].id or after
    if turns_only:
        return
    yield from _chunks(_records(store, user_id, refs), page, counts)


def _chunks(records: Iterator[dict[str, Any]], page: int, counts: Counter[str]) -> Iterator[str]:
    lines: list[str] = []
    for rec in records:
        counts[rec["type"]] += 1
        lines.append(_line(rec))
        if len(lines) >= page:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)


def _records(store: Store, user_id: str, refs: dict[int, int]) -> Iterator[dict[str, Any]]:
    """Everything but the turns, in the order of `TYPES`."""
    facts = store.export_facts(user_id)
    fact_refs = {f["id"]: n for n, f in enumerate(facts, start=1)}
    for n, f in enumerate(facts, start=1):
        yield {
            "type": "fact",
            "ref": n,
            "key": f["key"],
            "value": f["value"],
            "valid_from": _iso(f["valid_from"]),
            "superseded_at": _iso(f["superseded_at"]),
            "superseded_by": fact_refs.get(f["superseded_by"]) if f["superseded_by"] is not None else None,
            "source_turns": _refs(f["source_turn_ids"], refs),
            "meta": f["meta"],
            "created_at": _iso(f["created_at"]),
        }
    for s in store.export_summaries(user_id):
        yield {
            "type": "summary",
            "session_id": s["session_id"],
            "first_seq": s["first_seq"],
            "last_seq": s["last_seq"],
            "kind": s["kind"],
            "method": s["method"],
            "content": s["content"],
            "tokens": s["tokens"],
            "source_tokens": s["source_tokens"],
            "source_turns": _refs(s["source_turn_ids"], refs),
            "created_at": _iso(s["created_at"]),
        }
    for b in store.iter_bookmarks(user_id):
        yield {
            "type": "bookmark",
            "session_id": b.session_id,
            "keywords": b.keywords,
            "aliases": b.aliases,
            "summary": b.summary,
            "kind": b.kind,
            "importance": b.importance,
            "source": b.source,
            "turns": _refs(b.turn_ids, refs),
            "first_at": _iso(b.first_at),
            "last_at": _iso(b.last_at),
            "created_at": _iso(b.created_at),
            "updated_at": _iso(b.updated_at),
        }
    for st in store.export_session_states(user_id):
        yield {
            "type": "session_state",
            "session_id": st["session_id"],
            "data": st["data"],
            "updated_at": _iso(st["updated_at"]),
        }
    mood = store.mood_get(user_id)
    if mood is not None:
        yield {
            "type": "mood",
            "label": mood["label"],
            "intensity": mood["intensity"],
            "cause_turns": _refs(mood["cause_turn_ids"], refs),
            "updated_at": _iso(mood["updated_at"]),
            "meta": mood["meta"],
        }
    routine = store.routine_get(user_id)
    if routine is not None:
        yield {
            "type": "routine",
            **{k: routine[k] for k in ("sleep_minute", "wake_minute", "confidence", "timezone", "days")},
            "source_turns": _refs(routine["source_turn_ids"], refs),
            "updated_at": _iso(routine["updated_at"]),
            "meta": routine["meta"],
        }
    after: tuple[float, str] | None = None
    while batch := store.export_traces(user_id, after, PAGE):
        for tr in batch:
            yield {
                "type": "trace",
                "id": tr["id"],
                "session_id": tr["session_id"],
                "created_at": _iso(tr["created_at"]),
                "turns": _refs(tr["turn_ids"], refs),
                "data": tr["data"],
            }
        after = (batch[-1]["created_at"], batch[-1]["id"])
        if len(batch) < PAGE:
            break


# -- restore ---------------------------------------------------------------------------------------


def export_header(path: Path) -> dict[str, Any] | None:
    """The header of a version 2 (or later) export file, or None when `path` is another file (a
    version 1 turns-only export, or any memsched JSONL)."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                obj = json.loads(raw.decode("utf-8-sig"))
                if isinstance(obj, dict) and obj.get("type") == "header" and obj.get("format") == FORMAT:
                    return obj
                return None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


@dataclass(slots=True)
class Restored:
    """What `restore` wrote (per record type), what it read but left to be made again, the export's
    header, and the ids of the jobs it queued (per kind) to make them again."""

    written: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    header: dict[str, Any] = field(default_factory=dict)
    jobs: dict[str, list[int]] = field(default_factory=dict)


def _time(obj: dict[str, Any], key: str, *, optional: bool = False) -> float | None:
    value = obj.get(key)
    if value is None:
        if optional:
            return None
        raise InputError(f"{key} is missing")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    raise InputError(f"{key}: not an ISO 8601 time: {value!r}")


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a string")
    problem = unstorable(value)
    if problem is not None:
        raise InputError(f"{key}: {problem}")
    return value


def _ints(obj: dict[str, Any], key: str) -> list[int]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise InputError(f"{key} must be a list of turn refs (integers)")
    return value


def _read(source: Path | bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, obj in json_lines(source):
        if not isinstance(obj, dict):
            raise ImportFileError("expected a JSON object", line=lineno)
        yield lineno, obj


def _turn(obj: dict[str, Any], user_id: str) -> Turn:
    if "timestamp" not in obj:
        raise InputError("timestamp is missing")
    return jsonl_turn({k: v for k, v in obj.items() if k != "user_id"}, user_id)


def _fact(obj: dict[str, Any]) -> dict[str, Any]:
    by = obj.get("superseded_by")
    if by is not None and (not isinstance(by, int) or isinstance(by, bool)):
        raise InputError("superseded_by must be a fact ref (an integer) or null")
    ref = obj.get("ref")
    if not isinstance(ref, int) or isinstance(ref, bool):
        raise InputError("ref must be an integer")
    return {
        "ref": ref,
        "key": _text(obj, "key"),
        "value": _text(obj, "value"),
        "valid_from": _time(obj, "valid_from"),
        "superseded_at": _time(obj, "superseded_at", optional=True),
        "superseded_by": by,
        "source_turns": _ints(obj, "source_turns"),
        "meta": check_meta(obj.get("meta", {})),
        "created_at": _time(obj, "created_at", optional=True),
    }


def _number(obj: dict[str, Any], key: str, *, optional: bool = False, whole: bool = False) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    kinds = int if whole else int | float
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise InputError(f"{key} must be {'an integer' if whole else 'a number'}")
    return value


def _companion(obj: dict[str, Any]) -> dict[str, Any]:
    """The mood or routine row of a record, its turns still named by ref."""
    row: dict[str, Any] = {"updated_at": _time(obj, "updated_at"), "meta": check_meta(obj.get("meta", {}))}
    if obj["type"] == "mood":
        row.update(label=_text(obj, "label"), intensity=_number(obj, "intensity"))
        row["cause_turn_ids"] = _ints(obj, "cause_turns")
        return row
    for key in ("sleep_minute", "wake_minute"):
        row[key] = _number(obj, key, optional=True, whole=True)
    row["confidence"] = _number(obj, "confidence")
    row["days"] = _number(obj, "days", whole=True)
    row["timezone"] = _text(obj, "timezone") if obj.get("timezone") is not None else None
    row["source_turn_ids"] = _ints(obj, "source_turns")
    return row


def _check(source: Path | bytes, user_id: str) -> tuple[dict[str, Any], Counter[str]]:
    """Read the whole file (or body) once, writing nothing: every line must be a record `restore` can take.
    Returns the header and how many records of each type the file holds."""
    header: dict[str, Any] | None = None
    seen: Counter[str] = Counter()
    fact_refs: set[int] = set()
    for lineno, obj in _read(source):
        try:
            kind = obj.get("type", "turn")
            if header is None:
                if kind != "header" or obj.get("format") != FORMAT:
                    raise InputError(f"not a memsched export: the first line is no {FORMAT!r} header")
                version = obj.get("version")
                if not isinstance(version, int) or isinstance(version, bool) or version < 2:
                    raise InputError(f"the header's version must be an integer from 2, got {version!r}")
                if version > VERSION:
                    raise InputError(
                        f"the file is export format version {version}, written by a newer memsched;"
                        f" this one reads versions up to {VERSION}: upgrade memsched to import it"
                    )
                header = obj
            elif kind == "header":
                raise InputError("a second header: the file holds more than one export")
            elif kind == "turn":
                _turn(obj, user_id)
            elif kind == "fact":
                fact = _fact(obj)
                if fact["ref"] in fact_refs:
                    raise InputError(f"fact ref {fact['ref']} appears twice")
                fact_refs.add(fact["ref"])
            elif kind in ("mood", "routine"):
                _companion(obj)
            elif kind not in TYPES:
                raise InputError(f"unknown record type {kind!r} (version {VERSION} has {', '.join(TYPES)})")
        except InputError as exc:
            raise ImportFileError(f"{exc} (nothing was imported)", line=lineno) from None
        seen[kind] += 1
    if header is None:
        raise ImportFileError(
            f"{source}: the file is empty" if isinstance(source, Path) else "the body is empty"
        )
    return header, seen


def restore(
    store: Store,
    source: Path | bytes,
    user_id: str,
    *,
    user: str | None = None,
    queue: JobQueue | None = None,
) -> Restored:
    """Import a version 2 export (a file, or the bytes of a request body) into `user_id`, which must
    hold nothing yet: in one transaction, the turns (with their meta, times, sessions and order), every
    profile fact with its history, the mood and the routine, their lineage mapped to the new turn ids.
    The user named in the file's header is not used: the caller names the user. Summaries, bookmarks,
    session state and traces are counted in `skipped`: memsched makes them again; with `queue`, the
    jobs that do (`rebuild_jobs`) are queued in the same transaction.

    Every line is checked before anything is written: a bad one is an `ImportFileError` naming its
    line, and nothing is stored. Refuses (`UserHasDataError`, naming the user) a user that already has
    data: merging two histories of one person would duplicate their turns and give a profile key two
    competing histories."""
    name = user if user is not None else user_id
    header, _ = _check(source, user_id)
    if store.has_user(user_id) or store.export_facts(user_id):
        n = store.turn_count(user_id)
        raise UserHasDataError(
            f"user {name!r} already has data in this home ({n} turns): an export is restored only into"
            f" a user with none, so nothing is duplicated or mixed; import it under another --user, or"
            f" delete this one first (`memsched forget --user {name} --all`)",
            name,
            n,
        )
    out = Restored(header=header)
    jobs: list[Job] = []
    turn_ids: dict[int, int] = {}  # the file's turn ref -> the new turn id
    facts: list[dict[str, Any]] = []
    companion: list[dict[str, Any]] = []
    with store.transaction() as tx:
        batch: list[tuple[int, Turn]] = []
        claimed = False

        def claim(at: float) -> None:
            # The check above is a read; two imports of one user at once (a client's retry while the
            # first still runs) both pass it. The user's row, made here before anything else is
            # written, lets exactly one of them on (the other rolls back, nothing duplicated).
            nonlocal claimed
            if not claimed and not store.claim_user(tx, user_id, at):
                raise UserHasDataError(
                    f"user {name!r} was created while this import ran (another import or a turn):"
                    " nothing was imported",
                    name,
                    store.turn_count(user_id),
                )
            claimed = True

        def flush() -> None:
            claim(batch[0][1].created_at.timestamp())  # the first turn's time is the user's
            stored = store.insert_turns(tx, [t for _, t in batch])
            for (ref, _), t in zip(batch, stored, strict=True):
                turn_ids[ref] = t.id or 0
            if queue is not None:
                jobs.extend(rebuild_jobs(stored, store.page_size))
            out.written["turn"] += len(stored)
            batch.clear()

        for _, obj in _read(source):
            kind = obj.get("type", "turn")
            if kind == "turn":
                ref = obj.get("ref")
                batch.append(
                    (ref if isinstance(ref, int) else -len(turn_ids) - len(batch) - 1, _turn(obj, user_id))
                )
                if len(batch) >= PAGE:
                    flush()
            elif kind == "fact":
                facts.append(_fact(obj))
            elif kind in ("mood", "routine"):
                companion.append(obj)
            elif kind != "header":
                out.skipped[kind] += 1
        if batch:
            flush()
        claim(time.time())  # an export of facts alone
        _restore_facts(store, tx, user_id, facts, turn_ids)
        out.written["fact"] += len(facts)
        for obj in companion:
            _restore_companion(store, tx, user_id, obj, turn_ids)
            out.written[obj["type"]] += 1
        if queue is not None and out.written["turn"]:
            from memsched.jobs.queue import Job

            # The vectors first (search finds the turns once it has run), then the pages' bookmarks.
            todo: dict[tuple[str, str | None], Job] = {("embed", None): Job(kind="embed", user_id=user_id)}
            for job in jobs:
                todo.setdefault((job.kind, job.dedupe_key), job)
            queued = list(todo.values())
            for job, job_id in zip(queued, queue.enqueue(queued, tx=tx), strict=True):
                out.jobs.setdefault(job.kind, []).append(job_id)
    return out


def rebuild_jobs(turns: list[Turn], page_size: int) -> list[Job]:
    """The jobs that make again what a restore does not write, for these restored turns: a bookmark
    job for each page they complete and (once per user) the bookmark tidy-up, as a live turn queues
    them. Not the page's profile extraction: the export's facts, history included, are restored as
    they were. Summaries are made when a session's context next needs one."""
    from memsched.scheduler import page_jobs

    return [j for j in page_jobs(turns, page_size) if j.kind != "profile_extract"]


def _restore_facts(
    store: Store, tx: Any, user_id: str, facts: list[dict[str, Any]], turn_ids: dict[int, int]
) -> None:
    """Insert the facts in the file's order (their old id order), then end the superseded ones at
    their time, linked to their replacement's new row (a replacement not in the file: unlinked)."""
    new_ids: dict[int, int] = {}
    for f in facts:
        new_ids[f["ref"]] = store.fact_insert(
            tx,
            user_id,
            f["key"],
            f["value"],
            valid_from=f["valid_from"],
            source_turn_ids=[turn_ids[r] for r in f["source_turns"] if r in turn_ids],
            meta=f["meta"],
            now=f["created_at"] if f["created_at"] is not None else f["valid_from"],
        )
    for f in facts:
        if f["superseded_at"] is not None:
            by = new_ids.get(f["superseded_by"]) if f["superseded_by"] is not None else None
            store.fact_supersede(tx, user_id, [new_ids[f["ref"]]], at=f["superseded_at"], by=by)


def _restore_companion(
    store: Store, tx: Any, user_id: str, obj: dict[str, Any], turn_ids: dict[int, int]
) -> None:
    row = _companion(obj)
    lineage = "cause_turn_ids" if obj["type"] == "mood" else "source_turn_ids"
    row[lineage] = [turn_ids[r] for r in row[lineage] if r in turn_ids]
    if obj["type"] == "mood":
        store.mood_put(tx, user_id, row)
    else:
        store.routine_put(tx, user_id, row)
