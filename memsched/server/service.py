"""What the routes share: one `Memory`, one `Scheduler`, the config; and how a route reaches it."""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi import Request

from memsched.config import Config
from memsched.memory import Memory
from memsched.server.errors import ApiError
from memsched.server.ordering import SessionOrder
from memsched.server.upstream import Upstream

TRACE_HEADER = "X-Memsched-Trace-Id"  # every turn's response names its trace (GET /v1/traces/{id})


def require_session(memory: Memory, uid: str, user: str, session_id: str) -> None:
    """A 404 unless user `uid` (`user` as the request named it) has the session: a session a request
    names, in its path or as a `session_id` filter, is a resource, and a misspelt one is not an
    empty list. Reads the store: call it in a worker thread."""
    memory.require_user(uid)
    if not any(s.id == session_id for s in memory.store.sessions(uid)):
        raise ApiError(404, f"user {user!r} has no session {session_id!r}", "not_found_error", "no_session")


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

    def warm_up(self, *, freeze_heap: bool = False) -> None:
        """Load the tokenizer, the embedders and dateparser's tables now, so the first requests do not
        pay for them.

        `freeze_heap` (the `memsched serve` process, which owns its interpreter): once the tables
        loaded in the background are in, move everything loaded so far out of the garbage
        collector's reach (`gc.freeze`). The models, dictionaries and tables are ~250,000 objects
        that never become garbage, and every full collection walked them all: ~40-100 ms of CPU
        with the GIL held, which every turn in flight waited for (BENCHMARKS.md "Proxy
        throughput", session 18)."""
        from memsched import keywords
        from memsched.text import common, en_names, gloss, places, timeexpr

        self.memory.counter.count("warm up")
        timeexpr.warm_up()
        self.memory.retriever.embed_query("warm up", only_weighted=False)
        # The bookmark jobs' tables are not needed to answer: loaded beside the first requests; so is
        # the gloss layer's dictionary, which the first Chinese message would otherwise wait for.
        loaders = [threading.Thread(target=keywords.warm_up, name="memsched-warm-up", daemon=True)]
        # The known-place gazetteer of the profile rules ("我是成都人", "I'm in Lisbon now").
        loaders.append(threading.Thread(target=places.warm_up, name="memsched-warm-up-places", daemon=True))
        # What an English word after "I'm" may be besides a name ("I'm Portuguese", "I'm Lost").
        loaders.append(threading.Thread(target=en_names.warm_up, name="memsched-warm-up-names", daemon=True))
        # The general word frequencies that keep a question's common words out of its lexical layers.
        loaders.append(threading.Thread(target=common.warm_up, name="memsched-warm-up-common", daemon=True))
        if "gloss" in self.memory.embedders:
            loaders.append(threading.Thread(target=gloss.warm_up, name="memsched-warm-up-gloss", daemon=True))
        warm_pieces = getattr(self.memory.embedders.get("minilm"), "warm_up_background", None)
        if self.scheduler.worker is not None and warm_pieces is not None:
            # The in-process workers' MiniLM pieces (split once per export), not in their first job.
            loaders.append(threading.Thread(target=warm_pieces, name="memsched-warm-up-pieces", daemon=True))
        for loader in loaders:
            loader.start()
        if freeze_heap:
            threading.Thread(
                target=_freeze_after, args=(loaders,), name="memsched-warm-up-gc", daemon=True
            ).start()

    def close(self) -> None:
        self.scheduler.close()
        self.memory.close()


def _freeze_after(loaders: list[threading.Thread]) -> None:
    """Wait for the background loaders, collect once, then freeze what is left (see `warm_up`)."""
    import gc

    for loader in loaders:
        loader.join()
    gc.collect()
    gc.freeze()


async def get_service(request: Request) -> Service:
    """The app's `Service` (a FastAPI dependency: `svc: Service = Depends(get_service)`). Async, so
    that FastAPI calls it on the event loop: a plain function would cost every request a round trip
    through the thread pool."""
    service: Service = request.app.state.service
    return service
