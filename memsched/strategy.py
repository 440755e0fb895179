"""Memory strategies as data: which memories a moment of the conversation gets, and in which voice.

The table ships as `memsched/strategies.toml`; `MEMSCHED_STRATEGIES` names a user file that replaces
it. `StrategyTable.select(mode, mood, intensity, signals, backed)` returns the first strategy whose
`when` matches and says why; the scheduler turns its shares into token caps and its style into a system-prompt section.
No mode logic lives anywhere else.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memsched.errors import ConfigError

STRATEGIES_ENV = "MEMSCHED_STRATEGIES"
SOURCES = ("recent", "recalled", "bookmarks", "summaries", "profile", "mood", "follow_ups")
MODES = ("casual", "conflict", "comfort", "intimacy")
MOODS = ("upset", "sad", "anxious", "happy", "affectionate", "neutral")
SIGNALS = ("recall", "topic_shift", "late_night", "command", "overflow", "repair")


class _When(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: list[str] | None = None
    mood: list[str] | None = None
    min_intensity: float = Field(default=0.0, ge=0.0, le=1.0)
    signals: list[str] = Field(default_factory=list)
    not_signals: list[str] = Field(default_factory=list)
    # true: only when the turn's mode is backed by more than the learned parts' reading of the message
    # alone (`Route.backed`: a cue word, a corroborated reading, the carried state); false: only when
    # it is not. Absent: either.
    backed: bool | None = None

    @field_validator("mode", "mood", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _known(self) -> _When:
        for name, values, known in (
            ("mode", self.mode or [], MODES),
            ("mood", self.mood or [], MOODS),
            ("signals", self.signals, SIGNALS),
            ("not_signals", self.not_signals, SIGNALS),
        ):
            bad = [v for v in values if v not in known]
            if bad:
                raise ValueError(f"unknown {name} {bad}; known: {', '.join(known)}")
        return self


class _Strategy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    when: _When = Field(default_factory=_When)
    style: str = ""
    recall_hint: str = ""
    min_similarity: float = Field(default=0.0, ge=0.0, lt=1.0)
    shares: dict[str, float]

    @field_validator("shares")
    @classmethod
    def _shares(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in SOURCES]
        if bad:
            raise ValueError(f"unknown memory source {bad}; known: {', '.join(SOURCES)}")
        if any(x < 0 or x > 1 for x in v.values()):
            raise ValueError("every share must be between 0 and 1")
        if sum(v.values()) > 1.0 + 1e-9:
            raise ValueError(f"shares add up to {sum(v.values()):.2f}; they must not exceed 1")
        return {k: float(v.get(k, 0.0)) for k in SOURCES}


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: list[_Strategy] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Strategy:
    """One row of the table: when it applies, the budget share of each memory source, the style."""

    name: str
    shares: Mapping[str, float]
    style: str = ""
    recall_hint: str = ""
    when: Mapping[str, Any] = field(default_factory=dict)
    min_similarity: float = 0.0  # `Memory.context(min_similarity=)`: 0 recalls whatever ranks

    def share(self, source: str) -> float:
        return float(self.shares.get(source, 0.0))


@dataclass(frozen=True, slots=True)
class Choice:
    """The strategy chosen for a turn and why (the trace records both)."""

    strategy: Strategy
    reason: str
    skipped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.strategy.name,
            "reason": self.reason,
            "shares": dict(self.strategy.shares),
            "skipped": list(self.skipped),
        }


class StrategyTable:
    """The ordered strategy table; `select` is first-match."""

    def __init__(self, strategies: list[Strategy], source: str = "builtin") -> None:
        if not strategies:
            raise ConfigError("the strategy table is empty")
        self.strategies = strategies
        self.source = source

    @classmethod
    def parse(cls, text: str, source: str) -> StrategyTable:
        """Parse and validate a TOML table; a mistake is a ConfigError naming the file and the field."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source} is not valid TOML: {exc}") from None
        try:
            table = _Table.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{source}: {where}: {first['msg']}") from None
        return cls(
            [
                Strategy(
                    name=s.name,
                    shares=s.shares,
                    style=s.style.strip(),
                    recall_hint=s.recall_hint.strip(),
                    when=s.when.model_dump(exclude_defaults=True),
                    min_similarity=s.min_similarity,
                )
                for s in table.strategy
            ],
            source,
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> StrategyTable:
        """The table at `path` (`Config.strategies`, i.e. `$MEMSCHED_STRATEGIES`), else the one shipped
        in the package."""
        if path:
            p = Path(path).expanduser()
            try:
                text = p.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{STRATEGIES_ENV}={p}: cannot read it ({exc.strerror})") from None
            return cls.parse(text, str(p))
        text = resources.files("memsched").joinpath("strategies.toml").read_text(encoding="utf-8")
        return cls.parse(text, "memsched/strategies.toml")

    def get(self, name: str) -> Strategy:
        for s in self.strategies:
            if s.name == name:
                return s
        raise KeyError(name)

    def select(
        self,
        mode: str,
        mood: str = "neutral",
        intensity: float = 0.0,
        signals: Mapping[str, bool] | None = None,
        backed: bool = True,
    ) -> Choice:
        """The first strategy whose `when` holds for this turn. When none does (a user table without
        a catch-all), the last strategy is used and the reason says so. `backed`: whether more than
        the learned parts' reading of the message alone stands behind `mode` (`Route.backed`)."""
        on = {k for k, v in (signals or {}).items() if v}
        skipped: list[str] = []
        for s in self.strategies:
            why = _matches(s.when, mode, mood, intensity, on, backed)
            if why is not None:
                return Choice(s, why, tuple(skipped))
            skipped.append(s.name)
        return Choice(self.strategies[-1], "no strategy matched; using the last one", tuple(skipped[:-1]))


def _matches(
    when: Mapping[str, Any], mode: str, mood: str, intensity: float, on: set[str], backed: bool = True
) -> str | None:
    """None when `when` does not hold; otherwise the reason, naming each condition met."""
    reasons: list[str] = []
    modes = when.get("mode")
    if modes is not None:
        if mode not in modes:
            return None
        reasons.append(f"mode={mode}")
    need = when.get("backed")
    if need is not None:
        if bool(need) != backed:
            return None
        reasons.append(
            "backed (a cue word or the carried state)" if backed else "read by the learned parts alone"
        )
    moods = when.get("mood")
    if moods is not None:
        if mood not in moods:
            return None
        reasons.append(f"mood={mood}")
    floor = float(when.get("min_intensity", 0.0))
    if floor > 0:
        if intensity < floor:
            return None
        reasons.append(f"intensity {intensity:.2f}>={floor:g}")
    for sig in when.get("signals", []):
        if sig not in on:
            return None
        reasons.append(sig)
    for sig in when.get("not_signals", []):
        if sig in on:
            return None
        reasons.append(f"not {sig}")
    return " and ".join(reasons) if reasons else "default (no condition)"
