"""Regenerate the debug UI screenshots in docs/ (docs/ui-*.png), offline.

    .venv/bin/python scripts/ui_screenshots.py [--embedders minilm,wordllama] [--out docs]

It seeds a temporary store with the shipped demo conversation and a few live turns (the reply LLM is
memsched's FakeOpenAI on loopback), serves it, and photographs the pages with the system Chromium
(scripts/setup installs it, with the CJK fonts).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from memsched.client import Client
from memsched.config import Config
from memsched.server.app import Service, create_app
from memsched.server.ui.demo import DEMO_USER, LIVE_TURNS, demo_responder, run_live, seed_history
from memsched.testing import FakeOpenAI, LiveServer
from memsched.testing.browser import chromium, full_page_screenshot

REPLIES = dict(
    zip(
        LIVE_TURNS,
        (
            "是 Blue Heron 呀，永康路上那家爵士酒吧。你们那天点了海鲜饭，还各喝了两杯可乐。要不要提前订位？",
            "Her name is 芝麻 (Sesame) — a British Shorthair, and she hates the vacuum cleaner.",
            "好的，大伟。以后就这么叫你。",
            "You had the second-round interview at the design studio on Thursday, and you were nervous about the portfolio review.",
        ),
        strict=True,
    )
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="minilm,wordllama")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="memsched-shots-") as tmp,
        FakeOpenAI(demo_responder(REPLIES)) as fake,
    ):
        cfg = Config.load(
            home=Path(tmp),
            embedders=args.embedders,
            budget=1000,
            paging_mode="both",  # the bookmark index and the recall tool, so the trace shows the loop
            upstream_base_url=fake.base_url,
            upstream_model="qwen2.5",
        )
        service = Service(cfg)
        seed_history(service.memory)
        service.warm_up()
        with LiveServer(create_app(cfg, service=service, warm_up=False)) as base, Client(base) as client:
            results = run_live(client)
            time.sleep(2)  # let the in-process worker take the queued bookmark jobs
            first, cat = results[0].trace_id, results[1].trace_id
            shots = [
                ("ui-timeline.png", f"/ui/u/{DEMO_USER}?lang=en&trace={first}", 1440, 1000),
                ("ui-trace.png", f"/ui/u/{DEMO_USER}/trace/{cat}?lang=en", 1280, 0),
                ("ui-trace-zh.png", f"/ui/u/{DEMO_USER}/trace/{first}?lang=zh", 1280, 0),
                ("ui-profile-zh.png", f"/ui/u/{DEMO_USER}/profile?lang=zh", 1280, 640),
                ("ui-bookmarks.png", f"/ui/u/{DEMO_USER}/bookmarks?lang=en", 1280, 1000),
            ]
            with chromium(width=1440, height=1000) as driver:
                for name, path, width, height in shots:
                    driver.set_window_size(width, height or 1000)
                    driver.get(base + path)
                    time.sleep(1.0)  # the side panel's fetch
                    if height:
                        args.out.mkdir(parents=True, exist_ok=True)
                        driver.save_screenshot(str(args.out / name))
                    else:
                        full_page_screenshot(driver, args.out / name, width=width, max_height=3400)
                    print(args.out / name)
        service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
