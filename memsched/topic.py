"""Topic segments: when a conversation has left its topic, and where the new one began.

A message is compared with the user's last turns of the current segment, embedder by embedder:
its cosine similarity to their mean, *minus the segment's own coherence* (how close each of those
turns is to the mean of the others). Companion chat about one thing is loose — "章北海的选择你怎么看"
shares no word with the 三体 turns before it — and how loose depends on the topic, the language and
the embedder, so an absolute threshold either never fires or fires inside a topic; the relative
score asks only whether this message is less like the segment than the segment is like itself.

One message far from the segment is only a *candidate*: a single aside ("等一下，快递到了") must not
cut a topic. The shift is *confirmed* when the next contentful message is also far from the old
segment and the two together are farther still (they belong together, not with it); the new
segment then starts at the candidate, and the scheduler summarises the finished segment before it
builds that turn's context, so the second message of a new topic already gets no raw old turns.
A candidate followed by a message back on the old topic rejoins its segment.

Which embedders judge, with what weights and thresholds, depends on the message's script
(`TopicParams`): in English MiniLM separates topics well; in Chinese MiniLM and WordLlama put
every short sentence at 0.5-0.75, and the gloss vector (Chinese glossed into English, then MiniLM)
is the one that separates at all. The constants were tuned on the tuning half of
benchmarks/data/topic_shift.json and are reported on its other half (BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memsched.text.segment import cjk_ratio, terms

Vectors = Mapping[str, np.ndarray]  # one message's vectors, by embedder name


@dataclass(frozen=True, slots=True)
class ScriptParams:
    """How messages of one script are judged: the embedders with their weights, the coherence to
    assume for a segment too short to measure its own, and the thresholds on the relative score."""

    weights: Mapping[str, float]
    prior: Mapping[str, float]  # coherence assumed while the segment has fewer than 3 turns
    far: float  # a message scoring below this is a candidate shift
    confirm_far: float  # the next message must score below this too ...
    confirm_pair: float  # ... and the two together below this ...
    # ... and the message at least this much closer to the candidate than to the old segment.
    closer: float = 0.0


@dataclass(frozen=True, slots=True)
class TopicParams:
    cjk: ScriptParams
    latin: ScriptParams
    window: int = 6  # the segment's last contentful user turns a message is compared with
    min_turns: int = 3  # contentful user turns a segment needs before a shift can close it
    min_terms: int = 1  # content words a message needs to be judged at all ("嗯", "ok" are not)

    def script(self, message: str) -> ScriptParams:
        return self.cjk if cjk_ratio(message) > 0.5 else self.latin

    def embedders(self, message: str) -> frozenset[str]:
        """The embedders whose vectors judge `message`."""
        return frozenset(n for n, w in self.script(message).weights.items() if w)


# Tuned on the tuning half of benchmarks/data/topic_shift.json by benchmarks/topic_shift.py --tune.
DEFAULT_PARAMS = TopicParams(
    cjk=ScriptParams(
        weights={"gloss": 1.0},
        prior={"gloss": 0.22, "wordllama": 0.55, "minilm": 0.65},
        far=0.0,
        confirm_far=0.0,
        confirm_pair=0.0,
        closer=0.0,
    ),
    latin=ScriptParams(
        weights={"minilm": 1.0},
        prior={"minilm": 0.3, "wordllama": 0.12},
        far=-0.15,
        confirm_far=-0.10,
        confirm_pair=-0.10,
        closer=0.0,
    ),
)


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n else v


def _mean(vs: Sequence[np.ndarray]) -> np.ndarray:
    return _unit(np.mean(np.stack([_unit(v) for v in vs]), axis=0))


def coherence(window: Sequence[np.ndarray]) -> float | None:
    """How alike a segment's turns are: the mean similarity of each to the mean of the others
    (None below three turns, where that says nothing)."""
    if len(window) < 3:
        return None
    units = [_unit(v) for v in window]
    return float(
        np.mean([units[k] @ _mean([u for j, u in enumerate(units) if j != k]) for k in range(len(units))])
    )


def closeness(
    params: ScriptParams, message: Vectors, pending: Sequence[Vectors], segment: Sequence[Vectors]
) -> float | None:
    """How much closer `message` is to the pending candidate's turns than to the old segment: the
    weighted sum of (similarity to the candidate's mean) - (similarity to the segment's mean)."""
    total, seen = 0.0, False
    for name, weight in params.weights.items():
        q = message.get(name)
        ps = [m[name] for m in pending if name in m and np.any(m[name])]
        ws = [s[name] for s in segment if name in s and np.any(s[name])]
        if not weight or q is None or not np.any(q) or not ps or not ws:
            continue
        q = _unit(q)
        total += weight * (float(q @ _mean(ps)) - float(q @ _mean(ws)))
        seen = True
    return total if seen else None


def relative_score(
    params: ScriptParams, messages: Sequence[Vectors], segment: Sequence[Vectors]
) -> float | None:
    """The weighted sum over the judging embedders of (similarity of the messages' mean to the
    segment's mean) - (the segment's coherence). Negative: less like the segment than it is like
    itself. None when no judging embedder has vectors for both sides."""
    total, seen = 0.0, False
    for name, weight in params.weights.items():
        if not weight:
            continue
        qs = [m[name] for m in messages if name in m and np.any(m[name])]
        ws = [s[name] for s in segment if name in s and np.any(s[name])]
        if not qs or not ws:
            continue
        similarity = float(_mean(qs) @ _mean(ws))
        coh = coherence(ws)
        total += weight * (similarity - (coh if coh is not None else params.prior.get(name, 0.0)))
        seen = True
    return total if seen else None


@dataclass(slots=True)
class TopicJudgement:
    """What the topic judge decided for one message.

    `shift`: the topic changed; the new segment starts at this message (`late` False) or at the
    pending candidate before it (`late` True). `candidate`: this message is far from the segment and
    becomes the pending candidate. `score` / `pair_score`: the relative scores behind it."""

    shift: bool = False
    late: bool = False
    candidate: bool = False
    score: float | None = None
    pair_score: float | None = None
    threshold: float | None = None
    judged: bool = False  # False: too short, or the segment too young, to judge
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "shift": self.shift,
            "late": self.late,
            "candidate": self.candidate,
            "score": None if self.score is None else round(self.score, 4),
            "pair_score": None if self.pair_score is None else round(self.pair_score, 4),
            "threshold": self.threshold,
        }


def contentful(text: str, params: TopicParams = DEFAULT_PARAMS) -> bool:
    """Whether `text` says enough to be judged (and to stand for its segment)."""
    return len(terms(text)) >= params.min_terms


def judge(
    message: str,
    vectors: Vectors,
    segment: Sequence[Vectors],
    pending: Sequence[Vectors] = (),
    *,
    params: TopicParams = DEFAULT_PARAMS,
) -> TopicJudgement:
    """Judge `message` (with its `vectors`) against `segment`, the vectors of the current segment's
    contentful user turns before any pending candidate (oldest first), and `pending`, the
    contentful user turns from the candidate on (empty when there is none).

    The caller keeps the state: after a judgement with `candidate`, this message is the pending
    candidate; with `shift` and `late`, the new segment starts at the candidate; with `shift` alone,
    at this message; otherwise a pending candidate rejoins the segment (unless this message was
    too short to judge: then the candidate stays pending)."""
    out = TopicJudgement()
    if not contentful(message, params):
        out.notes.append("topic: too short to judge")
        return out
    window = list(segment)[-params.window :]
    if len(window) < params.min_turns:
        return out
    script = params.script(message)
    out.threshold = script.far
    out.score = relative_score(script, [vectors], window)
    if out.score is None:
        return out
    out.judged = True
    if not pending:
        out.candidate = out.score < script.far
        if out.candidate:
            out.notes.append(
                f"topic: far from the segment ({out.score:.3f} < {script.far}); waiting for the next message"
            )
        return out
    out.pair_score = relative_score(script, [*pending, vectors], window)
    closer = closeness(script, vectors, pending, window)
    if (
        out.pair_score is not None
        and out.score < script.confirm_far
        and out.pair_score < script.confirm_pair
        and closer is not None
        and closer >= script.closer
    ):
        out.shift = out.late = True
        out.notes.append(
            f"topic: this message and the one before are both far from the segment"
            f" ({out.score:.3f}, together {out.pair_score:.3f}): the new topic began there"
        )
    elif out.score < script.far:
        out.candidate = True
        out.notes.append("topic: far from the segment but not with the message before; waiting again")
    return out


# Which embedder judges alone when none of a script's tuned ones is configured (untuned: the
# relative score still adapts to the segment, the thresholds are the tuned script's).
FALLBACK_ORDER = ("minilm", "wordllama", "openai", "hash")
FALLBACK_PRIOR = 0.3


def topic_params_for(names: Iterable[str], params: TopicParams = DEFAULT_PARAMS) -> TopicParams:
    """`params` restricted to the configured embedders `names`; a script none of whose judging
    embedders is configured is judged by the first of `FALLBACK_ORDER` that is (or not at all)."""
    have = set(names)

    def fit(sp: ScriptParams) -> ScriptParams:
        weights = {n: w for n, w in sp.weights.items() if n in have and w}
        if not weights:
            name = next((n for n in FALLBACK_ORDER if n in have), None) or next(iter(sorted(have)), None)
            weights = {name: 1.0} if name is not None else {}
        prior = {n: sp.prior.get(n, FALLBACK_PRIOR) for n in weights}
        return replace(sp, weights=weights, prior=prior)

    return replace(params, cjk=fit(params.cjk), latin=fit(params.latin))


def advance(
    verdict: TopicJudgement | None, *, shift: bool, index: int, pending: int
) -> tuple[int | None, int]:
    """The segment bookkeeping after a message at `index` (a seq, or a position in a list) with the
    judge's `verdict` and the router's `shift` signal (the verdict's shift or a topic cue), given the
    `pending` candidate's index (-1: none): (where the new segment starts, or None when it goes on;
    the pending candidate's index after this message)."""
    start: int | None = None
    if shift:
        start = pending if verdict is not None and verdict.late else index
    if verdict is not None and verdict.candidate and not shift:
        return start, index
    if shift or (verdict is not None and verdict.judged):
        return start, -1
    return start, pending
