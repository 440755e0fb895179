"""`memsched proactive` (nudges due for a user) and `memsched state` (carried mood, learned routine)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from memsched.cli.common import (
    HomeOption,
    StoreOption,
    app,
    console,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.importers import parse_timestamp


@app.command()
@reports_errors
def proactive(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="Whose nudges."),
    at: str | None = typer.Option(
        None,
        "--at",
        "--now",
        help="As of this time (ISO 8601; without an offset, the user's local time); default now.",
    ),
    timezone: str | None = typer.Option(None, "--timezone", help="IANA timezone; default the user's."),
    upcoming: bool = typer.Option(False, "--upcoming", help="Also list follow-ups not due yet."),
    as_json: bool = typer.Option(False, "--json", help="Print the nudges as JSON."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """The proactive nudges due for a user (follow-ups on what they said was coming, late-night care),
    with their dates. Computes only: nothing is sent."""
    from memsched.memory import Memory
    from memsched.nudges import due_nudges, user_timezone
    from memsched.server.validate import check_timezone

    check_timezone(timezone, "--timezone")
    with Memory(load_config(home=home, db=db), embedders={}) as memory:
        memory.require_user(user)
        # A time without a UTC offset is the user's local time.
        when = parse_timestamp(at, "--at", timezone or user_timezone(memory, user)) if at else None
        found = due_nudges(memory, user, when, timezone=timezone, include_upcoming=upcoming)
    if as_json:
        console.print_json(json.dumps([n.as_dict() for n in found], ensure_ascii=False))
        return
    if not found:
        console.print(f"no nudges due for {user!r}")
        return
    table = Table("kind", "due at", "due", "reason", "suggestion", "turns")
    for n in found:
        table.add_row(
            n.kind,
            n.due_at.isoformat(timespec="minutes"),
            "yes" if n.due else "later",
            n.reason,
            n.suggestion,
            ",".join(str(i) for i in n.source_turn_ids),
        )
    console.print(table)


@app.command()
@reports_errors
def state(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="Whose state."),
    at: str | None = typer.Option(
        None,
        "--at",
        help="Decay the mood to this time (ISO 8601; without an offset, the user's local time);"
        " default the user's last message.",
    ),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """A user's carried mood (as of their last message, or `--at`), learned routine and last activity, as JSON."""
    from memsched.companion import user_state
    from memsched.memory import Memory
    from memsched.nudges import user_timezone

    with Memory(load_config(home=home, db=db), embedders={}) as memory:
        memory.require_user(user)
        when = parse_timestamp(at, "--at", user_timezone(memory, user)) if at else None
        console.print_json(json.dumps(user_state(memory, user, when), ensure_ascii=False))
