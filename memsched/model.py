"""The values memsched passes around: plain dataclasses, no behaviour beyond small helpers."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "system")


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(ts: datetime) -> datetime:
    """An aware UTC timestamp; naive values are taken to be UTC already."""
    if ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


# A UTF-16 surrogate on its own: JSON can escape one ("\ud83d", a string cut in the middle of an emoji
# by a client that counts UTF-16 units), Python decodes it, and no UTF-8 text can hold it.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored, or None: a NUL character (PostgreSQL's text cannot hold one), or
    an unpaired UTF-16 surrogate (no UTF-8 text can). Said after the field's name in errors."""
    nul = text.find("\x00")
    if nul >= 0:
        return f"has a NUL character (\\u0000 at character {nul}), which memsched cannot store; remove it"
    found = _SURROGATE.search(text)
    if found is not None:
        code = f"\\u{ord(found.group()):04x}"
        return (
            f"has an unpaired UTF-16 surrogate ({code} at character {found.start()}), which is not"
            " valid Unicode; was the text cut in the middle of an emoji?"
        )
    return None


def storable(text: str) -> str:
    """`text` as memsched can store it: NUL characters dropped, unpaired surrogates made U+FFFD (for
    text memsched did not get from the client, such as an upstream's reply, and cannot refuse)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    return _SURROGATE.sub("\ufffd", text)


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class User:
    id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Session:
    user_id: str
    id: str
    created_at: datetime
    turn_count: int = 0


@dataclass(slots=True)
class Turn:
    """One message of a conversation. `id` and `seq` are assigned by the store."""

    user_id: str
    session_id: str
    role: Role
    content: str
    created_at: datetime = field(default_factory=utcnow)
    external_id: str | None = None
    speaker: str | None = None  # a display name ("Caroline"); falls back to the role
    id: int | None = None
    seq: int | None = None  # 0-based position inside the session
    page_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.created_at = as_utc(self.created_at)

    @classmethod
    def stored(
        cls,
        id: int,
        user_id: str,
        session_id: str,
        seq: int | None,
        page_id: int | None,
        role: Role,
        speaker: str | None,
        content: str,
        created_at: datetime,
        external_id: str | None,
        meta: dict[str, Any],
    ) -> Turn:
        """A turn as a store reads it, `created_at` already aware UTC: skips the dataclass's `__init__`
        (keywords, defaults, the UTC conversion), ~a third of the cost of loading the ~200 turns a
        context ranks."""
        t = cls.__new__(cls)
        t.id, t.user_id, t.session_id, t.seq, t.page_id, t.role = id, user_id, session_id, seq, page_id, role
        t.speaker, t.content, t.created_at, t.external_id, t.meta = (
            speaker,
            content,
            created_at,
            external_id,
            meta,
        )
        return t

    @property
    def label(self) -> str:
        return self.speaker or self.role

    @property
    def text(self) -> str:
        """What is indexed and embedded: the speaker's name keeps "who said it" searchable."""
        return f"{self.label}: {self.content}"

    @property
    def hash(self) -> str:
        return content_hash(self.text)


@dataclass(frozen=True, slots=True)
class Page:
    """A fixed group of consecutive turns of one session: the unit bookmarks describe and paging loads."""

    id: int
    user_id: str
    session_id: str
    page_no: int
    first_seq: int
    last_seq: int
    turn_count: int
    created_at: datetime

    @property
    def ref(self) -> str:
        return f"p{self.id}"


@dataclass(slots=True)
class Hit:
    """A turn found by one retrieval layer, with that layer's raw score and 1-based rank."""

    turn_id: int
    score: float
    rank: int


@dataclass(slots=True)
class Candidate:
    """A turn considered for the context, with every layer's evidence for it."""

    turn_id: int
    scores: dict[str, float] = field(default_factory=dict)  # layer -> raw score
    ranks: dict[str, int] = field(default_factory=dict)  # layer -> 1-based rank
    fused: float = 0.0
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "scores": {k: round(v, 5) for k, v in self.scores.items()},
            "ranks": dict(self.ranks),
            "fused": round(self.fused, 6),
            "reason": self.reason,
        }


@dataclass(slots=True)
class Bookmark:
    """A bookmark: what a page (or a topic segment of it) is about, and where it came from."""

    user_id: str
    session_id: str
    keywords: list[str]
    summary: str
    page_ids: list[int]
    turn_ids: list[int]
    first_at: datetime
    last_at: datetime
    aliases: dict[str, list[str]] = field(default_factory=dict)
    kind: str = "fact"
    importance: float = 0.5
    source: str = "rule"  # llm | rule | merged
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    id: int | None = None

    @property
    def ref(self) -> str:
        return f"b{self.id}"

    @property
    def names(self) -> list[str]:
        """Keywords and all their aliases: what keyword matching looks for."""
        out = list(self.keywords)
        for alias_list in self.aliases.values():
            out.extend(alias_list)
        seen: dict[str, str] = {}
        for name in out:
            seen.setdefault(name.lower(), name)
        return list(seen.values())

    @property
    def text(self) -> str:
        """What is indexed and embedded: keywords (with aliases) and the summary."""
        parts = []
        for k in self.keywords:
            alias = self.aliases.get(k)
            parts.append(f"{k} ({', '.join(alias)})" if alias else k)
        extra = [a for key, lst in self.aliases.items() if key not in self.keywords for a in [key, *lst]]
        if extra:
            parts.append(", ".join(extra))
        return "; ".join(parts) + " — " + self.summary

    @property
    def hash(self) -> str:
        return content_hash(self.text)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "kind": self.kind,
            "keywords": self.keywords,
            "aliases": self.aliases,
            "summary": self.summary,
            "importance": self.importance,
            "source": self.source,
            "page_ids": self.page_ids,
            "turn_ids": self.turn_ids,
            "first_at": self.first_at.isoformat(),
            "last_at": self.last_at.isoformat(),
            "created_at": self.created_at.isoformat(),
        }


@dataclass(slots=True)
class Forgotten:
    """What one forget removed: the turns, rows per table, and what the caller must rebuild."""

    user_id: str
    turn_ids: list[int] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)  # sessions that lost turns (or were deleted)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted
    # Summaries made from a forgotten turn, deleted; the caller rewrites them from what remains.
    summaries: list[dict[str, object]] = field(default_factory=list)
    # Pages that lost their bookmarks with a forgotten turn and still hold turns: bookmark again.
    pages: list[int] = field(default_factory=list)
    purge: dict[str, object] = field(default_factory=dict)  # what the byte purge did and cost

    def count(self, table: str, n: int) -> None:
        if n > 0:
            self.rows[table] = self.rows.get(table, 0) + n

    def as_dict(self) -> dict[str, object]:
        return {
            "user": self.user_id,
            "turns": len(self.turn_ids),
            "turn_ids": list(self.turn_ids),
            "sessions": list(self.sessions),
            "rows": dict(self.rows),
            "summaries_rewritten": len(self.summaries),
            "pages_rebookmarked": len(self.pages),
            "purge": dict(self.purge),
        }
