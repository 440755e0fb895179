"""What the rules run on every user message cost in the turn's `record` stage: profile facts
(`profile_extract.extract`), time expressions (`timeexpr.resolve`) and commands (`commands.detect`),
per message of the bilingual benchmark's questions (best of 5 passes, warm, each message read as new:
the rules' per-text caches emptied before each call).

    python benchmarks/rules_per_message.py      # one JSON object, ms per message by rule and language
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memsched import profile_extract
from memsched.commands import detect
from memsched.text import timeexpr

DATA = Path(__file__).parent / "data" / "bilingual_memory.json"
SAID_AT = datetime(2024, 10, 22, 7, tzinfo=UTC)


def forget_caches() -> None:
    """Empty the caches the rules keep per message text (the time-expression scan, `detect`, the script
    check), where the tree has them, so that each timed call reads its message as a turn's first
    reader does rather than looking up the last pass's answer."""
    for module, name in (
        ("memsched.text.timeexpr", "_found_cached"),
        ("memsched.commands", "_detect"),
        ("memsched.text.scripts", "present"),
    ):
        cache = getattr(sys.modules.get(module), name, None)
        if cache is not None:
            cache.cache_clear()


def per_message_ms(fn: Callable[[str], Any], texts: list[str], passes: int = 5) -> float:
    """Best of `passes` over `texts`, ms per message; each message read fresh (`forget_caches`)."""
    for text in texts:  # warm: compiled patterns, dictionaries
        fn(text)
    best = float("inf")
    for _ in range(passes):
        t0 = time.perf_counter()
        for text in texts:
            forget_caches()
            fn(text)
        best = min(best, (time.perf_counter() - t0) / len(texts) * 1000)
    return round(best, 4)


def main() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    rules: dict[str, Callable[[str], Any]] = {
        "profile_extract": profile_extract.extract,
        "timeexpr_resolve": lambda t: timeexpr.resolve(t, SAID_AT, "Asia/Shanghai"),
        "commands_detect": detect,
    }
    out: dict[str, dict[str, float]] = {}
    for lang in ("zh", "en"):
        texts = [q["question"] for q in data["languages"][lang]["questions"]]
        out[lang] = {name: per_message_ms(fn, texts) for name, fn in rules.items()}
        out[lang]["all"] = round(sum(out[lang].values()), 3)
    print(json.dumps({"benchmark": "rules_per_message", "ms_per_message": out}, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
