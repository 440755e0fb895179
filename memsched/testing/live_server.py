"""Run an ASGI app (e.g. `memsched.server.create_app(...)`) with uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from typing import Any

import httpx
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_serving(proc: subprocess.Popen[Any], base_url: str, timeout: float = 120.0) -> None:
    """Wait until the server process `proc` (e.g. `memsched serve`) answers `base_url`/healthz;
    AssertionError, with what it wrote to a piped stderr, when it ends or the timeout passes first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read() if proc.stderr is not None and proc.poll() is not None else ""
            raise AssertionError(f"the server at {base_url} did not come up (exit {proc.poll()}): {err!r}")
        time.sleep(0.1)


class LiveServer:
    """`with LiveServer(app) as base_url: ...` — a real HTTP server; it waits for `/healthz` to answer."""

    def __init__(self, app: Any, *, health_path: str = "/healthz", timeout: float = 60.0) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._health = health_path
        self._timeout = timeout

    def start(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base_url + self._health, timeout=5).status_code == 200:
                    return self.base_url
            except httpx.TransportError:
                pass
            if not self._thread.is_alive():
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the server on {self.base_url} did not come up")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
