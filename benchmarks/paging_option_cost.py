"""What one paging option costs on the turn: `Pager.retrieve` with the default options against the
same pager with one option changed, question by question on one LoCoMo conversation (issue 10).

The conversation is imported (turn vectors cached in --cache) and bookmarked as the background jobs
would; each question's vectors are computed once beforehand (MiniLM), so both sides page from the
same vectors and the figures are the paging's own CPU. Prints the process CPU and the wall time of
`Pager.retrieve` p50 / p95 either way, for each of --repeat passes. Report the load average with it.

    python benchmarks/paging_option_cost.py --data D --option thread_decay=0 [--sample 0] [--repeat 2]
"""

from __future__ import annotations

import sys
from typing import Any

from soft_terms_latency import arguments, bookmarked, time_pagers  # the same set-up and timing

from memsched.eval import locomo


def _option() -> tuple[str, Any]:
    """--option NAME=VALUE, taken off argv before the shared arguments are parsed."""
    if "--option" not in sys.argv:
        raise SystemExit("--option NAME=VALUE is required (e.g. --option thread_decay=0)")
    i = sys.argv.index("--option")
    name, _, raw = sys.argv[i + 1].partition("=")
    del sys.argv[i : i + 2]
    value: Any = {"true": True, "false": False}.get(raw.lower())
    if value is None:
        value = int(raw) if raw.lstrip("-").isdigit() else float(raw)
    return name, value


def main() -> None:
    name, value = _option()
    args = arguments(__doc__ or "")
    with bookmarked(args) as (mem, sample):
        ids = {t.external_id for t in mem.store.iter_turns(sample.sample_id) if t.external_id}
        questions = locomo.questions_of(sample.qa, ids)
        default, changed = mem.pager, mem.pager.with_options(**{name: value})
        vectors = {q.text: dict(mem.query_vectors(q.text)) for q in questions}
        sides = (("default", default), (f"{name}={value}", changed))
        for q in questions[:3]:  # warm up both paths (caches, the vocabulary, the term vectors)
            for _, pager in sides:
                pager.retrieve(sample.sample_id, q.text, query_vectors=vectors[q.text])
        time_pagers(
            f"{sample.sample_id}, {len(questions)} questions",
            sample.sample_id,
            sides,
            questions,
            vectors.__getitem__,  # computed once beforehand: both sides page from the same vectors
            args.repeat,
        )


if __name__ == "__main__":
    main()
