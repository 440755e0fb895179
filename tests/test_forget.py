"""Forgetting for real: canary sentences (Chinese and English) are written, turned into every kind of
derived artifact (index tokens, vectors, bookmarks, a summary, a profile fact, traces, jobs), forgotten
through each surface, and then searched for in the raw bytes of the database files.

Each test first checks that the scan finds the canary's bytes (so a clean scan after the forget means
something), then forgets, then scans the main file, the WAL and the shared-memory file.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import raw_sql

from memsched import Config, Memory
from memsched.bookmarks import generate_bookmarks
from memsched.embed.hashing import HashEmbedder
from memsched.forget import forget
from memsched.llm.client import OpenAIChatClient
from memsched.model import content_hash
from memsched.profile import PREFERRED_NAME
from memsched.scheduler import Scheduler
from memsched.summarize import create_summary
from memsched.testing import FakeOpenAI
from memsched.text.segment import terms

# Canary words no other text in these tests uses (the scan looks for each of them). The numbers are
# ten digits long: a five-digit one also turned up, by chance, inside a kept text's hex content hash
# (CI, "73914" twice: the embeddings row and its index), failing a forget that had left nothing.
CANARY = {
    "zh": (
        "我前任在翡翠鹦鹉雕像下面藏了门禁卡，密码是 QK-5826190417，以后叫我琥珀龙",
        ("翡翠", "鹦鹉", "雕像", "琥珀龙", "5826190417"),
    ),
    "en": (
        "my ex hid the keycard under the zephyrquill statue, code glimmerfjord 7391482605; call me Marzipanova",
        ("zephyrquill", "glimmerfjord", "7391482605", "Marzipanova"),
    ),
}
FILLER = [
    "今天天气不错，我们去公园散步吧",
    "I had a quiet lunch with my sister today",
    "周末想去看一场电影",
    "The train was late again this morning",
    "晚饭吃了番茄炒蛋",
    "I am reading a book about volcanoes",
]


def db_bytes(path: Path) -> bytes:
    """The raw bytes of the database file, its WAL and its shared-memory file."""
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def fts_terms(path: Path, table: str, rowids: list[int]) -> set[str]:
    """The tokens FTS5 stored for these rows (read through fts5vocab on a separate connection)."""
    db = sqlite3.connect(path)
    try:
        db.execute(f"CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, '{table}', 'instance')")
        marks = ",".join("?" * len(rowids))
        return {r[0] for r in db.execute(f"SELECT term FROM temp.v WHERE doc IN ({marks})", rowids)}
    finally:
        db.close()


def other_terms(path: Path, table: str, rowids: list[int]) -> set[str]:
    db = sqlite3.connect(path)
    try:
        db.execute(f"CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, '{table}', 'instance')")
        marks = ",".join("?" * len(rowids))
        return {r[0] for r in db.execute(f"SELECT term FROM temp.v WHERE doc NOT IN ({marks})", rowids)}
    finally:
        db.close()


class Setup:
    def __init__(self, memory: Memory, sched: Scheduler, fake: FakeOpenAI) -> None:
        self.memory, self.sched, self.fake = memory, sched, fake
        self.path = Path(memory.config.db_path)


@pytest.fixture
def setup(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Setup]:
    memory = Memory(Config.load(home=tmp_path, page_size=4), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    yield Setup(memory, sched, fake)
    sched.close()
    llm.close()
    memory.close()


def plant(s: Setup, lang: str, session: str = "s1") -> tuple[list[int], list[str]]:
    """Chat a little, say the canary, and make every derived artifact from it. Returns the ids of the
    canary turns (the message and its reply) and the needles to scan for."""
    text, words = CANARY[lang]
    for line in FILLER[:3]:
        s.sched.turn("u", session, line)
    planted = s.sched.turn("u", session, text)
    s.sched.turn("u", "other", FILLER[3])  # another session of the same user, kept unless all goes
    s.sched.turn("v", session, FILLER[4])  # another user, always kept
    memory = s.memory
    assert memory.store.facts_current("u")[0]["key"] == PREFERRED_NAME  # the rename in the canary
    generate_bookmarks(memory, "u", llm=None)  # keyword bookmarks of the pages, canary words included
    # ... and the embedded vocabulary (memsched.vocab) holds the canary's terms
    vocab = set(memory.store.term_vectors("u", memory.embedders["hash"].model_id)[0])
    assert set(terms(text)) <= vocab
    turns = memory.store.session_turns("u", session)
    assert create_summary(
        memory, "u", session, turns[0].seq or 0, turns[-1].seq or 0, kind="topic", llm=None, max_tokens=400
    )
    ids = list(planted.turn_ids)
    unique = fts_terms(s.path, "turns_fts", ids) - other_terms(s.path, "turns_fts", ids)
    # The index's own forms of the canary words (jieba pieces, porter stems such as "zephyrquil");
    # short common tokens ("ex", "code") also occur in unrelated bytes, so they are not scanned for.
    forms = {
        t
        for t in unique
        if len(t) >= (2 if not t.isascii() else 4)
        and any(t.lower() in w.lower() or w.lower() in t for w in words)
    }
    assert len(forms) >= 3, forms
    needles = [text, *words, *sorted(forms)]
    embedded = {r[0] for r in raw_sql(memory.store, "SELECT content_hash FROM embeddings")}
    assert content_hash(f"user: {text}") in embedded
    raw = db_bytes(s.path)
    assert all(n.encode() in raw for n in needles), [n for n in needles if n.encode() not in raw]
    return ids, needles


def left(s: Setup, needles: list[str]) -> list[str]:
    raw = db_bytes(s.path)
    return [n for n in needles if n.encode() in raw]


def by_library(s: Setup, lang: str, ids: list[int]) -> None:
    forget(s.memory, "u", turn_ids=ids)


def by_conversation_last(s: Setup, lang: str, ids: list[int]) -> None:
    # The canary is its session's last message (the turns after it were in other sessions).
    s.sched.turn("u", "s1", "忘掉刚才那句话" if lang == "zh" else "forget what I just said")


def by_conversation_topic(s: Setup, lang: str, ids: list[int]) -> None:
    s.sched.turn("u", "s1", "把关于我前任的事都忘了" if lang == "zh" else "forget everything about my ex")


def by_session(s: Setup, lang: str, ids: list[int]) -> None:
    forget(s.memory, "u", session_id="s1")


def by_user(s: Setup, lang: str, ids: list[int]) -> None:
    s.sched.turn("u", "s1", "删除所有关于我的数据" if lang == "zh" else "delete everything you know about me")


def by_cli(s: Setup, lang: str, ids: list[int]) -> None:
    from typer.testing import CliRunner

    from memsched.cli import app

    args = ["forget", "--user", "u", "--db", str(s.path), *[a for i in ids for a in ("--turn", str(i))]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


def _live(s: Setup) -> Any:
    from memsched.server.app import create_app
    from memsched.server.service import Service
    from memsched.testing import LiveServer

    service = Service(s.memory.config, memory=s.memory, scheduler=s.sched)
    return LiveServer(create_app(service=service, warm_up=False))


def by_http_turns(s: Setup, lang: str, ids: list[int]) -> None:
    import httpx

    with _live(s) as base:
        for i in ids:
            r = httpx.delete(f"{base}/v1/users/u/turns/{i}", timeout=30)
            assert r.status_code == 200, r.text
            assert r.json()["purge"]["wal_truncated"] is True
        assert httpx.delete(f"{base}/v1/users/u/turns/{ids[0]}").status_code == 404


def by_http_session(s: Setup, lang: str, ids: list[int]) -> None:
    import httpx

    with _live(s) as base:
        r = httpx.delete(f"{base}/v1/users/u/sessions/s1", timeout=30)
        assert r.status_code == 200 and r.json()["turns"] >= 2, r.text
        assert httpx.delete(f"{base}/v1/users/u/sessions/s1").status_code == 404


def _say(s: Setup, text: str) -> None:
    """One turn through the proxy (/v1/chat/completions), as a chat app sends it."""
    import httpx

    from memsched.config import Config
    from memsched.server.app import create_app
    from memsched.server.service import Service
    from memsched.testing import LiveServer

    cfg = Config.load(
        home=s.memory.config.home, page_size=4, upstream_base_url=s.fake.base_url, upstream_model="fake-model"
    )
    service = Service(cfg, memory=s.memory, scheduler=s.sched)
    with LiveServer(create_app(service=service, warm_up=False)) as base:
        body = {
            "user": "u",
            "metadata": {"session_id": "s1"},
            "messages": [{"role": "user", "content": text}],
        }
        r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 200, r.text


def by_http_chat_last(s: Setup, lang: str, ids: list[int]) -> None:
    _say(s, "忘掉刚才那句话" if lang == "zh" else "forget what I just said")


def by_http_chat_topic(s: Setup, lang: str, ids: list[int]) -> None:
    _say(s, "把关于我前任的事都忘了" if lang == "zh" else "forget everything about my ex")


def by_http_chat_all(s: Setup, lang: str, ids: list[int]) -> None:
    _say(s, "删除所有关于我的数据" if lang == "zh" else "delete everything you know about me")


SURFACES: dict[str, Callable[[Setup, str, list[int]], None]] = {
    "library": by_library,
    "cli": by_cli,
    "http_turns": by_http_turns,
    "http_session": by_http_session,
    "conversation_last": by_conversation_last,
    "conversation_topic": by_conversation_topic,
    "session": by_session,
    "conversation_all": by_user,
    "http_chat_last": by_http_chat_last,
    "http_chat_topic": by_http_chat_topic,
    "http_chat_all": by_http_chat_all,
}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_no_bytes_left(setup: Setup, surface: str, lang: str) -> None:
    s = setup
    ids, needles = plant(s, lang)
    SURFACES[surface](s, lang, ids)
    assert left(s, needles) == []
    store = s.memory.store
    # No vector of the forgotten message is left under its content hash either (a vector is not its
    # text's bytes, but it is what the text said).
    kept = {r[0] for r in raw_sql(store, "SELECT content_hash FROM embeddings")}
    assert content_hash(f"user: {CANARY[lang][0]}") not in kept
    assert store.get_turns("u", ids) == []
    assert all(CANARY[lang][1][0] not in str(b.text) for b in store.bookmarks("u"))
    assert all(CANARY[lang][1][1] not in str(x["content"]) for x in store.session_summaries("u", "s1"))
    assert all(f["value"] not in CANARY[lang][0] for f in store.facts_current("u"))
    # Nothing more than asked: the other user is untouched, and so is the rest of this user unless
    # everything was asked for.
    assert [t.content for t in store.session_turns("v", "s1")][:1] == [FILLER[4]]
    if surface not in ("conversation_all", "http_chat_all"):
        assert store.session_turns("u", "other")
    else:
        assert not store.has_user("u")  # not even the request and its reply were stored
    if surface in ("conversation_topic", "http_chat_topic"):
        # The request named the topic: neither it nor the reply (which echoes it here) is stored.
        assert all(not re.search(r"前任|\bex\b", t.content) for t in store.iter_turns("u"))
    if surface in (
        "library",
        "cli",
        "http_turns",
        "conversation_last",
        "conversation_topic",
        "http_chat_last",
        "http_chat_topic",
    ):
        assert store.search_bm25("u", FILLER[0])  # the rest of the session stays, indexed


def test_summary_is_rewritten_without_the_forgotten_turn(setup: Setup) -> None:
    s = setup
    ids, _ = plant(s, "en")
    before = s.memory.store.session_summaries("u", "s1")
    assert any(set(x["source_turn_ids"]) & set(ids) for x in before)  # made from the canary
    forget(s.memory, "u", turn_ids=ids)
    after = s.memory.store.session_summaries("u", "s1")
    assert after and all("zephyrquill" not in x["content"] for x in after)
    assert all(not set(x["source_turn_ids"]) & set(ids) for x in after)


def test_forgetting_the_fact_source_brings_back_the_earlier_name(setup: Setup) -> None:
    s = setup
    s.sched.turn("u", "s1", "叫我小王吧")
    ids, _ = plant(s, "zh")
    assert s.sched.profile.get("u", PREFERRED_NAME).value == "琥珀龙"  # type: ignore[union-attr]
    forget(s.memory, "u", turn_ids=ids)
    assert s.sched.profile.get("u", PREFERRED_NAME).value == "小王"  # type: ignore[union-attr]


def test_forget_asks_for_one_thing(setup: Setup) -> None:
    from memsched.errors import InputError

    with pytest.raises(InputError, match="say what to forget"):
        forget(setup.memory, "u")
    with pytest.raises(InputError, match="one thing at a time"):
        forget(setup.memory, "u", turn_ids=[1], last=2)
    with pytest.raises(InputError, match="last must be"):
        forget(setup.memory, "u", last=0)


def test_a_table_with_a_source_turn_ids_column_joins_the_cascade(setup: Setup) -> None:
    """A feature's artifact table needs no code to be forgotten with its sources."""
    s = setup
    ids, _ = plant(s, "en")
    store: Any = s.memory.store
    with store.transaction() as tx:
        tx.execute("CREATE TABLE test_artifacts (id INTEGER PRIMARY KEY, user_id TEXT, source_turn_ids TEXT)")
        tx.execute("INSERT INTO test_artifacts (user_id, source_turn_ids) VALUES ('u', ?)", (f"[{ids[0]}]",))
        tx.execute("INSERT INTO test_artifacts (user_id, source_turn_ids) VALUES ('u', '[999999]')")
        tx.execute("CREATE TABLE test_per_turn (turn_id INTEGER, user_id TEXT, note TEXT)")
        tx.execute("INSERT INTO test_per_turn VALUES (?, 'u', 'x')", (ids[0],))
    out = forget(s.memory, "u", turn_ids=ids)
    assert out.rows["test_artifacts"] == 1 and out.rows["test_per_turn"] == 1
    assert store.db.execute("SELECT count(*) FROM test_artifacts").fetchone()[0] == 1


def test_an_artifact_made_while_its_source_was_forgotten_is_not_stored(setup: Setup) -> None:
    """A bookmark or summary computed from a turn that a forget deleted meanwhile (a background job
    racing the forget) is dropped when it is written, instead of outliving its source."""
    from dataclasses import replace

    s = setup
    ids, _ = plant(s, "en")
    store = s.memory.store
    made = [b for b in store.bookmarks("u") if set(b.turn_ids) & set(ids)]
    summary = next(x for x in store.session_summaries("u", "s1") if set(x["source_turn_ids"]) & set(ids))
    forget(s.memory, "u", turn_ids=ids)
    late = [replace(b, id=None) for b in made]
    store.add_bookmarks("u", late)
    assert all(b.id is None for b in late)
    assert not [b for b in store.bookmarks("u") if set(b.turn_ids) & set(ids)]
    with store.transaction() as tx:
        assert store.summary_add(tx, {**summary, "first_seq": 900, "last_seq": 901}) == 0


def test_cli_forget_last_session_all_and_mistakes(setup: Setup) -> None:
    from typer.testing import CliRunner

    from memsched.cli import app

    s = setup
    plant(s, "en")
    run = CliRunner().invoke
    db = ["--db", str(s.path)]
    before = len(s.memory.store.session_turns("u", "s1"))
    result = run(app, ["forget", "--user", "u", "--session", "s1", "--last", "2", "--json", *db])
    assert result.exit_code == 0, result.output
    assert len(s.memory.store.session_turns("u", "s1")) == before - 2
    assert run(app, ["forget", "--user", "u", *db]).exit_code != 0  # says what to forget
    assert run(app, ["forget", "--user", "nobody", "--all", *db]).exit_code != 0  # unknown user
    # A mistyped session or turn id is an error naming it, not "forgot 0 turns".
    kept = s.memory.store.turn_count("u")
    typo = run(app, ["forget", "--user", "u", "--session", "s1-typo", *db])
    assert typo.exit_code == 1 and "has no session 's1-typo'" in typo.output
    typo = run(app, ["forget", "--user", "u", "--turn", "999999", *db])
    assert typo.exit_code == 1 and "has no turn 999999" in typo.output
    other_id = s.memory.store.session_turns("u", "other")[0].id
    typo = run(app, ["forget", "--user", "u", "--session", "s1", "--turn", str(other_id), *db])
    assert typo.exit_code == 1 and f"has no turn {other_id} in session 's1'" in typo.output
    assert s.memory.store.turn_count("u") == kept  # nothing was deleted by a mistaken command
    assert run(app, ["forget", "--user", "u", "--session", "other", *db]).exit_code == 0
    assert not s.memory.store.session_turns("u", "other")
    assert run(app, ["forget", "--user", "u", "--all", *db]).exit_code == 0
    assert not s.memory.store.has_user("u") and s.memory.store.has_user("v")


def test_deleting_a_session_waits_for_its_turn_in_flight(setup: Setup) -> None:
    """The HTTP deletes hold the session as a turn does: a turn of it cannot write between the delete's
    lookup and its end (it runs after, on an empty session)."""
    import threading

    s = setup
    plant(s, "en")
    done = threading.Event()
    with s.sched.holding("u", "s1"):
        worker = threading.Thread(target=lambda: (s.sched.turn("u", "s1", "still there?"), done.set()))
        worker.start()
        worker.join(timeout=0.5)
        assert not done.is_set()  # queued behind the hold
        forget(s.memory, "u", session_id="s1")
    worker.join(timeout=30)
    assert done.is_set()
    assert [t.content for t in s.memory.store.session_turns("u", "s1")][:1] == ["still there?"]


def test_a_turn_id_past_64_bits_is_no_turn_not_a_crash(setup: Setup) -> None:
    """`DELETE /v1/users/u/turns/99999999999999999999999` was a 500 (the driver's OverflowError) and
    `memsched forget --turn` with it a traceback; no turn has such an id, and nothing is deleted."""
    import httpx
    from typer.testing import CliRunner

    from memsched.cli import app

    s = setup
    plant(s, "en")
    kept = s.memory.store.turn_count("u")
    huge = str(2**64 + 7)
    with _live(s) as base:
        r = httpx.delete(f"{base}/v1/users/u/turns/{huge}", timeout=30)
    assert r.status_code == 404 and f"has no turn {huge}" in r.json()["error"]["message"], r.text
    result = CliRunner().invoke(app, ["forget", "--user", "u", "--db", str(s.path), "--turn", huge])
    assert result.exit_code == 1 and f"has no turn {huge}" in result.output, result.output
    assert forget(s.memory, "u", turn_ids=[2**64 + 7]).turn_ids == []
    assert s.memory.store.turn_count("u") == kept
