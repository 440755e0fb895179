"""What the proxy adds to a chat call (issue 8): latency through `POST /v1/chat/completions` against the
same request sent straight to the upstream, non-streaming and streaming (time to the first content
chunk), with the default embedders and a user history of `--history` turns.

The upstream is a FakeOpenAI on loopback that answers at once, so the figures are memsched's own
cost: scheduling (context, routing, recording the user turn), the relay, recording the reply and
its embedding, and the trace. Server, upstream and client run in this one process (uvicorn in a
thread), as the end-to-end tests do.

    python benchmarks/proxy_overhead.py [--history 400] [--requests 60] [--embedders minilm,wordllama]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer

TOPICS = [
    "my sister moved to Porto to study marine biology",
    "我最近在学做四川火锅，毛肚要涮七上八下",
    "the band practices jazz standards every Thursday",
    "周末带奶奶去西湖边散步，她很开心",
    "I broke my wrist skateboarding near the harbour",
    "公司新来的同事也喜欢徒步",
]
QUESTIONS = [
    "what does my sister study?",
    "火锅里毛肚怎么涮？",
    "when does the band practice?",
    "奶奶周末去了哪里？",
]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(values, 50), 1),
        "p95_ms": round(pct(values, 95), 1),
        "mean_ms": round(statistics.fmean(values), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--history", type=int, default=400)
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--embedders", default=None)
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="memsched-proxy-") as tmp,
        FakeOpenAI() as fake,
        FakeOpenAI() as helper,
    ):
        cfg = Config.load(
            home=Path(tmp),
            embedders=args.embedders,
            upstream_base_url=fake.base_url,
            upstream_model="fake-model",
            llm_base_url=helper.base_url,
            llm_model="helper",
        )
        with LiveServer(create_app(cfg), timeout=300) as base, httpx.Client(timeout=60) as http:
            for i in range(args.history):
                role = "user" if i % 2 == 0 else "assistant"
                text = f"{TOPICS[i % len(TOPICS)]} (note {i})"
                http.post(
                    f"{base}/v1/turns",
                    json={"user": "u", "session_id": f"old{i // 40}", "role": role, "content": text},
                )
            direct: list[float] = []
            proxied: list[float] = []
            first_chunk: list[float] = []
            streamed: list[float] = []
            p0: list[float] = []
            for i in range(args.requests):
                q = QUESTIONS[i % len(QUESTIONS)]
                messages: list[dict[str, Any]] = [{"role": "user", "content": q}]
                t0 = time.perf_counter()
                http.post(
                    f"{fake.base_url}/chat/completions", json={"model": "fake-model", "messages": messages}
                )
                direct.append((time.perf_counter() - t0) * 1000.0)
                body = {"model": "m", "user": "u", "metadata": {"session_id": "bench"}, "messages": messages}
                t0 = time.perf_counter()
                r = http.post(f"{base}/v1/chat/completions", json=body)
                proxied.append((time.perf_counter() - t0) * 1000.0)
                trace = http.get(f"{base}/v1/traces/{r.headers['X-Memsched-Trace-Id']}").json()
                p0.append(float(trace.get("p0_overhead_ms") or 0.0))
                t0 = time.perf_counter()
                got_first = None
                with http.stream("POST", f"{base}/v1/chat/completions", json={**body, "stream": True}) as s:
                    for line in s.iter_lines():
                        if (
                            got_first is None
                            and line.startswith("data: {")
                            and '"content": "' in line
                            and '"content": ""' not in line
                        ):
                            got_first = (time.perf_counter() - t0) * 1000.0
                streamed.append((time.perf_counter() - t0) * 1000.0)
                first_chunk.append(got_first or streamed[-1])
    overhead = [p - d for p, d in zip(proxied, direct, strict=True)]
    print(
        json.dumps(
            {
                "history_turns": args.history,
                "requests": args.requests,
                "embedders": cfg.embedders,
                "direct_upstream": summary(direct),
                "proxy_non_streaming": summary(proxied),
                "proxy_overhead": summary(overhead),
                "prepare_p0_overhead_from_traces": summary(p0),
                "stream_first_content_chunk": summary(first_chunk),
                "stream_total": summary(streamed),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
