"""The `memsched` command line: one module per command group, all registered on `app`."""

from __future__ import annotations

# Importing a command module registers its commands on `app`.
from memsched.cli import bookmarks as _bookmarks  # noqa: F401
from memsched.cli import chat, companion, data, demo, evaluate, jobs, migrate, privacy, serve  # noqa: F401
from memsched.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
