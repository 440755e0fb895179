"""benchmarks/locomo_perturb.py: names and years replaced everywhere, weekdays kept, nothing else touched."""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import date
from pathlib import Path
from types import ModuleType

from memsched.eval.locomo import read_locomo


def _load() -> ModuleType:
    path = Path(__file__).parent.parent / "benchmarks" / "locomo_perturb.py"
    spec = importlib.util.spec_from_file_location("locomo_perturb", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lp = _load()

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Melanie",
        "speaker_b": "Carlos",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Melanie", "dia_id": "D1:1", "text": "Hi Carlos! Melody and I went camping."},
            {
                "speaker": "Carlos",
                "dia_id": "D1:2",
                "text": "Nice, Mel! Since 2019 I've wanted to. Call me Car.",
            },
        ],
    },
    "qa": [
        {
            "question": "Where did Melanie go on 8 May, 2023?",
            "answer": "camping",
            "evidence": ["D1:1"],
            "category": 4,
        }
    ],
}


def test_rename_replaces_speakers_and_their_short_forms_but_not_other_words() -> None:
    (out,) = lp.perturb([SAMPLE], rename=True, years=0)
    conv = out["conversation"]
    a, b = conv["speaker_a"], conv["speaker_b"]
    assert {a, b}.isdisjoint({"Melanie", "Carlos"})
    turns = conv["session_1"]
    assert turns[0]["speaker"] == a and turns[1]["speaker"] == b
    assert turns[0]["text"] == f"Hi {b}! Melody and I went camping."  # "Melody" is not "Mel"
    assert turns[1]["text"].startswith(f"Nice, {a[:3]}! Since 2019")  # the short form, years kept
    assert "Call me Car." in turns[1]["text"]  # "Car" is Carlos's prefix, but the only word "Car" is here
    assert out["qa"][0]["question"] == f"Where did {a} go on 8 May, 2023?"
    assert SAMPLE["conversation"]["speaker_a"] == "Melanie"  # the input is not changed


def test_years_move_by_28_keep_every_weekday(tmp_path: Path) -> None:
    (out,) = lp.perturb([SAMPLE], rename=False, years=28)
    conv = out["conversation"]
    assert conv["session_1_date_time"] == "1:56 pm on 8 May, 2051"
    assert "Since 2047" in conv["session_1"][1]["text"]
    assert out["qa"][0]["question"].endswith("8 May, 2051?")
    assert date(2051, 5, 8).weekday() == date(2023, 5, 8).weekday()
    # The copy is still a LoCoMo file the eval reads, with the moved session date.
    path = tmp_path / "p.json"
    path.write_text(json.dumps([out]), encoding="utf-8")
    (sample,) = read_locomo(path)
    assert {t.created_at.year for t in sample.turns} == {2051}
