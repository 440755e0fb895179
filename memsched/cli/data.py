"""`memsched import`, `export`, `context` and `search`: conversations in and out, and looking at
them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from memsched.assemble import turn_line
from memsched.cli.common import (
    EmbeddersOption,
    HomeOption,
    StoreOption,
    app,
    console,
    err_console,
    existing_file,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.config import Config
from memsched.errors import ImportFileError, InputError
from memsched.importers import Reimport, detect_format, read_jsonl_lines, read_locomo
from memsched.memory import Memory
from memsched.model import Turn
from memsched.profile import Profile
from memsched.profile_extract import apply_turns
from memsched.server.validate import check_timezone
from memsched.text.timeexpr import stamp, turn_dates

if TYPE_CHECKING:
    from memsched.memory import ContextResult
    from memsched.scheduler import TurnResult


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


@app.command("import")
@reports_errors
def import_(
    file: Path = typer.Argument(..., help="A JSONL file or a LoCoMo JSON file."),
    user: str | None = typer.Option(
        None,
        "--user",
        "-u",
        callback=no_blank_id,
        help="User id (JSONL: required; LoCoMo: prefix for each sample's user id).",
    ),
    fmt: str = typer.Option("auto", "--format", help="auto, jsonl, locomo or export."),
    no_index: bool = typer.Option(False, "--no-index", help="Store only; embed later (on first use)."),
    timezone: str | None = typer.Option(
        None,
        "--timezone",
        help="The user's IANA timezone: relative time in turns is resolved in it (default UTC).",
    ),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Import a conversation, or a user's whole export (`memsched export`). Re-importing the same
    JSONL file adds nothing twice; an export is restored only into a user with no data."""
    from memsched.export import export_header

    existing_file(file)
    if fmt in ("auto", "export") and export_header(file) is not None:
        fmt = "export"
    elif fmt == "export":
        raise InputError(f"{file}: not a memsched export (its first line is no export header)")
    fmt = detect_format(file) if fmt == "auto" else fmt
    if fmt not in ("jsonl", "locomo", "export"):
        raise InputError(f"--format must be auto, jsonl, locomo or export, got {fmt!r}")
    check_timezone(timezone, "--timezone")
    cfg = load_config(home=home, db=db, embedders=embedders)
    if fmt == "export":
        if not user:
            raise InputError("--user is required to import an export")
        _restore(file, user, cfg, index=not no_index)
        return
    with Memory(cfg) as mem, _progress() as progress:
        added: dict[str, int] = {}
        read: dict[str, int] = {}
        facts: dict[str, int] = {}
        profile = Profile(mem.store)

        def learn(turns: list[Turn]) -> None:
            # The rule facts a live turn would have written (oldest first, dated by their turns).
            for t in turns:
                facts.setdefault(t.user_id, 0)
            for uid in {t.user_id for t in turns}:
                facts[uid] += len(apply_turns(profile, [t for t in turns if t.user_id == uid]))

        if fmt == "jsonl":
            if not user:
                raise InputError("--user is required to import a JSONL file")
            task = progress.add_task(f"importing {file.name}", total=None)
            reimport = Reimport(mem.store)
            try:
                for lines in read_jsonl_lines(file, user):
                    for t, _ in lines:
                        read[t.user_id] = read.get(t.user_id, 0) + 1
                        added.setdefault(t.user_id, 0)
                    batch = reimport.new_turns(lines)
                    stamp(batch, timezone)
                    stored = mem.store.add_turns(batch, skip_duplicates=True)
                    for t in stored:
                        added[t.user_id] += 1
                    learn(stored)
                    progress.advance(task, len(lines))
            except ImportFileError as exc:
                kept = sum(added.values())
                raise ImportFileError(
                    f"{file}: {exc} ({kept} turns before it were imported and kept)"
                ) from None
        else:
            samples = read_locomo(file)
            for sample in samples:
                uid = (
                    sample.sample_id
                    if not user
                    else (user if len(samples) == 1 else f"{user}-{sample.sample_id}")
                )
                for t in sample.turns:
                    t.user_id = uid
                read[uid] = len(sample.turns)
                stamp(sample.turns, timezone)
                stored = mem.store.add_turns(sample.turns, skip_duplicates=True)
                added[uid] = len(stored)
                learn(stored)
        if not no_index:
            for uid in [u for u, n in added.items() if n]:
                total = mem.store.turn_count(uid) * len(mem.embedders)
                task = progress.add_task(f"embedding {uid}", total=total)

                def advance(n: int, task: TaskID = task) -> None:
                    progress.advance(task, n)

                mem.index(uid, progress=advance)
    for uid, n in added.items():
        already = read.get(uid, n) - n
        note = f" ({already} already stored)" if already else ""
        if facts.get(uid):
            note += f", {facts[uid]} profile facts"
        console.print(f"imported {n} new turns for user [bold]{uid}[/]{note}")
    if not added:
        console.print("nothing to import")


def _restore(file: Path, user: str, cfg: Config, *, index: bool) -> None:
    """`memsched import` of a whole export: turns with meta, profile facts with history, mood and
    routine into a user with no data; what memsched makes again is named, not written."""
    from memsched.export import restore

    with Memory(cfg) as mem:
        done = restore(mem.store, file, user)
        if index and done.written["turn"]:
            with _progress() as progress:
                task = progress.add_task(f"embedding {user}", total=done.written["turn"] * len(mem.embedders))
                mem.index(user, progress=lambda n: progress.advance(task, n))
    w = done.written
    console.print(
        f"imported the export of {user!r}: {w['turn']} turns, {w['fact']} profile facts"
        f" (their history included){', the mood' if w['mood'] else ''}{', the routine' if w['routine'] else ''}",
        highlight=False,
        markup=False,
    )
    skipped = done.skipped
    if skipped:
        named = ", ".join(
            f"{n} {kind.replace('_', ' ')}{'s' if n != 1 else ''}" for kind, n in sorted(skipped.items())
        )
        console.print(
            f"not restored, made again by memsched: {named} (bookmarks: `memsched bookmarks --user {user}"
            " --generate`; summaries when a session's context next needs one)",
            highlight=False,
            markup=False,
        )


@app.command("export")
@reports_errors
def export(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="Whose data."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Write the export here (default: standard output)."
    ),
    turns_only: bool = typer.Option(
        False,
        "--turns-only",
        help="Only the turns, as export format version 1 (the JSONL any memsched import reads).",
    ),
    profile: Path | None = typer.Option(
        None, "--profile", help="Also write the user's current profile facts here, as JSON."
    ),
    tenant: str | None = typer.Option(
        None, "--tenant", help="The user's tenant, when the service uses API keys."
    ),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Write everything memsched holds about a user, as ndjson (export format version 2, one record
    per line with a `type`): a header, the turns in the order stored, every profile fact with its
    history, session summaries, bookmarks, session state, mood, routine and traces. `memsched import`
    of the file into a user with no data restores the turns and the profile. Reads only: a home
    without a database is left without one."""
    from collections import Counter

    from memsched.cli.privacy import _internal
    from memsched.export import export_pages
    from memsched.store import open_store

    cfg = load_config(home=home, db=db)
    uid = _internal(user, tenant)
    if not cfg.database_url and not cfg.db_path.exists():
        # Opening the store would create (and migrate) an empty database: an export writes nothing.
        raise InputError(f"unknown user {user!r}: there is no database at {cfg.db_path}")
    store = open_store(cfg)
    counts: Counter[str] = Counter()
    try:
        if not store.has_user(uid):
            raise InputError(f"unknown user {user!r}: it has no stored turns to export")
        pages = export_pages(store, uid, user=user, turns_only=turns_only, counts=counts)
        if out is None:
            # UTF-8 bytes whatever the terminal's encoding: `> file` gives an importable file.
            binary = sys.stdout.buffer
            for chunk in pages:
                binary.write(chunk.encode("utf-8"))
            binary.flush()
        else:
            with out.open("w", encoding="utf-8", newline="\n") as fh:
                for chunk in pages:
                    fh.write(chunk)
        if profile is not None:
            facts = Profile(store).facts(uid, current=True)
            body = {"user": user, "facts": [f.as_dict() for f in facts]}
            profile.write_text(json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    finally:
        store.close()
    where = f" to {out}" if out is not None else ""
    parts = [f"{counts['turn']} turns"]
    for kind, name in (
        ("fact", "profile facts"),
        ("summary", "summaries"),
        ("bookmark", "bookmarks"),
        ("session_state", "session states"),
        ("trace", "traces"),
    ):
        if counts[kind]:
            parts.append(f"{counts[kind]} {name}")
    parts += [f"the {kind}" for kind in ("mood", "routine") if counts[kind]]
    said = f"exported {', '.join(parts)} of {user!r}{where}"
    err_console.print(said, highlight=False, markup=False)


@app.command()
@reports_errors
def context(
    message: str = typer.Argument(..., help="The new message."),
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="User id."),
    session: str | None = typer.Option(
        None, "--session", "-s", callback=no_blank_id, help="Current session id (for the recent window)."
    ),
    budget: int | None = typer.Option(None, "--budget", "-b", help="Token budget \\[env: MEMSCHED_BUDGET]."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON with messages and trace."),
    record: bool = typer.Option(False, "--record", help="Store the message as a turn of --session."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Print the context memsched would send to the LLM for MESSAGE: the user's profile and local
    time in the system prompt, as POST /v1/context gives them. With --record the message is recorded
    as the service records one (commands such as a rename applied, profile facts learned, the
    conversation strategy chosen); its background jobs run in memsched serve or memsched worker."""
    if record and not session:
        raise InputError("--record needs --session: a recorded turn belongs to a session")
    from memsched.llm.client import client_from_config
    from memsched.scheduler import Scheduler

    cfg = load_config(home=home, db=db, embedders=embedders, budget=budget)
    with Memory(cfg) as mem:
        if not record:  # a recorded message may be the user's first
            mem.require_user(user)
        # The service's scheduler, so the context is the one `POST /v1/context` (and the proxy) build;
        # `Memory.context` alone has no profile, clock or strategy, and records without learning.
        summary_llm = client_from_config(cfg, "helper")
        with Scheduler(mem, summary_llm=summary_llm, start_workers=False) as scheduler:
            if record:
                assert session is not None
                result: TurnResult | ContextResult = scheduler.prepare(user, session, message)
            else:
                result = scheduler.preview(user, message, session_id=session)
    if as_json:
        console.print_json(
            json.dumps({"messages": result.messages, "trace": result.trace}, ensure_ascii=False)
        )
        return
    for m in result.messages:
        console.rule(f"[bold]{m['role']}[/]")
        console.print(m["content"], highlight=False, markup=False)
    t = result.trace["tokens"]
    console.rule()
    console.print(
        f"{t['total']}/{t['budget']} tokens: memory {t['memory']}, recent {t['recent']}, "
        f"{len(result.trace['selected'])} recalled turns, {result.trace['timings_ms']['total']:.1f} ms"
    )


@app.command()
@reports_errors
def search(
    query: str = typer.Argument(..., help="What to look for."),
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="User id."),
    limit: int = typer.Option(10, "--limit", "-n", help="How many hits."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Ranked turns of a user for QUERY, with the score of every retrieval layer."""
    cfg = load_config(home=home, db=db, embedders=embedders)
    with Memory(cfg) as mem:
        mem.require_user(user)
        hits = mem.search(user, query, limit=limit)
    if as_json:
        rows = [
            {
                "turn_id": h.turn.id,
                "session_id": h.turn.session_id,
                "created_at": h.turn.created_at.isoformat(),
                "speaker": h.turn.label,
                "content": h.turn.content,
                "dates": turn_dates(h.turn.meta),
                "score": h.score,
                "scores": h.candidate.scores,
                "ranks": h.candidate.ranks,
            }
            for h in hits
        ]
        console.print_json(json.dumps(rows, ensure_ascii=False))
        return
    table = Table(title=f"{query!r} for {user}", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("fused", justify="right")
    table.add_column("layers")
    table.add_column("when")
    table.add_column("turn", overflow="fold")
    for i, h in enumerate(hits, 1):
        layers = ", ".join(
            f"{k} {v:.3f} (#{h.candidate.ranks.get(k)})" for k, v in h.candidate.scores.items()
        )
        table.add_row(
            str(i),
            f"{h.score:.4f}",
            layers,
            f"{h.turn.created_at:%Y-%m-%d} {h.turn.session_id}",
            turn_line(h.turn),
        )
    console.print(table)
