"""The user profile: key/value facts with history ("preferred name: 大王 since 2024-10-15, formerly 小王").

A new value supersedes the old one instead of overwriting it, so the history stays queryable and a
forgotten command can hand the key back to the value before it. Every fact records the turn ids it
came from. The profile is rendered into the system prompt of every turn (`Profile.section`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memsched.model import as_utc, utcnow
from memsched.store import Store, Tx

PREFERRED_NAME = "preferred_name"
TIMEZONE = "timezone"

# How keys read in the system prompt; unknown keys read as their name with spaces.
KEY_LABELS: dict[str, str] = {PREFERRED_NAME: "preferred name (call the user this)"}

SECTION_HEADER = "User profile (current facts; they override anything said earlier):"


@dataclass(frozen=True, slots=True)
class Fact:
    """One value a profile key had, from `valid_from` until `superseded_at` (None: still in force)."""

    id: int
    user_id: str
    key: str
    value: str
    valid_from: datetime
    superseded_at: datetime | None = None
    source_turn_ids: tuple[int, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def current(self) -> bool:
        return self.superseded_at is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "value": self.value,
            "valid_from": self.valid_from.isoformat(),
            "superseded_at": self.superseded_at.isoformat() if self.superseded_at else None,
            "source_turn_ids": list(self.source_turn_ids),
            "meta": dict(self.meta),
        }


def _fact(row: dict[str, Any]) -> Fact:
    return Fact(
        id=row["id"],
        user_id=row["user_id"],
        key=row["key"],
        value=row["value"],
        valid_from=datetime.fromtimestamp(row["valid_from"], UTC),
        superseded_at=datetime.fromtimestamp(row["superseded_at"], UTC) if row["superseded_at"] else None,
        source_turn_ids=tuple(row["source_turn_ids"]),
        meta=row["meta"],
    )


class Profile:
    """The profile facts of the users of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def set(
        self,
        user_id: str,
        key: str,
        value: str,
        *,
        at: datetime | None = None,
        source_turn_ids: Sequence[int] = (),
        meta: dict[str, Any] | None = None,
        tx: Tx | None = None,
    ) -> int:
        """Make `value` the current `key` of the user from `at` on; returns the id of the fact in force.

        The previous value is kept as history (superseded at `at`). Setting the value already in
        force only adds `source_turn_ids` to it. With `tx`, the write joins that transaction.
        """
        valid_from = as_utc(at or utcnow()).timestamp()
        now = utcnow().timestamp()
        if tx is not None:
            return self.store.fact_set(
                tx,
                user_id,
                key,
                value,
                valid_from=valid_from,
                source_turn_ids=source_turn_ids,
                meta=meta,
                now=now,
            )
        with self.store.transaction() as own:
            return self.store.fact_set(
                own,
                user_id,
                key,
                value,
                valid_from=valid_from,
                source_turn_ids=source_turn_ids,
                meta=meta,
                now=now,
            )

    def current(self, user_id: str) -> dict[str, Fact]:
        """The facts in force, by key."""
        return {row["key"]: _fact(row) for row in self.store.facts_current(user_id)}

    def get(self, user_id: str, key: str) -> Fact | None:
        """The fact in force for `key`, or None."""
        return self.current(user_id).get(key)

    def history(self, user_id: str, key: str | None = None) -> list[Fact]:
        """Every value of `key` (or of every key) the user has had, oldest first."""
        return [_fact(r) for r in self.store.facts_history(user_id, key)]

    def section(self, user_id: str) -> str:
        """The system-prompt section for the user's current facts, or "" when there are none.

        One line per key: `- preferred name (...): 大王 (since 2024-10-15; formerly 小王)`. Formerly-used
        values are listed so the model knows which old mentions in the history are outdated.
        """
        rows = self.store.facts_history(user_id)
        if not rows:
            return ""
        by_key: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_key.setdefault(row["key"], []).append(row)
        lines = [SECTION_HEADER]
        for key, facts in by_key.items():
            current = [f for f in facts if f["superseded_at"] is None]
            if not current:
                continue
            fact = current[-1]
            since = datetime.fromtimestamp(fact["valid_from"], UTC).strftime("%Y-%m-%d")
            former: list[str] = []
            for old in reversed(facts):
                if old["value"] != fact["value"] and old["value"] not in former:
                    former.append(old["value"])
            replaces = fact["meta"].get("replaces")
            if replaces and replaces != fact["value"] and replaces not in former:
                former.append(replaces)
            note = f"since {since}" + (f"; formerly {', '.join(former[:3])}" if former else "")
            label = KEY_LABELS.get(key, key.replace("_", " "))
            lines.append(f"- {label}: {fact['value']} ({note})")
        return "\n".join(lines) if len(lines) > 1 else ""
