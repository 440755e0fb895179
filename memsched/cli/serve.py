"""`memsched serve`: the HTTP service — OpenAI-compatible proxy and scheduler endpoints."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from memsched.cli.common import (
    EmbeddersOption,
    HomeOption,
    StoreOption,
    app,
    console,
    load_config,
    reports_errors,
)
from memsched.config import Config
from memsched.errors import InputError


@app.command()
@reports_errors
def serve(
    host: str | None = typer.Option(None, "--host", help="Address to listen on \\[env: MEMSCHED_HOST]."),
    port: int | None = typer.Option(None, "--port", "-p", help="Port \\[env: MEMSCHED_PORT]."),
    workers: int | None = typer.Option(
        None, "--workers", help="Background job threads in this process \\[env: MEMSCHED_WORKERS]."
    ),
    upstream: str | None = typer.Option(
        None,
        "--upstream",
        help="Base URL of the reply LLM, e.g. http://127.0.0.1:11434/v1 \\[env: MEMSCHED_UPSTREAM_BASE_URL].",
    ),
    model: str | None = typer.Option(
        None, "--model", help="Upstream model name \\[env: MEMSCHED_UPSTREAM_MODEL]."
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Run the service on the embedded SQLite store (point your OpenAI SDK at http://HOST:PORT/v1)."""
    import uvicorn

    from memsched.server.access_log import uvicorn_log_config
    from memsched.server.app import TURN_THREADS, create_app

    level = log_level.strip().lower()
    if level not in LOG_LEVELS:
        raise InputError(f"--log-level must be {', '.join(LOG_LEVELS)}, got {log_level!r}")
    cfg = load_config(
        home=home,
        db=db,
        embedders=embedders,
        host=host,
        port=port,
        workers=workers,
        upstream_base_url=upstream,
        upstream_model=model,
    )
    check_listen_and_embedders(cfg)
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cfg = loopback_unless_keys(cfg)
    console.print(
        f"memsched serving [bold]{cfg.store_location}[/] on http://{cfg.host}:{cfg.port} "
        f"(upstream: {cfg.upstream_base_url or 'none — /v1/context and /v1/turns only'})"
    )
    # This process is the server's alone: the heap loaded at start is frozen out of the collector,
    # the event loop gets the threads concurrent turns need, and the embedding dispatcher a CPU of
    # its own (set before any thread starts: the threads made later inherit the main thread's CPUs).
    if cfg.embed_core:
        from memsched import affinity

        affinity.reserve()
    app = create_app(cfg, freeze_heap=True, turn_threads=TURN_THREADS)
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=level, log_config=uvicorn_log_config())


LOOPBACK = ("127.0.0.1", "::1", "localhost")
LOG_LEVELS = ("debug", "info", "warning", "error")


def check_listen_and_embedders(cfg: Config) -> None:
    """What the server would otherwise find out only while starting (a traceback from the socket or
    from the app's startup): a port out of range, an embedder name that does not exist."""
    from memsched.embed.base import available

    if not 0 < cfg.port < 65536:
        raise InputError(f"--port (or MEMSCHED_PORT) must be between 1 and 65535, got {cfg.port}")
    known = available()
    unknown = [n for n in cfg.embedder_names if n not in known]
    if unknown:
        raise InputError(
            f"--embedders (or MEMSCHED_EMBEDDERS): unknown embedder {unknown[0]!r}; choose from {', '.join(known)}"
        )


def loopback_unless_keys(cfg: Config) -> Config:
    """Without any API key the service must not be reachable from other hosts: it then listens on
    127.0.0.1 whatever MEMSCHED_HOST says, and says so."""
    from memsched.auth import Keyring
    from memsched.store import open_store

    store = open_store(cfg)
    try:
        keyed = Keyring(store, cfg.api_keys).configured()
    finally:
        store.close()
    if keyed:
        from memsched.server.identity import OPEN_PATHS

        open_paths = ", ".join([*OPEN_PATHS, "/docs"])
        console.print(
            f"API keys configured: every request needs Authorization: Bearer <key> but {open_paths}",
            highlight=False,
        )
        return cfg
    if cfg.host not in LOOPBACK:
        console.print(
            f"[yellow]no API keys configured: listening on 127.0.0.1 only, not {cfg.host}[/]; set"
            " MEMSCHED_API_KEYS=tenant:key or run `memsched keys add TENANT` to serve other hosts"
        )
        return cfg.replace(host="127.0.0.1")
    console.print("no API keys configured: loopback only, no authentication")
    return cfg
