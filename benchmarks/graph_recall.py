"""How much of the exact top k the graph search finds (BENCHMARKS.md, "Scale").

Opens a SQLite store whose user has an on-disk graph (`Retriever.update_graphs`, e.g. the one user
of `scale.py --home H`: `--db H/one/memsched.db --user solo`) and, per model, compares the
graph-mode search (graph + exact tail, `memsched.vectors`) with the exact search over all the
user's vectors, for queries near stored vectors (a stored vector plus noise) and random ones.

- id recall@k: the share of the exact top-k turn ids the graph search returns. Synthetic histories
  repeat texts, so many turns share a vector; ties may be filled by other turns of the same score.
- score recall@k: the share of returned hits scoring at least the exact k-th score (less 0.002,
  the float16 error), i.e. as good as a hit the exact search would return.

    python benchmarks/graph_recall.py --db /tmp/scale/one/memsched.db --user solo
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.store import open_store
from memsched.vectors import VectorIndex, open_graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--user", default="solo")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", default="10,50,200")
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    store = open_store(args.db)
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {}
    config = Config.load()
    models = [embed_base.create(name, config).model_id for name in config.embedder_names]
    for model in models:
        path = store.vector_graph_path(args.user, model)
        opened = open_graph(path) if path is not None else None
        if opened is None:
            continue
        ids, matrix, _ = store.load_vectors(args.user, model)
        exact = VectorIndex(ann_threshold=1 << 62)
        exact.add(ids, matrix)
        graph = VectorIndex()
        graph.attach_graph(opened[0], opened[1], opened[3])
        graph.add(ids, matrix)
        picks = matrix[rng.choice(len(matrix), args.queries)]
        near = picks + rng.standard_normal(picks.shape).astype(np.float32) * 0.05
        far = rng.standard_normal(picks.shape).astype(np.float32)
        row: dict[str, float] = {
            "vectors": len(ids),
            "graph_nodes": len(opened[0]),
            "covered": len(opened[3]),
            "tail": len(graph.ids),
        }
        for name, qs in (("near", near), ("random", far)):
            qs = qs / np.linalg.norm(qs, axis=1, keepdims=True)
            for k in ks:
                id_rec, score_rec, t_exact, t_graph = [], [], 0.0, 0.0
                for q in qs:
                    c = time.process_time()
                    want = exact.search(q, k)
                    t_exact += time.process_time() - c
                    c = time.process_time()
                    got = graph.search(q, k)
                    t_graph += time.process_time() - c
                    id_rec.append(len({h.turn_id for h in got} & {h.turn_id for h in want}) / len(want))
                    floor = want[-1].score - 0.002
                    score_rec.append(sum(h.score >= floor for h in got) / len(want))
                row[f"{name}_id_recall@{k}"] = round(float(np.mean(id_rec)), 4)
                row[f"{name}_score_recall@{k}"] = round(float(np.mean(score_rec)), 4)
                row[f"{name}_cpu_ms@{k}"] = {
                    "exact": round(t_exact / len(qs) * 1000, 2),
                    "graph": round(t_graph / len(qs) * 1000, 2),
                }  # type: ignore[assignment]
        out[model] = row
        print(json.dumps({model: row}), flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
