"""`memsched forget` (hard delete with everything derived) and `memsched keys` (tenants' API keys)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from memsched.auth import DEFAULT_TENANT, check_tenant, new_key
from memsched.cli.common import (
    HomeOption,
    StoreOption,
    app,
    console,
    err_console,
    fail,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.errors import InputError
from memsched.model import utcnow

keys_app = typer.Typer(name="keys", help="API keys of the HTTP service, per tenant.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def _internal(user: str, tenant: str | None) -> str:
    if tenant is None or tenant == DEFAULT_TENANT:
        return user
    return f"{check_tenant(tenant)}/{user}"


@app.command()
@reports_errors
def forget(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="Whose data."),
    session: str | None = typer.Option(
        None,
        "--session",
        "-s",
        callback=no_blank_id,
        help="Only this session (all of it, or with --last/--turn).",
    ),
    turn: list[int] = typer.Option([], "--turn", help="A turn id (repeatable)."),
    last: int | None = typer.Option(
        None, "--last", help="The last N turns (of the session, or of the user)."
    ),
    everything: bool = typer.Option(False, "--all", help="Everything of the user."),
    topic: str | None = typer.Option(
        None,
        "--topic",
        help="Every turn about a topic, as the conversation command does (its variants, the other names"
        " the user's bookmarks give it, names put right after it: SECURITY.md).",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="With --topic: list the turns that would be deleted, and why; delete nothing.",
    ),
    tenant: str | None = typer.Option(
        None, "--tenant", help="The user's tenant, when the service uses API keys."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was deleted as JSON."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Hard-delete a user's turns, a session, or the whole user, with everything made from them
    (index rows, vectors, bookmarks, summaries, facts, traces, jobs), and purge their bytes (SQLite; on
    PostgreSQL a VACUUM, whose freed space keeps old bytes until reused: docs/deploy.md)."""
    from memsched.forget import forget as do_forget
    from memsched.memory import Memory

    cfg = load_config(home=home, db=db)
    uid = _internal(user, tenant)
    with Memory(cfg, embedders={}) as memory:
        memory.require_user(uid)
        # A mistyped session or turn id is an error (as the HTTP deletes' 404), not "forgot 0 turns".
        store = memory.store
        if session is not None and not any(s.id == session for s in store.sessions(uid)):
            raise InputError(f"user {user!r} has no session {session!r}")
        if turn:
            found = {t.id: t.session_id for t in store.get_turns(uid, turn)}
            missing = [i for i in turn if i not in found or (session is not None and found[i] != session)]
            if missing:
                where = f" in session {session!r}" if session is not None else ""
                raise InputError(f"user {user!r} has no turn {', '.join(map(str, missing))}{where}")
        if dry_run and topic is None:
            raise InputError("--dry-run previews a --topic forget; name the topic")
        if topic is not None:
            from memsched.commands import match_topic

            if turn or last is not None or everything:
                raise InputError(
                    "forget one thing at a time: a topic, some turns, the last N turns, or --all"
                )
            if not topic.strip():
                raise InputError("--topic is empty: name the topic to forget")
            match = match_topic(store, uid, topic.strip())
            about = [
                t for t in store.get_turns(uid, match.turn_ids) if session is None or t.session_id == session
            ]
            if dry_run:
                _print_topic_preview(
                    user, match.terms, match.via, about, match.refers_back, match.found_by, as_json=as_json
                )
                return
            if not about:
                raise InputError(f"no turn of user {user!r} is about {topic.strip()!r}")
            turn = [t.id for t in about if t.id is not None]
        out = do_forget(memory, uid, session_id=session, turn_ids=turn, last=last, everything=everything)
    if as_json:
        console.print_json(json.dumps(out.as_dict()))
        return
    console.print(
        f"forgot {len(out.turn_ids)} turns of {user!r}"
        + (f" in {', '.join(out.sessions)}" if out.sessions else "")
        + f"; {sum(out.rows.values())} rows in all; WAL truncated: {out.purge.get('wal_truncated', '-')}"
    )


def _print_topic_preview(
    user: str,
    terms: list[str],
    via: dict[str, str],
    turns: list[Any],
    refers_back: dict[int, int],
    found_by: dict[int, str],
    *,
    as_json: bool,
) -> None:
    """What `forget --topic --dry-run` would delete: the words searched for and the turns."""
    rows = [
        {
            "id": t.id,
            "session_id": t.session_id,
            "seq": t.seq,
            "role": t.role,
            "content": t.content,
            "refers_back_to": refers_back.get(t.id),
            "found_by": found_by.get(t.id),
        }
        for t in turns
    ]
    if as_json:
        console.print_json(json.dumps({"user": user, "terms": terms, "via": via, "turns": rows}))
        return
    console.print(f"searched for: {', '.join(terms)}", markup=False)
    for word, why in via.items():
        console.print(f"  {word}: {why}", markup=False)
    console.print(f"would forget {len(rows)} turns of {user!r} (dry run: nothing deleted)", markup=False)
    for r in rows:
        back = f" (refers back to [{r['refers_back_to']}])" if r["refers_back_to"] is not None else ""
        back += f" ({r['found_by']})" if r["found_by"] else ""
        console.print(
            f"  [{r['id']}] {r['session_id']}#{r['seq']} {r['role']}: {r['content']}{back}", markup=False
        )


@keys_app.command("add")
@reports_errors
def keys_add(
    tenant: str = typer.Argument(..., help="The tenant the key belongs to (its users' namespace)."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Create an API key for TENANT. The key is printed once: only a salted hash of it is stored."""
    from memsched.store import open_store

    store = open_store(load_config(home=home, db=db))
    try:
        key = new_key(store, tenant)
    finally:
        store.close()
    err_console.print(f"API key for tenant {tenant!r} (shown once; store it now):")
    print(key)


@keys_app.command("list")
@reports_errors
def keys_list(
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's keys."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """The stored keys by public id (never the secret)."""
    from memsched.store import open_store

    store = open_store(load_config(home=home, db=db))
    try:
        rows = store.keys_list(tenant)
    finally:
        store.close()
    table = Table("id", "tenant", "created", "revoked")
    for r in rows:
        table.add_row(
            f"msk-{r['key_id']}",
            str(r["tenant"]),
            datetime.fromtimestamp(r["created_at"], UTC).isoformat(timespec="seconds"),
            "yes" if r["revoked_at"] else "",
        )
    console.print(table)


@keys_app.command("revoke")
@reports_errors
def keys_revoke(
    key_id: str = typer.Argument(..., help="The key's public id, `msk-<id>` (as `keys list` shows)."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
) -> None:
    """Revoke a key: requests with it get 401 from then on."""
    from memsched.store import open_store

    store = open_store(load_config(home=home, db=db))
    try:
        ok = store.key_revoke(key_id.removeprefix("msk-"), now=utcnow().timestamp())
    finally:
        store.close()
    if not ok:
        fail(f"no active key {key_id!r}")
    console.print(f"revoked {key_id}")
