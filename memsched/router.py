"""The cognitive router: which mode the conversation is in and which signals the new message raises.

Decided in well under a millisecond with no LLM: cue lexicons (Chinese and English) for modes and
for the recall / topic-shift signals, the user's local clock for `late_night`, and the cosine
similarity of the new message to the recent window for topic shifts. Everything tunable is data
(`DEFAULT_CUES`, `TOPIC_THRESHOLDS`); a later issue adds strategies keyed by mode.

Measured on hand-made 三体 -> 番茄炒蛋 examples, dense similarity separates topics in English
(MiniLM) but hardly in Chinese (MiniLM and WordLlama put every short Chinese sentence at 0.5-0.75),
so the thresholds for CJK text are low and the cue words carry most of the Chinese signal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from memsched.text.segment import cjk_ratio, terms

MODES = ("casual", "conflict", "comfort", "intimacy")
SIGNALS = ("recall", "topic_shift", "late_night", "command", "overflow")


# Cue lexicons. A cue with CJK characters matches as a substring; a Latin cue matches whole words,
# case-insensitively. Modes are scored by the number of distinct cues found; `casual` is the default.
def _cues(text: str) -> list[str]:
    """A cue list written as one "|"-separated string (data, not code)."""
    return [c.strip() for c in text.split("|") if c.strip()]


DEFAULT_CUES: dict[str, dict[str, list[str]]] = {
    "modes": {
        "conflict": _cues(
            "生气|气死|烦死|吵架|滚|讨厌你|你根本|你总是|你从来|不想理你|别理我|算了吧|失望|骗我|"
            "分手|闭嘴|受够了|冷战|道歉|angry|mad at you|pissed|hate you|shut up|leave me alone|"
            "you always|you never|whatever|fed up|sick of|disappointed|lied to me|break up|"
            "apologize|apologise|fight"
        ),
        "comfort": _cues(
            "难过|伤心|哭|累死|好累|压力|焦虑|失眠|崩溃|孤独|害怕|郁闷|委屈|不开心|心情不好|想哭|"
            "失业|被骂|生病|难受|emo|sad|cry|crying|exhausted|so tired|stressed|anxious|lonely|"
            "depressed|scared|upset|hurt|overwhelmed|can't sleep|bad day|sick|lost my job"
        ),
        "intimacy": _cues(
            "想你|爱你|喜欢你|亲爱的|宝贝|抱抱|亲亲|么么|在一起|约会|表白|我们俩|miss you|"
            "love you|darling|sweetheart|babe|honey|hug|kiss|date night|be together|cuddle"
        ),
    },
    "signals": {
        "recall": _cues(
            "记得|还记得|记不记得|上次|那次|那天|第一次|以前|之前说|我说过|我告诉过你|我叫什么|"
            "忘了吗|remember|last time|that time|first time|i told you|i mentioned|"
            "we talked about|you said|what's my name|what is my name|back when"
        ),
        "topic_shift": _cues(
            "换个话题|说点别的|聊点别的|不说这个了|不聊这个了|对了|话说|顺便问|另外|by the way|"
            "btw|anyway|speaking of which|on another note|change the subject|something else|"
            "different topic|new topic"
        ),
    },
}

# Below this cosine similarity to the recent window's mean, a message counts as a new topic.
# Keyed by embedder name, then by script of the message.
TOPIC_THRESHOLDS: dict[str, dict[str, float]] = {
    "minilm": {"latin": 0.12, "cjk": 0.45},
    "wordllama": {"latin": 0.05, "cjk": 0.40},
    # Hashed bags of jieba words: 三体 and 三体人 share nothing, so Chinese similarity is noise.
    "hash": {"latin": 0.05, "cjk": -1.0},
    "openai": {"latin": 0.25, "cjk": 0.25},
}
DEFAULT_TOPIC_THRESHOLD = {"latin": 0.1, "cjk": 0.1}
# Similarity alone says little about "ok", "哈哈" or "嗯嗯": it needs a message with some content.
MIN_TERMS_FOR_SIMILARITY = 3
LATE_NIGHT = (23, 5)  # local hours [23:00, 05:00)


@dataclass(slots=True)
class Route:
    """The router's decision for one message."""

    mode: str
    signals: dict[str, bool]
    cues: dict[str, list[str]] = field(default_factory=dict)  # mode/signal -> cues found
    mode_scores: dict[str, int] = field(default_factory=dict)
    topic_similarity: float | None = None
    topic_threshold: float | None = None
    local_time: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "signals": dict(self.signals),
            "cues": {k: list(v) for k, v in self.cues.items() if v},
            "mode_scores": dict(self.mode_scores),
            "topic_similarity": None if self.topic_similarity is None else round(self.topic_similarity, 4),
            "topic_threshold": self.topic_threshold,
            "local_time": self.local_time,
            "notes": list(self.notes),
        }


def _compile(cues: Sequence[str]) -> tuple[list[str], re.Pattern[str] | None]:
    cjk = [c for c in cues if cjk_ratio(c) > 0]
    latin = [c for c in cues if cjk_ratio(c) == 0]
    pattern = (
        re.compile(
            r"(?<![\w'])(?:"
            + "|".join(re.escape(c) for c in sorted(latin, key=len, reverse=True))
            + r")(?![\w'])",
            re.I,
        )
        if latin
        else None
    )
    return cjk, pattern


def local_time(now: datetime, timezone: str | None) -> tuple[datetime, str | None]:
    """`now` in the user's IANA `timezone` (UTC when None); a second value names a bad timezone."""
    if not timezone:
        return now, None
    try:
        return now.astimezone(ZoneInfo(timezone)), None
    except (ZoneInfoNotFoundError, ValueError):
        return now, f"unknown timezone {timezone!r}; using UTC (send an IANA name such as Asia/Shanghai)"


def topic_similarity(query: np.ndarray, window: Sequence[np.ndarray]) -> float | None:
    """Cosine similarity of `query` to the mean of the `window` vectors (None when there are none)."""
    if not window:
        return None
    mean = np.mean(np.stack([np.asarray(v, dtype=np.float32) for v in window]), axis=0)
    norm = float(np.linalg.norm(mean)) * float(np.linalg.norm(query))
    if norm == 0.0:
        return None
    return float(np.dot(mean, query) / norm)


class Router:
    """Routes a message to a mode and signals. Cheap to build, stateless, thread-safe."""

    def __init__(
        self,
        cues: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        *,
        topic_thresholds: Mapping[str, Mapping[str, float]] | None = None,
        late_night: tuple[int, int] = LATE_NIGHT,
    ) -> None:
        cues = cues if cues is not None else DEFAULT_CUES
        self._modes = {mode: _compile(list(words)) for mode, words in cues.get("modes", {}).items()}
        self._signals = {name: _compile(list(words)) for name, words in cues.get("signals", {}).items()}
        self.topic_thresholds = dict(topic_thresholds if topic_thresholds is not None else TOPIC_THRESHOLDS)
        self.late_night = late_night

    @staticmethod
    def _found(compiled: tuple[list[str], re.Pattern[str] | None], text: str) -> list[str]:
        cjk, pattern = compiled
        hits = [c for c in cjk if c in text]
        if pattern is not None:
            hits.extend(m.group(0).lower() for m in pattern.finditer(text))
        return sorted(set(hits))

    def threshold(self, embedder: str | None, message: str) -> float:
        table = self.topic_thresholds.get(embedder or "", DEFAULT_TOPIC_THRESHOLD)
        return float(table["cjk" if cjk_ratio(message) > 0.5 else "latin"])

    def route(
        self,
        message: str,
        *,
        now: datetime | None = None,
        timezone: str | None = None,
        similarity: float | None = None,
        embedder: str | None = None,
        segment_turns: int = 0,
        min_segment_turns: int = 2,
        command: bool = False,
        overflow: bool = False,
    ) -> Route:
        """Decide mode and signals for `message`.

        `similarity` is the message's cosine similarity to the current topic segment (from
        `topic_similarity`, computed with `embedder`); `segment_turns` is how many user turns that
        segment has — a shift needs at least `min_segment_turns` of them, since a topic of one line
        is not worth leaving. A cue ("换个话题", "by the way") raises topic_shift on its own.
        """
        cues: dict[str, list[str]] = {}
        scores: dict[str, int] = {}
        for mode, compiled in self._modes.items():
            found = self._found(compiled, message)
            cues[mode] = found
            scores[mode] = len(found)
        best = max(
            scores.items(), key=lambda kv: (kv[1], -MODES.index(kv[0]) if kv[0] in MODES else 0), default=None
        )
        mode = best[0] if best and best[1] > 0 else "casual"

        signals = dict.fromkeys(SIGNALS, False)
        for name, compiled in self._signals.items():
            found = self._found(compiled, message)
            cues[name] = found
            if found and name in signals:
                signals[name] = True
        notes: list[str] = []

        threshold: float | None = None
        cue_shift = signals["topic_shift"]
        sim_shift = False
        if similarity is not None and len(terms(message)) >= MIN_TERMS_FOR_SIMILARITY:
            threshold = self.threshold(embedder, message)
            sim_shift = similarity < threshold
        signals["topic_shift"] = (cue_shift or sim_shift) and segment_turns >= min_segment_turns

        local: str | None = None
        if now is not None:
            at, problem = local_time(now, timezone)
            if problem:
                notes.append(problem)
            start, end = self.late_night
            signals["late_night"] = at.hour >= start or at.hour < end
            local = at.isoformat(timespec="minutes")
        signals["command"] = command
        signals["overflow"] = overflow
        return Route(
            mode=mode,
            signals=signals,
            cues=cues,
            mode_scores=scores,
            topic_similarity=similarity,
            topic_threshold=threshold,
            local_time=local,
            notes=notes,
        )
