"""The conversation-mode decision on everyday hyperbole and shrugs (session 36).

A scenario set found "晚饭随便吃点什么都行，你推荐吧" routed as conflict and "that stand-up special destroyed
me" as comfort: the labelled set holds 随便, 气死, "killed me" mostly in their earnest sense.
tests/data/mode_everyday.txt is a probe, never training data: 80 casual lines that use such words about
food, errands, games and pets, and 16 conflict lines that say them at the companion in earnest. The
shipped model reads 22 of the 40 Chinese casual lines and 30 of the 40 English ones as casual, and 15 of
the 16 conflict lines as conflict. 224 labelled lines written for the gap (session 36) lifted the probe
to 28 / 32 but cost the held-out half of the labelled set 2-3 points (0.877 to 0.844-0.856), so they were
not kept (BENCHMARKS.md, "Everyday hyperbole and shrugs"). The floors below are today's readings: a
refit must not read this talk worse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rapidfuzz import fuzz, process

from memsched.classify import normalize_text

Modes = Callable[[Sequence[str]], list[str]]  # conftest's `shipped_modes`

DATA = Path(__file__).parent / "data"


def _read(name: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / name).read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            mode, lang, text = line.split("|", 2)
            rows.append((mode, lang, text.removesuffix(" #hard")))
    return rows


PROBE = _read("mode_everyday.txt")


def test_the_probe_is_parallel_and_not_training_data() -> None:
    modes = {(m, lang) for m, lang, _ in PROBE}
    assert modes == {("casual", "zh"), ("casual", "en"), ("conflict", "zh"), ("conflict", "en")}
    for m in ("casual", "conflict"):
        assert sum(1 for mm, ll, _ in PROBE if (mm, ll) == (m, "zh")) == sum(
            1 for mm, ll, _ in PROBE if (mm, ll) == (m, "en")
        )
    labelled = [normalize_text(t) for _, _, t in _read("mode_labelled.txt")]
    for _, _, text in PROBE:
        best = process.extractOne(normalize_text(text), labelled, scorer=fuzz.ratio)
        assert best is not None and best[1] <= 75, (text, best)
    texts = {t for _, _, t in PROBE}
    for other in ("mode_blind.txt", "mode_warm.txt", "mode_short.txt"):
        assert not texts & {t for _, _, t in _read(other)}, other


def test_everyday_hyperbole_reads_casual_and_earnest_words_keep_conflict(shipped_modes: Modes) -> None:
    got = shipped_modes([t for _, _, t in PROBE])
    right = {
        key: sum(g == m for (m, lang, _), g in zip(PROBE, got, strict=True) if (m, lang) == key)
        for key in {(m, lang) for m, lang, _ in PROBE}
    }
    wrong = [(t, m, g) for (m, _, t), g in zip(PROBE, got, strict=True) if g != m]
    assert right[("casual", "zh")] >= 22 and right[("casual", "en")] >= 30, wrong
    assert right[("conflict", "zh")] + right[("conflict", "en")] >= 15, wrong
