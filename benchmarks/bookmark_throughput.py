"""Rule-fallback bookmark generation throughput: pages of 20 turns per second on one core.

Imports a LoCoMo file (English) and memsched's bilingual demo conversation (Chinese) into a temporary
store with the hashing embedder (so model time is not counted, only what bookmark generation does:
term statistics, topic segmentation, keyword extraction, aliases, summary, storing, indexing),
warms jieba, then times `generate_bookmarks(..., embed=False)` single-threaded. Prints JSON.

    python benchmarks/bookmark_throughput.py --data ../shared/data/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from importlib import resources
from pathlib import Path

from memsched import bookmarks
from memsched.bookmarks import generate_bookmarks
from memsched.config import Config
from memsched.embed.hashing import HashEmbedder
from memsched.importers import read_jsonl, read_locomo
from memsched.keywords import extract_keywords
from memsched.memory import Memory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="a LoCoMo JSON file (English pages)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs; the best is reported")
    args = ap.parse_args()
    extract_keywords(["预热 jieba 分词 warm up"])  # loads jieba's dictionaries outside the timing
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config.load(home=Path(tmp), embedders="hash")
        mem = Memory(cfg, embedders={"hash": HashEmbedder()})
        users: dict[str, str] = {}
        if args.data is not None:
            for sample in read_locomo(args.data):
                mem.add_many(sample.turns)
                users[sample.sample_id] = "en"
        demo = resources.files("memsched.data").joinpath("demo_conversation.jsonl")
        with resources.as_file(demo) as path:
            for batch in read_jsonl(path, "demo-zh"):
                mem.add_many(batch)
        users["demo-zh"] = "zh"
        results: dict[str, dict[str, float]] = {}
        for lang in sorted(set(users.values())):
            best = float("inf")
            pages = 0
            for _ in range(args.repeat):
                for uid, ulang in users.items():
                    if ulang == lang:
                        mem.store.delete_bookmarks(uid)
                bookmarks._stats_cache.clear()  # term statistics are rebuilt inside the timing
                t0 = time.process_time()  # CPU time of this process: "per core"
                pages = 0
                for uid, ulang in users.items():
                    if ulang == lang:
                        run = generate_bookmarks(mem, uid, embed=False)
                        pages += run.trace["pages"]
                best = min(best, time.process_time() - t0)
            results[lang] = {"pages": pages, "seconds": round(best, 3), "pages_per_s": round(pages / best, 1)}
        total_pages = sum(r["pages"] for r in results.values())
        total_s = sum(r["seconds"] for r in results.values())
        print(
            json.dumps(
                {
                    "benchmark": "bookmark_throughput",
                    "page_size": mem.store.page_size,
                    "by_language": results,
                    "pages_per_s_per_core": round(total_pages / total_s, 1),
                }
            )
        )
        mem.close()


if __name__ == "__main__":
    main()
