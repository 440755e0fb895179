"""`memsched chat`: a terminal chat with memory, the reply streamed, a dim line saying what memsched did.

It talks to memsched's HTTP API through `memsched.Client`, so the terminal gets exactly what any chat
app gets (the proxy, its streaming, the recall tool loop, the trace). With `--server` that is a running
`memsched serve`; without it, `memsched chat` serves the configured store and upstream itself on a
private loopback port for as long as the chat lasts.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from memsched.cli.common import (
    EmbeddersOption,
    HomeOption,
    StoreOption,
    app,
    console,
    err_console,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.client import Client
from memsched.config import Config
from memsched.errors import ConfigError

EXIT_WORDS = frozenset({"/exit", "/quit", "/q", "/bye", "/退出"})
SIDE_MAX_RECALLED = 5
START_TIMEOUT = 120.0  # the embedders load before the first answer


@contextmanager
def _local_server(cfg: Config) -> Iterator[str]:
    """Serve `cfg` on a free loopback port in a background thread; yields its base URL."""
    import uvicorn

    from memsched.server.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(create_app(cfg), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError("the local memsched service did not start; see the log above")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def side_line(trace: dict[str, Any] | None) -> str:
    """One line on what memsched did for a turn: the mode, signals on, what it paged in, the tokens."""
    if not trace:
        return "memsched: no trace"
    route = trace.get("route") or {}
    parts = [f"mode {route.get('mode', '?')}"]
    signals = [k for k, on in (route.get("signals") or {}).items() if on]
    if signals:
        parts.append("signals " + ",".join(signals))
    for key in ("mood", "strategy"):  # recorded by the companion stages
        label = _label(trace.get(key, route.get(key)))
        if label:
            parts.append(f"{key} {label}")
    selected = trace.get("selected") or []
    if selected:
        shown = [f"{s.get('session_id')}#{s.get('turn_id')}" for s in selected[:SIDE_MAX_RECALLED]]
        more = f" +{len(selected) - SIDE_MAX_RECALLED}" if len(selected) > SIDE_MAX_RECALLED else ""
        parts.append(f"recalled {len(selected)}: {' '.join(shown)}{more}")
    else:
        parts.append("recalled nothing")
    recent = trace.get("recent") or []
    if recent:
        parts.append(f"recent {len(recent)} turns")
    recalls = _recall_calls(trace)
    if recalls:
        parts.append("paged in " + " ".join(recalls))
    tokens = trace.get("tokens") or {}
    if tokens.get("total") is not None:
        parts.append(f"{tokens.get('total')}/{tokens.get('budget', '?')} tokens")
    parts.append(f"trace {str(trace.get('id', ''))[:8]}")
    return " · ".join(parts)


def _label(value: Any) -> str | None:
    """The name of a mood or strategy: a string, a dict's label/name, or a mood's state after the turn."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        if "after" in value:
            return _label(value["after"])
        for key in ("label", "name"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def _recall_calls(trace: dict[str, Any]) -> list[str]:
    """The pages the model read through the `recall` tool loop (an unknown page is marked with !)."""
    llm = trace.get("llm")
    calls = llm.get("recall") if isinstance(llm, dict) else None
    out = []
    for call in calls or []:
        if isinstance(call, dict):
            page = call.get("page_id")
            out.append(f"p{page if page is not None else '?'}{'' if call.get('ok') else '!'}")
    return out


def _lines() -> Iterator[str]:
    stdin = sys.stdin
    while True:
        if stdin.isatty():
            console.print("[bold cyan]you ›[/] ", end="")
        line = stdin.readline()
        if not line:
            return
        yield line.rstrip("\n")


def run_chat(client: Client, user: str, session: str, system: str | None, base_url: str, ui: bool) -> None:
    """The chat loop: read a line, stream the reply, print the side line. Ends at EOF or /exit."""
    console.print(
        Text(f"memsched chat · user {user} · session {session} · /exit to leave", style="dim"),
        highlight=False,
    )
    for line in _lines():
        message = line.strip()
        if not message:
            continue
        if message.lower() in EXIT_WORDS:
            break
        if not sys.stdin.isatty():  # a piped transcript reads better with the messages in it
            console.print(Text(f"you › {message}"), highlight=False)
        stream = client.stream(user, session, message, system_prompt=system)
        console.print("[bold magenta]ai ›[/] ", end="")
        try:
            for delta in stream:
                console.out(delta, end="", highlight=False)
                console.file.flush()
        finally:
            stream.close()
        console.print()
        trace = client.trace(stream.trace_id) if stream.trace_id else None
        side = side_line(trace)
        if ui and trace:
            side += f" · {base_url}/ui/u/{user}/trace/{trace.get('id')}"
        console.print(Text(f"  ↳ {side}", style="dim"), highlight=False, soft_wrap=True)


@app.command()
@reports_errors
def chat(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="Whose memory to use."),
    session: str | None = typer.Option(
        None,
        "--session",
        "-s",
        callback=no_blank_id,
        help="Session id (default: today's date, e.g. 2024-03-02).",
    ),
    system: str | None = typer.Option(None, "--system", help="The persona (system prompt)."),
    server: str | None = typer.Option(
        None, "--server", help="A running memsched service to chat through (default: serve this store here)."
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="MEMSCHED_API_KEY",
        help="Bearer key for --server \\[env: MEMSCHED_API_KEY].",
    ),
    upstream: str | None = typer.Option(
        None, "--upstream", help="Base URL of the reply LLM \\[env: MEMSCHED_UPSTREAM_BASE_URL]."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Upstream model name \\[env: MEMSCHED_UPSTREAM_MODEL]."
    ),
    show_ui_link: bool = typer.Option(
        False, "--ui-links", help="End each side line with the turn's /ui link."
    ),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """Chat in the terminal with memory: each reply streams in, then a dim line shows the mode and what
    memsched recalled for it. Uses the configured upstream (MEMSCHED_UPSTREAM_*) and store."""
    session_id = session or time.strftime("%Y-%m-%d")
    if server:
        with Client(server, api_key=api_key) as client:
            client.health()
            run_chat(client, user, session_id, system, server.rstrip("/"), show_ui_link)
        return
    cfg = load_config(home=home, db=db, embedders=embedders, upstream_base_url=upstream, upstream_model=model)
    if not cfg.upstream_base_url or not cfg.upstream_model:
        raise ConfigError(
            "memsched chat needs a reply LLM: set MEMSCHED_UPSTREAM_BASE_URL and MEMSCHED_UPSTREAM_MODEL"
            " (or --upstream/--model), or chat through a running service with --server URL"
        )
    err_console.print(Text(f"loading memory from {cfg.store_location} …", style="dim"), highlight=False)
    with _local_server(cfg) as base, Client(base) as client:
        run_chat(client, user, session_id, system, base, show_ui_link)
