"""`memsched demo`: the first thing to run — what memsched pages in versus a sliding window."""

from __future__ import annotations

from memsched.cli.common import app
