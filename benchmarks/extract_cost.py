"""What the rules run on every user message cost per call (`profile_extract.extract`,
`commands.detect`), this tree against another commit, and whether both give the same outputs.

The other side runs from `git archive REF memsched` in a temporary directory, in a subprocess, so
both import their own modules. Timed (best of --passes, warm, each message read as new: the
per-text caches emptied before each call, `rules_per_message.per_message_ms`): `extract`, `detect`
and a turn's pair — `detect` before the reply, then `extract` when the message is recorded — over LoCoMo turns (English) and the bilingual
benchmark's Chinese questions. Compared: `extract(t)`, `detect(t)` and `detect(t, named=True)` for
every LoCoMo turn, every bilingual question, every string literal in the tests of these rules with a
Han character or three words or more, and each of those with 's' as 'ſ' (U+017F) and 'k' as the
Kelvin sign (U+212A), which match them case-insensitively.

    python benchmarks/extract_cost.py [--ref main] [--locomo PATH] [--passes 5]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from rules_per_message import per_message_ms

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")
BILINGUAL = ROOT / "benchmarks" / "data" / "bilingual_memory.json"
TESTS = ("test_profile*.py", "test_commands*.py", "test_*names*.py", "test_forget*.py")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def locomo_texts(path: Path) -> list[str]:
    """Every turn's text of a LoCoMo file, as the importer reads it (a shared photo's caption added)."""
    from memsched.importers import read_locomo  # the side's own tree

    return [t.content for sample in read_locomo(path) for t in sample.turns]


def chinese_questions() -> list[str]:
    data = json.loads(BILINGUAL.read_text(encoding="utf-8"))
    return [q["question"] for q in data["languages"]["zh"]["questions"]]


def test_strings() -> list[str]:
    out: list[str] = []
    for pattern in TESTS:
        for path in sorted((ROOT / "tests").glob(pattern)):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    s = node.value
                    if _HAN.search(s) or len(s.split()) >= 3:
                        out.append(s)
    return list(dict.fromkeys(out))


def corpus(locomo: Path) -> list[str]:
    base = [*locomo_texts(locomo), *chinese_questions(), *test_strings()]
    folded = [t.replace("s", "\u017f").replace("k", "\u212a") for t in base if "s" in t or "k" in t]
    return list(dict.fromkeys([*base, *folded]))


def side(locomo: Path, passes: int) -> dict[str, Any]:
    """Run in the subprocess of one side: its outputs and timings, as JSON on stdout."""
    import memsched
    from memsched.commands import detect
    from memsched.profile_extract import extract

    texts = corpus(locomo)

    def said(fn: Callable[..., Any], text: str, **kw: Any) -> str:
        try:
            return repr(fn(text, **kw))
        except Exception as e:  # an error is an output to compare too
            return f"raises {type(e).__name__}: {e}"

    outputs = [[said(extract, t), said(detect, t), said(detect, t, named=True)] for t in texts]
    english = [t for t in locomo_texts(locomo) if 60 <= len(t) <= 160][:600]
    chinese = chinese_questions()

    def turn(t: str) -> None:
        detect(t)  # before the reply (the scheduler's `named` is False for most messages)
        extract(t)  # when the turn is recorded

    timings = {
        lang: {
            "messages": len(msgs),
            "extract_us": round(per_message_ms(extract, msgs, passes) * 1000, 1),
            "detect_us": round(per_message_ms(detect, msgs, passes) * 1000, 1),
            "turn_detect_then_extract_us": round(per_message_ms(turn, msgs, passes) * 1000, 1),
        }
        for lang, msgs in (("en", english), ("zh", chinese))
    }
    return {"module": memsched.__file__, "texts": texts, "outputs": outputs, "timings": timings}


def run_side(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, __file__, "--side", "--locomo", str(args.locomo), "--passes", str(args.passes)]
    done = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ref", default="main", help="the commit to compare with (default main)")
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        json.dump(side(args.locomo, args.passes), sys.stdout, ensure_ascii=False)
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "ref.tar"
        subprocess.run(["git", "archive", "-o", str(archive), args.ref, "memsched"], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        before = run_side(Path(tmp), args)
    after = run_side(ROOT, args)
    assert before["texts"] == after["texts"]
    assert Path(before["module"]).parent.parent != Path(after["module"]).parent.parent, "one tree twice"
    differ = [
        {"text": t, "before": b, "after": a}
        for t, b, a in zip(after["texts"], before["outputs"], after["outputs"], strict=True)
        if a != b
    ]
    print(
        json.dumps(
            {
                "benchmark": "extract_cost",
                "ref": args.ref,
                "modules": [before["module"], after["module"]],
                "texts": len(after["texts"]),
                "with_a_fact_or_command": sum(o != ["[]", "[]", "[]"] for o in after["outputs"]),
                "raising": sum(any(o.startswith("raises ") for o in out) for out in after["outputs"]),
                "differences": len(differ),
                "first_differences": differ[:5],
                "before_us": before["timings"],
                "after_us": after["timings"],
            },
            ensure_ascii=False,
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
