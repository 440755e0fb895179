"""What the soft-term layer (memsched.vocab) costs on the turn: `Pager.retrieve` with it on and off.

One LoCoMo conversation is imported (turn vectors cached in --cache), bookmarked and its vocabulary
embedded as the background jobs would; then each of its questions is paged with the layer on and
off (MiniLM behind the micro-batcher, query words embedded for real). Prints p50 / p95 in ms of the
whole paging and of the layer's own stage, and the vocabulary size. Report the load average with it.

    python benchmarks/soft_terms_latency.py --data D [--sample 0] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.embed.batch import MicroBatcher
from memsched.eval import locomo
from memsched.eval.vcache import CachedEmbedder
from memsched.importers import LocomoSample, read_locomo
from memsched.memory import Memory
from memsched.paging import Pager


def _p(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(pct / 100 * len(ordered)))], 2)


def arguments(doc: str) -> argparse.Namespace:
    """The options shared by the per-question paging benchmarks over one LoCoMo conversation."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "memsched-eval")
    return ap.parse_args()


@contextmanager
def bookmarked(args: argparse.Namespace) -> Iterator[tuple[Memory, LocomoSample]]:
    """One LoCoMo conversation imported (turn vectors cached in --cache), indexed and bookmarked as
    the background jobs would, in a temporary store; from then on every vector is computed for real
    (MiniLM behind the micro-batcher, as `memsched serve` runs it)."""
    cfg = Config.load()
    cached = [CachedEmbedder(embed_base.create(n, cfg), args.cache) for n in cfg.embedder_names]
    embedders = {n: MicroBatcher(c) for n, c in zip(cfg.embedder_names, cached, strict=True)}
    sample = read_locomo(args.data)[args.sample]
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(cfg.replace(db=Path(tmp) / "bench.db"), embedders=embedders)  # type: ignore[arg-type]
        try:
            mem.add_many(sample.turns, index=False)
            mem.index(sample.sample_id)
            generate_bookmarks(mem, sample.sample_id)
            for c in cached:
                c.save()
                c.active = False  # the questions' vectors (and words) are computed for real
            yield mem, sample
        finally:
            mem.close()


def time_pagers(
    label: str,
    user_id: str,
    sides: Sequence[tuple[str, Pager]],
    questions: Sequence[locomo.Question],
    vectors_of: Callable[[str], Any],
    repeat: int,
) -> None:
    """Page every question with each named pager, `repeat` passes; print each side's process CPU and
    wall time of `Pager.retrieve` p50 / p95 per pass. `vectors_of(text)` (the query's vectors) is
    called inside the timed call, so a side that computes them pays for it."""
    for _ in range(repeat):
        cpu: dict[str, list[float]] = {k: [] for k, _ in sides}
        wall: dict[str, list[float]] = {k: [] for k, _ in sides}
        for q in questions:
            for key, pager in sides:
                c0, t0 = time.process_time(), time.perf_counter()
                pager.retrieve(user_id, q.text, query_vectors=vectors_of(q.text))
                cpu[key].append((time.process_time() - c0) * 1000.0)
                wall[key].append((time.perf_counter() - t0) * 1000.0)
        print(
            f"{label}: "
            + "; ".join(
                f"{k}: CPU p50 {statistics.median(cpu[k]):.2f} p95 {_p(cpu[k], 95)} ms,"
                f" wall p50 {statistics.median(wall[k]):.2f} p95 {_p(wall[k], 95)} ms"
                for k in cpu
            ),
            flush=True,
        )


def main() -> None:
    args = arguments(__doc__ or "")
    with bookmarked(args) as (mem, sample):
        model = next(iter(mem.embedders.values())).model_id
        vocab = len(mem.store.term_vectors(sample.sample_id, model)[0])
        ids = {t.external_id for t in mem.store.iter_turns(sample.sample_id)}
        questions = locomo.questions_of(sample.qa, ids)
        on, off = mem.pager, mem.pager.with_options(terms=False)
        for _ in range(args.repeat):
            times: dict[str, list[float]] = {"paging, layer on": [], "paging, layer off": [], "layer": []}
            for q in questions:
                qvecs = mem.retriever.embed_query(q.text)
                for name, pager in (("paging, layer on", on), ("paging, layer off", off)):
                    t0 = time.perf_counter()
                    result = pager.retrieve(sample.sample_id, q.text, query_vectors=qvecs)
                    times[name].append((time.perf_counter() - t0) * 1000.0)
                    if pager is on:
                        times["layer"].append(result.timings_ms.get("terms", 0.0))
            print(
                f"{sample.sample_id}: {len(questions)} questions, vocabulary {vocab} terms; "
                + "; ".join(
                    f"{k} p50 {statistics.median(v):.2f} p95 {_p(v, 95)} ms" for k, v in times.items()
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
