"""What the server's logs may show of a request: its method, its path with ids, its status; not what a
user said. A query string carries search text (`/v1/users/u/memories?q=...`) and a topic forget's path
names the topic (`DELETE /v1/users/u/topics/...`): uvicorn's access log at INFO kept both, so the words
a forget had just deleted from the database stayed in the log (SECURITY.md: nothing a user said is
logged at INFO or above).
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

REDACTED = "<redacted>"
# A path segment that is text a user said, not an id: the topic of a topic forget or its preview.
_SAID_IN_PATH = re.compile(r"(/topics/)[^/?]+")


def redact_request_path(path: str) -> str:
    """`path` (with any query string) as a log may show it."""
    path, sep, _ = path.partition("?")
    return _SAID_IN_PATH.sub(rf"\1{REDACTED}", path) + (f"?{REDACTED}" if sep else "")


class RedactedAccessLog(logging.Filter):
    """On uvicorn's access log: its records' arguments are (client, method, path, http version,
    status); the path is redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5:
            record.args = (args[0], args[1], redact_request_path(str(args[2])), args[3], args[4])
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging setup with the access log redacted (`uvicorn.run(log_config=...)`)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["memsched_redact"] = {"()": RedactedAccessLog}
    config["handlers"]["access"]["filters"] = ["memsched_redact"]
    return config
