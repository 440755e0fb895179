"""Tenants and API keys: every route of the app, enumerated (so a new endpoint cannot escape), is called
with another tenant's key and must neither show nor change the first tenant's data; without a key every
route but the open ones is a 401. Keys are stored hashed and never appear in reprs or logs."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route
from typer.testing import CliRunner

from memsched.auth import Keyring, new_key, parse_env_keys
from memsched.cli import app as cli
from memsched.cli.serve import loopback_unless_keys
from memsched.config import Config
from memsched.errors import ConfigError
from memsched.server.app import create_app
from memsched.server.identity import OPEN_PATHS, OPEN_PREFIXES, UI_OPEN, UI_PREFIX
from memsched.store import open_store
from memsched.testing import FakeOpenAI, LiveServer

ACME = "acme-key-0123456789abcdef"
GLOBEX = "globex-key-0123456789abcdef"
CANARY = "zephyrquill 7391482605 glimmerfjord"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def keyed(tmp_path: Path, fake: FakeOpenAI) -> Iterator[tuple[str, Any]]:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        page_size=4,
        llm_timeout=5.0,
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        api_keys=f"acme:{ACME},globex:{GLOBEX}",
    )
    app = create_app(cfg)
    with LiveServer(app) as base:
        yield base, app


def _seed(base: str) -> dict[str, str]:
    """acme's user bob says the canary; returns the ids other tenants will try."""
    body = {
        "model": "m",
        "user": "bob",
        "metadata": {"session_id": "s1"},
        "messages": [{"role": "user", "content": f"my locker code is {CANARY}"}],
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, headers=_auth(ACME), timeout=30)
    assert r.status_code == 200, r.text
    trace_id = r.headers["X-Memsched-Trace-Id"]
    turns = httpx.get(f"{base}/v1/users/bob/sessions/s1/turns", headers=_auth(ACME)).json()["turns"]
    return {
        "user": "bob",
        "session_id": "s1",
        "trace_id": trace_id,
        "turn_id": str(turns[0]["id"]),
        # The pass-through of other /v1 paths, on a path of memsched's own: refused, never relayed.
        "path": "users/bob/secrets",
    }


def _routes(app: Any) -> list[tuple[str, str]]:
    """(method, path template) of every route and mount of the app."""
    out: list[tuple[str, str]] = []

    def walk(routes: list[BaseRoute], prefix: str = "") -> None:
        for route in routes:
            if hasattr(route, "original_router"):  # FastAPI's included router
                walk(route.original_router.routes, prefix)
            elif isinstance(route, Mount):
                out.append(("GET", prefix + route.path + "/x"))
            elif isinstance(route, Route) or hasattr(route, "methods"):
                for method in sorted(getattr(route, "methods", None) or {"GET"}):
                    if method != "HEAD":
                        # The schema names a path parameter without its converter ({model:path} -> {model}).
                        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", prefix + route.path)  # type: ignore[attr-defined]
                        out.append((method, path))

    walk(app.routes)
    # Every path of the API schema is among them (a route mounted some other way would show here).
    documented = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    assert documented <= set(out), documented - set(out)
    return out


def _fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: ids.get(m.group(1), "x"), path)


def _is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or path.startswith(UI_OPEN)


def _call(base: str, method: str, path: str, key: str | None, ids: dict[str, str]) -> httpx.Response:
    body = {
        "user": ids["user"],
        "session_id": ids["session_id"],
        "message": "what is my locker code?",
        "content": "what is my locker code?",
        "role": "user",
        "model": "m",
        "messages": [{"role": "user", "content": "what is my locker code?"}],
        "metadata": {"session_id": ids["session_id"]},
    }
    params = {"q": "zephyrquill locker", "user": ids["user"], "limit": "5"}
    return httpx.request(
        method,
        base + _fill(path, ids),
        params=params,
        json=body if method in ("POST", "PUT", "PATCH") else None,
        headers=_auth(key) if key else {},
        timeout=30,
    )


def test_every_route_keeps_tenants_apart(keyed: tuple[str, Any]) -> None:
    base, app = keyed
    ids = _seed(base)
    routes = _routes(app)
    assert ("DELETE", "/v1/users/{user}") in routes and ("GET", "/v1/traces/{trace_id}") in routes
    for method, path in routes:
        r = _call(base, method, path, GLOBEX, ids)
        where = f"{method} {path} -> {r.status_code}"
        assert r.status_code < 500, where
        assert "zephyrquill" not in r.text and "acme/" not in r.text, where
    # Nothing of acme's changed: bob, his turn and his trace are all still there for acme.
    own = httpx.get(f"{base}/v1/traces/{ids['trace_id']}", headers=_auth(ACME))
    assert own.status_code == 200 and own.json()["user_id"] == "acme/bob"
    turns = httpx.get(f"{base}/v1/users/bob/sessions/s1/turns", headers=_auth(ACME)).json()["turns"]
    assert any("zephyrquill" in t["content"] for t in turns)


def test_every_route_but_the_open_ones_needs_a_key(keyed: tuple[str, Any]) -> None:
    base, app = keyed
    ids = {"user": "bob", "session_id": "s1", "trace_id": "t", "turn_id": "1"}
    for method, path in _routes(app):
        for key in (None, "not-a-key", "msk-000000000000-forged"):
            r = _call(base, method, path, key, ids)
            if path == "/ui/login":  # the UI's login form: a wrong key is its own 401 page
                assert "text/html" in r.headers["content-type"], f"{method} {path}"
            elif _is_open(path):
                assert r.status_code != 401, f"{method} {path}"
            elif path == UI_PREFIX or path.startswith(UI_PREFIX + "/"):
                # A browser cannot send the header: the UI's pages send it to the login form instead.
                assert r.status_code == 303, f"{method} {path} with {key!r} -> {r.status_code}"
                assert r.headers["location"].startswith("/ui/login?next=")
            else:
                assert r.status_code == 401, f"{method} {path} with {key!r} -> {r.status_code}"
                err = r.json()["error"]
                assert (err["code"] == "invalid_api_key" and (key or "") not in err["message"]) or not key


def test_tenants_see_their_own_users_by_their_own_names(keyed: tuple[str, Any]) -> None:
    base, _ = keyed
    _seed(base)
    other = httpx.get(f"{base}/v1/users/bob/sessions", headers=_auth(GLOBEX))
    # Named as the caller names it: the message said "unknown user 'globex/bob'", the stored id.
    assert other.status_code == 404 and "unknown user 'bob'" in other.json()["error"]["message"]
    sessions = httpx.get(f"{base}/v1/users/bob/sessions", headers=_auth(ACME))
    assert sessions.status_code == 200 and sessions.json()[0]["id"] == "s1"
    jobs = httpx.get(f"{base}/v1/jobs", headers=_auth(GLOBEX)).json()
    assert all(not str(j["user_id"]).startswith("acme/") for j in jobs)
    metrics = httpx.get(f"{base}/metrics").text  # open, and without user data
    assert "bob" not in metrics and "zephyrquill" not in metrics
    gone = httpx.delete(f"{base}/v1/users/bob", headers=_auth(GLOBEX))
    assert gone.status_code == 404
    gone = httpx.delete(f"{base}/v1/users/bob", headers=_auth(ACME))
    assert gone.status_code == 200 and gone.json()["turns"] >= 2
    assert httpx.get(f"{base}/v1/users/bob/sessions", headers=_auth(ACME)).status_code == 404


def test_stored_keys_are_hashed_revocable_and_never_shown(tmp_path: Path) -> None:
    home = tmp_path / "h"
    runner = CliRunner()
    result = runner.invoke(cli, ["keys", "add", "acme", "--home", str(home)])
    assert result.exit_code == 0, result.output
    key = result.stdout.strip().splitlines()[-1]
    assert key.startswith("msk-")
    store = open_store(Config.load(home=home))
    try:
        ring = Keyring(store)
        assert ring.configured()
        principal = ring.verify(key)
        assert principal is not None and principal.tenant == "acme"
        assert ring.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
        secret = key.split("-", 2)[2]
        listed = runner.invoke(cli, ["keys", "list", "--home", str(home)])
        assert principal.key_id in listed.stdout and secret not in listed.stdout
        assert runner.invoke(cli, ["keys", "revoke", principal.key_id, "--home", str(home)]).exit_code == 0
        assert ring.verify(key) is None
    finally:
        store.close()
    raw = b"".join(p.read_bytes() for p in home.iterdir() if p.is_file())
    assert secret.encode() not in raw


def test_without_keys_the_service_listens_on_loopback_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = Config.load(home=tmp_path / "a", host="0.0.0.0")
    assert loopback_unless_keys(cfg).host == "127.0.0.1"
    keyed = Config.load(home=tmp_path / "b", host="0.0.0.0", api_keys=f"acme:{ACME}")
    assert loopback_unless_keys(keyed).host == "0.0.0.0"
    # It said only "/healthz is open"; the metrics and the API schema are open too (README, SECURITY.md).
    said = " ".join(capsys.readouterr().out.split())
    assert "/healthz, /metrics, /openapi.json, /docs" in said
    store = open_store(Config.load(home=tmp_path / "c"))
    try:
        new_key(store, "acme")
    finally:
        store.close()
    assert loopback_unless_keys(Config.load(home=tmp_path / "c", host="0.0.0.0")).host == "0.0.0.0"


def test_secrets_stay_out_of_reprs_and_errors() -> None:
    cfg = Config.load(
        upstream_api_key="sk-upstream-secret-1",
        llm_api_key="sk-helper-secret-2",
        embed_api_key="sk-embed-secret-3",
        api_keys=f"acme:{ACME}",
        database_url="postgresql://u:pw-secret-4@h/db",
    )
    text = repr(cfg) + str(cfg)
    for secret in ("sk-upstream-secret-1", "sk-helper-secret-2", "sk-embed-secret-3", ACME, "pw-secret-4"):
        assert secret not in text
    with pytest.raises(ConfigError) as bad:
        parse_env_keys("acme:short-key")
    assert "short-key" not in str(bad.value)
    assert parse_env_keys(f" acme:{ACME} , globex:{GLOBEX}") == [("acme", ACME), ("globex", GLOBEX)]


def test_info_logs_carry_no_message_text(
    keyed: tuple[str, Any], caplog: pytest.LogCaptureFixture, fake: FakeOpenAI
) -> None:
    base, app = keyed
    with caplog.at_level(logging.INFO, logger="memsched"):
        for i in range(5):  # fills pages (page_size 4): bookmark jobs run and log
            body = {
                "user": "bob",
                "metadata": {"session_id": "s1"},
                "messages": [{"role": "user", "content": f"{CANARY} number {i}"}],
            }
            assert (
                httpx.post(
                    f"{base}/v1/chat/completions", json=body, headers=_auth(ACME), timeout=30
                ).status_code
                == 200
            )
        app.state.service.scheduler.worker.drain(timeout=30)
        httpx.delete(f"{base}/v1/users/bob", headers=_auth(ACME))
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert logged  # something was logged
    for word in ("zephyrquill", "glimmerfjord", "7391482605", ACME):
        assert word not in logged
