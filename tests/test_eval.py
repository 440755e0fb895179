from __future__ import annotations

from pathlib import Path

import pytest

from memsched.config import Config
from memsched.eval import locomo
from memsched.eval.judge import Judge
from memsched.llm.client import OpenAIChatClient
from memsched.testing import Fail, FakeOpenAI

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


def test_judge_scores_with_a_fake_llm(locomo_file: Path, tmp_path: Path) -> None:
    def responder(body: dict) -> str:
        text = str(body["messages"][-1]["content"])
        if "Gold answer" in text:  # the grading call
            return '{"reasoning": "same", "label": "CORRECT"}' if "sunrise" in text else '{"label": "WRONG"}'
        return "a sunrise" if "paint" in text else "no idea"

    with FakeOpenAI(responder=responder) as fake:
        client = OpenAIChatClient(fake.base_url, None, "fake", timeout=5, retries=0)
        judge = Judge(client, client)
        cfg = Config.load(home=tmp_path / "h", embedders="hash")
        result = locomo.run(locomo_file, [400], cfg, judge=judge)
        assert result["judge"]["400"] == round(1 / 3, 4)  # only the painting question is answered right
        assert judge.errors == 0
        # a failing LLM counts as wrong and is tallied, never crashes the eval
        fake.script(*[Fail(500)] * 20)
        failing = Judge(OpenAIChatClient(fake.base_url, None, "fake", timeout=5, retries=0), client)
        result = locomo.run(locomo_file, [400], cfg, judge=failing)
        assert failing.errors >= 1


def test_vector_cache_answers_from_disk_and_keys_by_model(tmp_path: Path) -> None:
    from memsched.embed.hashing import HashEmbedder
    from memsched.eval.vcache import CachedEmbedder

    inner = HashEmbedder()
    first = CachedEmbedder(inner, tmp_path)
    texts = ["I painted a sunrise", "我养了一只猫"]
    expected = inner.embed(texts)
    assert (first.embed(texts) == expected).all()
    assert first.misses == 2 and first.hits == 0
    first.save()
    second = CachedEmbedder(inner, tmp_path)
    assert (second.embed(texts[::-1]) == expected[::-1]).all()
    assert second.hits == 2 and second.misses == 0
    second.active = False  # passes through: counts nothing
    second.embed(texts)
    assert second.hits == 2
    other = HashEmbedder(dim=64)
    assert other.model_id != inner.model_id
    assert CachedEmbedder(other, tmp_path).embed(texts).shape == (2, 64)  # never another model's vectors


def test_ablation_systems_by_category(locomo_file: Path, tmp_path: Path) -> None:
    cfg = Config.load(home=tmp_path / "h", embedders="hash")
    records: list[dict] = []
    result = locomo.run(locomo_file, [400], cfg, systems=locomo.ABLATION, records=records)
    per = result["results"]["400"]
    assert set(per) == set(locomo.ABLATION)
    assert per["full memsched"]["by_category"]["single-hop"]["evidence_recall"] == 1.0
    assert len(records) == 3 * len(locomo.ABLATION)
    assert {r["category"] for r in records} == {"multi-hop", "temporal", "single-hop"}


def test_leave_one_out_picks_on_the_other_conversations() -> None:
    from memsched.eval.loo import leave_one_out

    # "tuned" wins on a and b but loses on c; "plain" is steady.
    table = {
        ("tuned", "a"): 1.0,
        ("tuned", "b"): 1.0,
        ("tuned", "c"): 0.0,
        ("plain", "a"): 0.6,
        ("plain", "b"): 0.6,
        ("plain", "c"): 0.6,
    }
    records = [
        {"system": s, "sample": c, "budget": 1000, "recall": r, "category": "single-hop"}
        for (s, c), r in table.items()
        for _ in range(2)
    ]
    out = leave_one_out(records, [1000], default="plain")
    chosen = {f["held_out"]: f["chosen"] for f in out["folds"]}
    # Holding out a: trained on b (tuned 1.0) and c (tuned 0.0) -> 0.5 < 0.6 -> plain.
    assert chosen == {"a": "plain", "b": "plain", "c": "tuned"}
    assert out["loo"]["1000"] == round((0.6 + 0.6 + 0.0) / 3, 4)  # the held-out c scores 0
    assert out["in_sample"]["chosen"] == "tuned" and out["in_sample"]["1000"] == round(2 / 3, 4)
    assert out["default"] == {"1000": 0.6}


def test_eval_cli_runs_on_the_database_url_it_is_given(locomo_file: Path, pg_url: str) -> None:
    import json

    from typer.testing import CliRunner

    from memsched.cli import app
    from memsched.store.postgres import PostgresStore

    args = ["eval", "locomo", "--data", str(locomo_file), "--budget", "400", "--json", "--embedders", "hash"]
    result = CliRunner().invoke(app, [*args, "--database-url", pg_url])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["store"].startswith("postgresql://") and pg_url.split("@")[-1] in data["store"]
    store = PostgresStore(pg_url)
    try:
        assert store.users() == ["conv-test"]  # the sample was imported there, not into a SQLite file
    finally:
        store.close()
    bad = CliRunner().invoke(app, [*args, "--database-url", "sqlite:///x.db"])
    assert bad.exit_code == 1 and "postgresql://" in bad.output
