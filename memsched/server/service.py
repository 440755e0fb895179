"""What the routes share: one `Memory`, one `Scheduler`, the config; and how a route reaches it."""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi import Request

from memsched.config import Config
from memsched.memory import Memory
from memsched.server.ordering import SessionOrder
from memsched.server.upstream import Upstream

TRACE_HEADER = "X-Memsched-Trace-Id"  # every turn's response names its trace (GET /v1/traces/{id})


class Service:
    """The memory, the scheduler and the config behind one running app."""

    def __init__(self, config: Config, memory: Memory | None = None, scheduler: Any = None) -> None:
        from memsched.llm.client import client_from_config
        from memsched.scheduler import Scheduler

        self.config = config
        self.memory = memory or Memory(config)
        # Replies come from the upstream; summaries from memsched's helper LLM (MEMSCHED_LLM_*, which
        # falls back to the upstream), as the configuration documents.
        self.scheduler = scheduler or Scheduler(
            self.memory,
            llm=client_from_config(config, "upstream"),
            summary_llm=client_from_config(config, "helper"),
            # MEMSCHED_WORKERS=0: an API replica that runs no jobs (`memsched worker` processes do).
            start_workers=config.workers > 0,
            workers=max(1, config.workers),
        )
        self.started = time.time()
        from memsched.auth import Keyring

        self.keyring = Keyring(self.memory.store, config.api_keys)
        self._upstream: Upstream | None = None
        self.order = SessionOrder()  # proxied turns of a session, one at a time

    @property
    def upstream(self) -> Upstream | None:
        """The proxy's async upstream client (None without MEMSCHED_UPSTREAM_BASE_URL/_MODEL); made on
        first use, inside the server's event loop."""
        if self._upstream is None:
            self._upstream = Upstream.from_config(self.config)
        return self._upstream

    async def aclose(self) -> None:
        if self._upstream is not None:
            await self._upstream.aclose()
            self._upstream = None

    def warm_up(self) -> None:
        """Load the tokenizer, the embedders and dateparser's tables now, so the first requests do not
        pay for them."""
        from memsched import keywords
        from memsched.text import gloss, timeexpr

        self.memory.counter.count("warm up")
        timeexpr.warm_up()
        self.memory.retriever.embed_query("warm up", only_weighted=False)
        # The bookmark jobs' tables are not needed to answer: loaded beside the first requests; so is
        # the gloss layer's dictionary, which the first Chinese message would otherwise wait for.
        threading.Thread(target=keywords.warm_up, name="memsched-warm-up", daemon=True).start()
        if "gloss" in self.memory.embedders:
            threading.Thread(target=gloss.warm_up, name="memsched-warm-up-gloss", daemon=True).start()

    def close(self) -> None:
        self.scheduler.close()
        self.memory.close()


async def get_service(request: Request) -> Service:
    """The app's `Service` (a FastAPI dependency: `svc: Service = Depends(get_service)`). Async, so
    that FastAPI calls it on the event loop: a plain function would cost every request a round trip
    through the thread pool."""
    service: Service = request.app.state.service
    return service
