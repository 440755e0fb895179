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

from soft_terms_latency import arguments, bookmarked, time_pagers  # the same set-up and timing

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
        time_pagers(
            f"{sample.sample_id}: {len(named)} of {len(questions)} questions name a speaker",
            sample.sample_id,
            (("names out", out), ("names kept", kept)),
            named,
            mem.query_vectors,  # computed for real on each call, as a turn does
            args.repeat,
        )


if __name__ == "__main__":
    main()
