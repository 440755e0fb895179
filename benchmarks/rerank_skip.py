"""How often the cooperative layer's LLM rerank is skipped, over every LoCoMo dev question.

The LLM is memsched's fake OpenAI server on loopback (it answers with the first candidate page), so
this measures the skip rules (confident ranking, session cache, direct query patterns), not a
model. Rule bookmarks are generated first, as the P2 jobs would. Prints JSON.

    python benchmarks/rerank_skip.py --data ../shared/data/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.eval.locomo import QUESTION_SESSION, questions_of
from memsched.importers import read_locomo
from memsched.llm.client import OpenAIChatClient, llm_calls, reset_llm_calls
from memsched.memory import Memory
from memsched.paging import Pager
from memsched.testing import FakeOpenAI


def responder(body: dict[str, Any]) -> str:
    text = str(body["messages"][-1]["content"])
    pages = re.findall(r"\[p(\d+)\]", text)
    if pages:
        return f"p{pages[0]}"
    if "Question:" in text:  # a decomposition request: answer with the question itself
        return json.dumps({"queries": [text.split("Question:", 1)[1].strip().splitlines()[0]]})
    return "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(responder) as fake:
        mem = Memory(Config.load(home=Path(tmp)))
        work = []
        for sample in read_locomo(args.data):
            mem.add_many(sample.turns, index=False)
            mem.index(sample.sample_id)
            generate_bookmarks(mem, sample.sample_id)
            ext = {t.external_id for t in sample.turns}
            work += [(sample.sample_id, q.text) for q in questions_of(sample.qa, ext)]
        pager = Pager(mem, llm=OpenAIChatClient(fake.base_url, None, "fake", timeout=5))
        reset_llm_calls()
        for user, question in work:
            pager.retrieve(user, question, session_id=QUESTION_SESSION)
        calls = llm_calls()
        mem.close()
    reranks = calls.get("rerank", 0)
    print(
        json.dumps(
            {
                "benchmark": "rerank_skip",
                "questions": len(work),
                "llm_calls": calls,
                "rerank_called_share": round(reranks / len(work), 3),
                "rerank_skipped_share": round(1 - reranks / len(work), 3),
                "outcomes": dict(pager.stats),
            }
        )
    )


if __name__ == "__main__":
    main()
