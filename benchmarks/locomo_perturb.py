"""A LoCoMo file with what the tuned constants could have fitted changed: names and years (issue 10).

The constants were tuned on the dev conversations' content; a method that fitted their speakers'
names (how MiniLM or wordfreq treat "Caroline") or their calendar would lose recall when the same
conversations carry other names and dates. This writes a copy of a LoCoMo file with

- `--rename`: every speaker's name (and the short forms the turns use for it, found as the
  speaker's name's prefixes of three or more letters that occur as words) replaced, everywhere:
  speakers, turns, captions, questions, answers, observations and summaries (a prefix that is a
  common English word, "Car" of Carlos, is left alone);
- `--years N`: every four-digit year from 1990 to 2049 moved by N (a multiple of 28 keeps each
  date's weekday, so "last Friday" stays true of the session's date),

and the same `memsched eval locomo` measures it:

    python benchmarks/locomo_perturb.py --data $D --out /tmp/perturbed.json --rename --years 28
    memsched eval locomo --data /tmp/perturbed.json --json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from wordfreq import zipf_frequency

YEAR = re.compile(r"\b(199[0-9]|20[0-4][0-9])\b")
# Replacement names: common in other languages' naming traditions, so no dev speaker's
# tokenisation or embedding is reused.
NEW_NAMES = [
    "Priya",
    "Ingrid",
    "Tomasz",
    "Keiko",
    "Emeka",
    "Svetlana",
    "Mateus",
    "Aigerim",
    "Dmitri",
    "Nadia",
]


def _short_forms(name: str, texts: list[str]) -> list[str]:
    """The name's prefixes (≥ 3 letters) that the conversation uses as words, e.g. "Mel" for Melanie;
    not a common English word ("Car" of Carlos: Zipf frequency 5 or more, the ~3,000 most frequent)."""
    blob = "\n".join(texts)
    return [
        name[:n]
        for n in range(3, len(name))
        if re.search(rf"\b{re.escape(name[:n])}\b", blob) and zipf_frequency(name[:n].lower(), "en") < 5
    ]


def _texts(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [t for v in node for t in _texts(v)]
    if isinstance(node, dict):
        return [t for v in node.values() for t in _texts(v)]
    return []


def _apply(node: Any, fn: Any) -> Any:
    if isinstance(node, str):
        return fn(node)
    if isinstance(node, list):
        return [_apply(v, fn) for v in node]
    if isinstance(node, dict):
        return {k: _apply(v, fn) for k, v in node.items()}
    return node


def perturb(samples: list[dict[str, Any]], *, rename: bool, years: int) -> list[dict[str, Any]]:
    out = []
    pool = iter(NEW_NAMES * 10)
    for sample in samples:
        mapping: dict[str, str] = {}
        if rename:
            conv = sample["conversation"]
            texts = _texts(sample)
            for key in ("speaker_a", "speaker_b"):
                old, new = conv[key], next(pool)
                mapping[old] = new
                for short in _short_forms(old, texts):
                    mapping.setdefault(short, new[: max(3, len(short))])
        names = re.compile(r"\b(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")

        def fn(text: str, names: re.Pattern[str] = names, mapping: dict[str, str] = mapping) -> str:
            if mapping:
                text = names.sub(lambda m: mapping[m.group(1)], text)
            if years:
                text = YEAR.sub(lambda m: str(int(m.group(1)) + years), text)
            return text

        out.append(_apply(sample, fn))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rename", action="store_true", help="replace every speaker's name")
    ap.add_argument("--years", type=int, default=0, help="move every year by this many (28: same weekdays)")
    args = ap.parse_args()
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    args.out.write_text(json.dumps(perturb(samples, rename=args.rename, years=args.years)), encoding="utf-8")
    print(f"wrote {args.out} ({len(samples)} conversations; rename={args.rename}, years={args.years:+d})")


if __name__ == "__main__":
    main()
