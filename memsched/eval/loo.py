"""Leave-one-conversation-out: how a tuned constant does on a conversation it was not tuned on.

A sweep evaluates several variants of memsched (one value of a constant each) on every question of
every conversation. For each conversation in turn, the variant that scores best on the OTHER
conversations is picked, and its recall on the held-out one is what counts. Averaged over all
questions, that is the out-of-sample figure; the best variant on all conversations at once is the
in-sample figure. A constant whose in-sample gain does not survive leave-one-out is noise fitted to
the dev conversations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any


def _means(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[float, int]]:
    """(system, sample, budget) -> (summed recall, question count)."""
    acc: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in records:
        acc[(r["system"], r["sample"], r["budget"])].append(float(r["recall"]))
    return {k: (sum(v), len(v)) for k, v in acc.items()}


def leave_one_out(
    records: Sequence[dict[str, Any]], budgets: Sequence[int], default: str | None = None
) -> dict[str, Any]:
    """Pick a variant per held-out conversation and report in-sample and out-of-sample recall.

    `records` are `locomo.run(..., records=...)` rows. The variant is chosen by its mean recall over
    all `budgets` on the training conversations (one choice serves every budget, as a shipped
    constant does). Returns `{"folds": [{"held_out", "chosen"}], "loo": {budget: recall},
    "in_sample": {"chosen", budget: recall}, "variants": {name: {budget: recall}}}`; `default` also
    gets its figures under "default" for comparison.
    """
    sums = _means(records)
    systems = sorted({k[0] for k in sums})
    samples = sorted({k[1] for k in sums})

    def score(system: str, on: Sequence[str], budget_list: Sequence[int]) -> float:
        total = sum(sums.get((system, s, b), (0.0, 0))[0] for s in on for b in budget_list)
        n = sum(sums.get((system, s, b), (0.0, 0))[1] for s in on for b in budget_list)
        return total / n if n else 0.0

    def best(on: Sequence[str]) -> str:
        # Ties go to the default (a change must earn its place), then to the first name.
        return max(systems, key=lambda s: (round(score(s, on, budgets), 6), s == default, -systems.index(s)))

    folds = []
    held: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for sample in samples:
        train = [s for s in samples if s != sample]
        chosen = best(train) if train else best(samples)
        folds.append({"held_out": sample, "chosen": chosen})
        for b in budgets:
            held[b].append(sums.get((chosen, sample, b), (0.0, 0)))
    loo = {str(b): round(sum(t for t, _ in v) / max(1, sum(n for _, n in v)), 4) for b, v in held.items()}
    overall = best(samples)
    out: dict[str, Any] = {
        "folds": folds,
        "loo": loo,
        "in_sample": {"chosen": overall, **{str(b): round(score(overall, samples, [b]), 4) for b in budgets}},
        "variants": {s: {str(b): round(score(s, samples, [b]), 4) for b in budgets} for s in systems},
    }
    if default is not None and default in systems:
        out["default"] = out["variants"][default]
    return out


def spread(values: Sequence[float]) -> float:
    """Max minus min: how flat a sweep is (a plateau is a constant that does not need tuning)."""
    return round(max(values) - min(values), 4) if values else 0.0
