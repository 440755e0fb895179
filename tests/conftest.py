"""Shared fixtures. Every test gets its own MEMSCHED_HOME and no stray MEMSCHED_* settings.

Tests that use `store`, `mem` or `backend` run once per storage backend: SQLite (a file in
tmp_path) and PostgreSQL (a fresh database on a private pgvector server that the suite starts
itself with the `pgserver` wheel, or on the server `MEMSCHED_TEST_DATABASE_URL` names). For the
PostgreSQL run `backend` also sets MEMSCHED_DATABASE_URL, so everything that builds its store from
the configuration (Memory, the server, the CLI) runs on it. `MEMSCHED_TEST_BACKENDS=sqlite` limits
a local run to one backend.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.store import Store, open_store
from memsched.testing import FakeOpenAI
from memsched.testing.postgres import PostgresServer

# Read before any test clears MEMSCHED_* from the environment.
TEST_DATABASE_URL = os.environ.get("MEMSCHED_TEST_DATABASE_URL") or None
BACKENDS = [
    b.strip() for b in os.environ.get("MEMSCHED_TEST_BACKENDS", "sqlite,postgres").split(",") if b.strip()
]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.startswith("MEMSCHED_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("MEMSCHED_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on loopback (scripted replies; see memsched.testing)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole run (started here unless MEMSCHED_TEST_DATABASE_URL is set)."""
    with PostgresServer(TEST_DATABASE_URL) as server:
        yield server


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """An empty, migrated PostgreSQL database of this test's own."""
    url = pg_server.database()
    yield url
    pg_server.release(url)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The storage backend this run of the test uses; for "postgres", MEMSCHED_DATABASE_URL is set."""
    if request.param == "postgres":
        monkeypatch.setenv("MEMSCHED_DATABASE_URL", request.getfixturevalue("pg_url"))
    return str(request.param)


def store_location(backend: str, tmp_path: Path) -> str:
    """Where a test's store lives on `backend` (after the `backend` fixture ran)."""
    return os.environ["MEMSCHED_DATABASE_URL"] if backend == "postgres" else str(tmp_path / "test.db")


def raw_sql(store: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of a raw query on either backend (`?` placeholders), for tests that check what is
    physically stored. Only tests do this: outside `memsched.store` nothing writes SQL."""
    if hasattr(store, "db"):
        return [tuple(r) for r in store.db.execute(sql, args).fetchall()]
    return [tuple(r) for r in store._all(sql.replace("?", "%s"), args)]


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Store]:
    s = open_store(store_location(backend, tmp_path), page_size=4)
    yield s
    s.close()


@pytest.fixture
def mem(backend: str, tmp_path: Path) -> Iterator[Memory]:
    m = Memory(home=tmp_path / "memhome", embedders="hash", page_size=4)
    yield m
    m.close()


@pytest.fixture
def shipped_modes(tmp_path: Path) -> Iterator[Callable[[Sequence[str]], list[str]]]:
    """The mode the default router of a turn (prototypes + the shipped classifier) gives each message
    on its own, on the vectors a turn computes with the default embedders."""
    from memsched.classify import ModeClassifier
    from memsched.router import Prototypes, Router, prototype_weights
    from memsched.text.segment import cjk_ratio

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    memory = Memory(home=tmp_path / "modes")

    def modes(texts: Sequence[str]) -> list[str]:
        out = []
        for text in texts:
            vecs = memory.retriever.embed_query(text)
            weights = prototype_weights(vecs, cjk_ratio(text))
            route = router.route(text, vectors=vecs, embedders=memory.embedders, embedder_weights=weights)
            out.append(route.mode)
        return out

    yield modes
    memory.close()


def hash_memory(tmp_path: Path, **overrides: Any) -> Memory:
    return Memory(home=tmp_path / "h", embedders={"hash": HashEmbedder()}, **overrides)


def write_locomo(path: Path) -> Path:
    """A tiny LoCoMo-format file (two sessions, three questions) written for tests."""
    sample = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Caroline",
                    "dia_id": "D1:1",
                    "text": "Hey Mel! I went to a pottery class yesterday.",
                },
                {
                    "speaker": "Melanie",
                    "dia_id": "D1:2",
                    "text": "Nice! I painted a sunrise over the lake last week.",
                },
                {
                    "speaker": "Caroline",
                    "dia_id": "D1:3",
                    "text": "Look at my new bowl!",
                    "img_url": ["http://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a blue ceramic bowl",
                },
            ],
            "session_2_date_time": "7:00 pm on 25 May, 2023",
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:1", "text": "My kids love camping at the beach."},
                {"speaker": "Caroline", "dia_id": "D2:2", "text": "I am researching adoption agencies."},
            ],
        },
        "qa": [
            {
                "question": "What did Melanie paint?",
                "answer": "a sunrise",
                "evidence": ["D1:2"],
                "category": 1,
            },
            {
                "question": "What is Caroline researching?",
                "answer": "adoption agencies",
                "evidence": ["D2:2"],
                "category": 4,
            },
            {
                "question": "When did Caroline go to pottery?",
                "answer": "7 May 2023",
                "evidence": ["D1:1"],
                "category": 2,
            },
            {"question": "adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
    }
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    return write_locomo(tmp_path / "locomo.json")


def daytime_strategies(path: Path) -> Path:
    """The shipped strategy table without its late-night strategies, written to `path` (for
    MEMSCHED_STRATEGIES / `Config.strategies`): for tests that must not depend on the hour they run
    at. A turn without a timestamp is at the real clock, and from 23:00 to 05:00 UTC the default late
    window picks a late-night strategy, which gives the bookmark index no room."""
    import memsched

    shipped = (Path(memsched.__file__).parent / "strategies.toml").read_text(encoding="utf-8")
    head, *blocks = shipped.split("[[strategy]]")
    late = re.compile(r'^when = \{[^\n]*(?<!not_)signals = \[[^\]]*"late_night"', re.M)
    kept = [b for b in blocks if not late.search(b)]
    assert len(kept) < len(blocks), "the shipped table has late-night strategies"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + "".join("[[strategy]]" + b for b in kept), encoding="utf-8")
    return path
