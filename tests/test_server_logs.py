"""What `memsched serve` writes to its logs at INFO: no text a user said. A real server process on
loopback; a search and a topic forget are requested, then its output is read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import httpx

from memsched.testing.live_server import free_port, wait_serving

SECRETS = ("zorblaxquint", "琥珀麒麟")


def test_the_access_log_keeps_no_search_text_and_no_forgotten_topic(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSCHED_")}
    env.update(MEMSCHED_HOME=str(tmp_path / "home"), MEMSCHED_EMBEDDERS="hash", MEMSCHED_PORT=str(port))
    out = tmp_path / "serve.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memsched.cli import main; main()", "serve"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_serving(proc, base)
            with httpx.Client(base_url=base, timeout=30) as c:
                for text in ("my ex Zorblaxquint", "我前任琥珀麒麟"):
                    r = c.post(
                        "/v1/turns", json={"user": "u", "session_id": "s", "role": "user", "content": text}
                    )
                    assert r.status_code == 201, r.text
                for secret in SECRETS:
                    assert c.get("/v1/users/u/memories", params={"q": secret}).status_code == 200
                    assert c.get(f"/v1/users/u/topics/{quote(secret)}/turns").status_code == 200
                    assert c.delete(f"/v1/users/u/topics/{quote(secret)}").status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    log = out.read_bytes()
    assert b"DELETE /v1/users/u/topics/<redacted>" in log, log.decode(errors="replace")
    assert b"GET /v1/users/u/memories?<redacted>" in log
    for secret in SECRETS:
        for form in (secret, quote(secret), secret.capitalize()):
            assert form.encode() not in log, form
