"""What leaving the speaker names out of the dense query costs on the turn (issue 10).

A question that names a speaker is embedded a second time without the names
(`PagingOptions.dense_speaker_names`, `Pager._dense_vectors`); a question that names none costs
nothing more. One LoCoMo conversation is imported (turn vectors cached in --cache) and bookmarked as
the background jobs would; each question is then paged with the names left out (the default) and
kept, its own vector computed for real each time (MiniLM behind the micro-batcher, as `memsched
serve` runs it). Prints, for the questions that name a speaker, the process CPU and the wall time of
`Pager.retrieve` p50 / p95 either way. Report the load average with it.

    python benchmarks/dense_names_cost.py --data D [--sample 0] [--repeat 2]
"""

from __future__ import annotations

import statistics
import time

from soft_terms_latency import _p, arguments, bookmarked  # the same set-up and percentile

from memsched.eval import locomo


def main() -> None:
    args = arguments(__doc__ or "")
    with bookmarked(args) as (mem, sample):
        ids = {t.external_id for t in mem.store.iter_turns(sample.sample_id) if t.external_id}
        questions = locomo.questions_of(sample.qa, ids)
        out, kept = mem.pager, mem.pager.with_options(dense_speaker_names=True)
        named = [q for q in questions if out._dense_text(sample.sample_id, q.text) is not None]
        for q in named[:3]:  # warm up both paths (caches, the vocabulary, the model)
            for pager in (out, kept):
                pager.retrieve(sample.sample_id, q.text, query_vectors=mem.query_vectors(q.text))
        for _ in range(args.repeat):
            cpu: dict[str, list[float]] = {"names out": [], "names kept": []}
            wall: dict[str, list[float]] = {"names out": [], "names kept": []}
            for q in named:
                for name, pager in (("names out", out), ("names kept", kept)):
                    c0, t0 = time.process_time(), time.perf_counter()
                    pager.retrieve(sample.sample_id, q.text, query_vectors=mem.query_vectors(q.text))
                    cpu[name].append((time.process_time() - c0) * 1000.0)
                    wall[name].append((time.perf_counter() - t0) * 1000.0)
            print(
                f"{sample.sample_id}: {len(named)} of {len(questions)} questions name a speaker; "
                + "; ".join(
                    f"{k}: CPU p50 {statistics.median(cpu[k]):.2f} p95 {_p(cpu[k], 95)} ms,"
                    f" wall p50 {statistics.median(wall[k]):.2f} p95 {_p(wall[k], 95)} ms"
                    for k in cpu
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
