"""`memsched serve`: the HTTP service."""

from __future__ import annotations

from memsched.cli.common import app
