from __future__ import annotations

from pathlib import Path

import pytest

from memsched.config import DEFAULT_BUDGET, Config
from memsched.errors import ConfigError


def test_precedence_explicit_over_env_over_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert Config.load().budget == DEFAULT_BUDGET
    monkeypatch.setenv("MEMSCHED_BUDGET", "1234")
    assert Config.load().budget == 1234
    assert Config.load(budget=99).budget == 99
    assert Config.load(budget=None).budget == 1234  # None means "not given"


def test_home_holds_the_database(tmp_path: Path) -> None:
    cfg = Config.load(home=tmp_path / "h")
    assert cfg.db_path == tmp_path / "h" / "memsched.db"
    assert Config.load(home=tmp_path, db=tmp_path / "x.db").db_path == tmp_path / "x.db"


def test_db_takes_a_postgresql_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = "postgresql://u:secret@127.0.0.1:5432/mem?host=/tmp//sock"
    cfg = Config.load(db=url)
    assert cfg.database_url == url and cfg.db is None  # the URL whole, its "//" kept
    monkeypatch.setenv("MEMSCHED_DB", url)
    assert Config.load().database_url == url
    monkeypatch.delenv("MEMSCHED_DB")
    cfg = Config.load(db=str(tmp_path / "x.db"))  # a file stays a file
    assert cfg.database_url is None and cfg.db_path == tmp_path / "x.db"


@pytest.mark.parametrize(
    ("var", "value", "match"),
    [
        (
            "MEMSCHED_BUDGET",
            "lots",
            "MEMSCHED_BUDGET='lots' is not an integer",
        ),  # was "a valid <class 'int'>"
        ("MEMSCHED_RECENT_SHARE", "half", "MEMSCHED_RECENT_SHARE='half' is not a number"),
        ("MEMSCHED_RECENT_SHARE", "2", "recent_share"),
        ("MEMSCHED_PAGING_MODE", "magic", "paging_mode"),
        ("MEMSCHED_WORKERS", "-1", "workers must be >= 0"),
        # Before, a URL without its scheme was taken, and every upstream call failed (a 502, retried).
        ("MEMSCHED_UPSTREAM_BASE_URL", "localhost:11434", "MEMSCHED_UPSTREAM_BASE_URL must be an http"),
        ("MEMSCHED_LLM_BASE_URL", "ftp://u:pw@host/v1", r"got 'ftp://\*\*\*@host/v1'"),
        ("MEMSCHED_VISION_BASE_URL", "127.0.0.1:8000/v1", "MEMSCHED_VISION_BASE_URL"),
    ],
)
def test_bad_values_are_named(monkeypatch: pytest.MonkeyPatch, var: str, value: str, match: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=match):
        Config.load()


def test_helper_llm_falls_back_to_upstream() -> None:
    assert Config.load().helper_llm() is None
    cfg = Config.load(upstream_base_url="http://127.0.0.1:1/v1", upstream_model="m", upstream_api_key="k")
    assert cfg.helper_llm() == ("http://127.0.0.1:1/v1", "k", "m")


def test_an_api_replica_runs_no_jobs(tmp_path: Path) -> None:
    """MEMSCHED_WORKERS=0: `memsched serve` leaves every job to `memsched worker` processes."""
    from memsched.server.service import Service

    service = Service(Config.load(home=tmp_path, embedders="hash", workers=0))
    try:
        assert service.scheduler.worker is None
    finally:
        service.close()
    service = Service(Config.load(home=tmp_path, embedders="hash"))
    try:
        assert service.scheduler.worker is not None and service.scheduler.worker.running
    finally:
        service.close()


def test_the_rerank_timeout_reaches_the_pager(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """MEMSCHED_RERANK_TIMEOUT was read into the config and then ignored: the pager waited 2 s."""
    from memsched.memory import Memory

    monkeypatch.setenv("MEMSCHED_RERANK_TIMEOUT", "0.75")
    with Memory(Config.load(home=tmp_path, embedders="hash")) as mem:
        assert mem.pager.options.rerank_timeout == 0.75
