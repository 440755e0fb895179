from __future__ import annotations

from pathlib import Path

from memsched.config import Config
from memsched.eval import locomo
from memsched.eval.judge import Judge
from memsched.llm.client import OpenAIChatClient
from memsched.testing import Fail, FakeOpenAI


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
