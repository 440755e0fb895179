"""The `memsched` command line: one module per command group, all registered on `app`."""

from __future__ import annotations

from memsched.cli.common import app

# Importing a command module registers its commands on `app`.
from memsched.cli import data, demo, evaluate, serve  # noqa: E402, F401, I001


def main() -> None:
    app()


__all__ = ["app", "main"]
