"""Dense search and vector loading on both stores: the same answers as the exact in-memory path,
deletes that remove vectors physically (SQLite's packs too), and a retriever whose memory stays
under its cap (SQLite) or holds no matrices at all (PostgreSQL serves the search)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memsched.embed.hashing import HashEmbedder
from memsched.model import Turn, content_hash
from memsched.retrieve import Retriever
from memsched.store import Store, postgres_vectors, sqlite_vectors
from memsched.vectors import VectorIndex, usearch_index
from tests.conftest import raw_sql

MODEL = "test-model"
DIM = 32


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _fill(store: Store, user: str, n: int, seed: int = 0, batch: int = 100) -> dict[int, np.ndarray]:
    """n turns of `user` with random unit vectors, stored `batch` at a time; turn id -> vector."""
    rng = np.random.default_rng(seed)
    turns = store.add_turns(
        [Turn(user, f"s{i // 50}", "user", f"{user} message number {i}") for i in range(n)]
    )
    vectors = _unit(rng, n)
    for start in range(0, n, batch):
        part = turns[start : start + batch]
        store.put_vectors(
            user, MODEL, [(content_hash(t.text), v) for t, v in zip(part, vectors[start:], strict=False)]
        )
    return {int(t.id): vectors[i] for i, t in enumerate(turns) if t.id is not None}


def _exact(held: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[int]:
    index = VectorIndex()
    ids = np.array(sorted(held), dtype=np.int64)
    index.add(ids, np.stack([held[i] for i in ids]))
    return [h.turn_id for h in index.search(query, k)]


def test_load_vectors_returns_every_turn_vector_packed_or_not(store: Store) -> None:
    held = _fill(store, "u", 300)
    _fill(store, "v", 120, seed=1)  # another user's vectors never show up
    ids, matrix, version = store.load_vectors("u", MODEL)
    assert sorted(set(ids.tolist())) == sorted(held)
    got = {int(i): matrix[n] for n, i in enumerate(ids)}
    assert all(np.allclose(got[i], held[i], atol=1e-6) for i in held)
    assert version == store.vector_version("u", MODEL)
    if not store.serves_vector_search:
        # SQLite: the rows sit in packs (one chunk here), and a few new ones come from the join
        packed = raw_sql(
            store, "SELECT sum(n) FROM vector_packs WHERE user_id = ? AND model = ?", ("u", MODEL)
        )
        assert packed[0][0] == 300
        # one new vector is below REPACK_MIN: the pack stays, the load joins the new row
        (t,) = store.add_turns([Turn("u", "s9", "user", "one more")])
        store.put_vectors("u", MODEL, [(content_hash(t.text), held[min(held)])])
        ids, _, _ = store.load_vectors("u", MODEL)
        assert t.id in set(ids.tolist())
        packed = raw_sql(
            store, "SELECT sum(n) FROM vector_packs WHERE user_id = ? AND model = ?", ("u", MODEL)
        )
        assert packed[0][0] == 300


def test_packs_spill_into_chunks_and_stay_complete(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_vectors, "CHUNK_ROWS", 64)
    monkeypatch.setattr(sqlite_vectors, "REPACK_MIN", 10)
    held = _fill(store, "u", 250, batch=30)
    ids, _, _ = store.load_vectors("u", MODEL)
    assert sorted(set(ids.tolist())) == sorted(held)
    if not store.serves_vector_search:
        chunks = raw_sql(store, "SELECT chunk, n FROM vector_packs WHERE user_id = ? ORDER BY chunk", ("u",))
        assert [c for c, _ in chunks] == list(range(len(chunks))) and len(chunks) >= 4
        assert all(n == 64 for _, n in chunks[:-1]) and sum(n for _, n in chunks) == 250


@pytest.mark.parametrize("graph", [False, True])
def test_search_vectors_equals_the_exact_in_memory_search(
    store: Store, monkeypatch: pytest.MonkeyPatch, graph: bool
) -> None:
    if graph:
        if not store.serves_vector_search:
            pytest.skip("SQLite has no graph path; the exact run covers it")
        monkeypatch.setattr(postgres_vectors, "HNSW_MIN_VECTORS", 1)  # through the HNSW index
    held = _fill(store, "u", 400)
    _fill(store, "v", 400, seed=7)
    rng = np.random.default_rng(42)
    for query in _unit(rng, 5):
        want = _exact(held, query, 10)
        hits = store.search_vectors("u", MODEL, query, 10)
        got = [h.turn_id for h in hits]
        assert all(h.turn_id in held for h in hits)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score - 1e-6 for a, b in itertools.pairwise(hits))
        if graph:  # approximate: nearly all of the true ten
            assert len(set(got) & set(want)) >= 8, (got, want)
        else:
            assert got == want
            assert np.isclose(hits[0].score, float(held[got[0]] @ query), atol=1e-5)
        exact = [h.turn_id for h in store.search_vectors("u", MODEL, query, 10, exact=True)]
        assert exact == want


def test_a_vector_shared_by_two_turns_finds_both(store: Store) -> None:
    a, b = store.add_turns([Turn("u", "s1", "user", "same words"), Turn("u", "s2", "user", "same words")])
    (c,) = store.add_turns([Turn("u", "s1", "user", "other words")])
    vec = _unit(np.random.default_rng(3), 2)
    store.put_vectors("u", MODEL, [(content_hash(a.text), vec[0]), (content_hash(c.text), vec[1])])
    store.put_vectors("u", MODEL, [(content_hash("a bookmark's text"), vec[0])])  # no turn: never a hit
    hits = store.search_vectors("u", MODEL, vec[0], 5)
    assert [h.turn_id for h in hits][:2] == sorted([a.id or 0, b.id or 0]) and hits[2].turn_id == c.id
    assert len(hits) == 3


def test_forgetting_turns_removes_their_vectors_and_packs(store: Store, tmp_path: Path) -> None:
    held = _fill(store, "u", 200)
    gone = sorted(held)[:50]
    probe = held[gone[0]]
    store.forget_turns("u", gone)
    ids, _, _ = store.load_vectors("u", MODEL)
    assert not set(gone) & set(ids.tolist()) and len(set(ids.tolist())) == 150
    assert not set(gone) & {h.turn_id for h in store.search_vectors("u", MODEL, probe, 200)}
    if not store.serves_vector_search:
        assert raw_sql(store, "SELECT count(*) FROM vector_packs WHERE user_id = ?", ("u",)) == [(0,)]
        # nothing of the forgotten vector is left in the file (secure_delete zeroes freed pages)
        raw_sql(store, "PRAGMA wal_checkpoint(TRUNCATE)")
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("test.db*"))
        assert probe.tobytes() not in raw
        assert held[sorted(held)[-1]].tobytes() in raw  # a kept one is (the check can fail)
    store.forget_user("u")
    ids, _, _ = store.load_vectors("u", MODEL)
    assert len(ids) == 0
    if not store.serves_vector_search:
        assert raw_sql(store, "SELECT count(*) FROM vector_packs WHERE user_id = ?", ("u",)) == [(0,)]


def test_only_a_vector_some_turn_uses_costs_the_user_their_packs(store: Store) -> None:
    if store.serves_vector_search:
        pytest.skip("packs are SQLite's")
    held = _fill(store, "u", 100)
    other = _unit(np.random.default_rng(5), 1)[0]
    store.put_vectors("u", MODEL, [(content_hash("a bookmark's text"), other)])
    packed = "SELECT count(*) FROM vector_packs WHERE user_id = ?"
    assert raw_sql(store, packed, ("u",)) == [(1,)]
    raw_sql(store, "DELETE FROM embeddings WHERE content_hash = ?", (content_hash("a bookmark's text"),))
    assert raw_sql(store, packed, ("u",)) == [(1,)]  # no turn used it: the pack stays
    (turn,) = store.get_turns("u", [min(held)])
    raw_sql(
        store, "DELETE FROM embeddings WHERE user_id = ? AND content_hash = ?", ("u", content_hash(turn.text))
    )
    assert raw_sql(store, packed, ("u",)) == [(0,)]
    ids, _, _ = store.load_vectors("u", MODEL)
    assert min(held) not in set(ids.tolist()) and len(ids) == 99


def test_retriever_memory_is_capped_or_unused(store: Store) -> None:
    emb = HashEmbedder(dim=DIM)
    r = Retriever(store, {"hash": emb}, cache_mb=1, cache_users=3)
    for u in range(6):
        store.add_turns(
            [Turn(f"u{u}", "s", "user", f"user {u} talks about topic {i} and more") for i in range(300)]
        )
        r.index_user(f"u{u}")
    for u in range(6):
        hits = r.dense(f"u{u}", "hash", emb.embed([f"user {u} talks about topic 7"])[0], 10)
        assert hits and len({h.turn_id for h in hits}) == 10
        found = store.get_turns(f"u{u}", [h.turn_id for h in hits])
        assert len(found) == 10 and all(t.user_id == f"u{u}" for t in found)
    indexes = r._indexes
    if store.serves_vector_search:
        assert len(indexes) == 0  # PostgreSQL answered; no matrix held here
    else:
        assert len(indexes) <= 3 and (indexes.weight() <= 1024 * 1024 / 2 or len(indexes) == 1)
    # the same answers either way (hashed texts tie often, so compare the scores, in order)
    q = emb.embed(["user 2 talks about topic 7"])[0]
    mine = [round(h.score, 4) for h in r.dense("u2", "hash", q, 10)]
    assert mine == [round(h.score, 4) for h in store.search_vectors("u2", emb.model_id, q, 10, exact=True)]


def test_big_users_search_through_a_graph_the_worker_writes_and_forgetting_unlinks(store: Store) -> None:
    """With a low threshold: `Memory.index`'s graph step writes the user's graph (SQLite; PostgreSQL
    has its own index and no files), the retriever searches through it with the exact answers on
    this small data, and forgetting a turn unlinks the file before the next build leaves it out."""
    emb = HashEmbedder(dim=DIM)
    r = Retriever(store, {"hash": emb}, ann_threshold=100)
    exact = Retriever(store, {"hash": emb}, ann_threshold=10**9)
    store.add_turns([Turn("u", f"s{i // 40}", "user", f"note {i} about topic {i % 37}") for i in range(300)])
    store.add_turns([Turn("small", "s", "user", f"note {i}") for i in range(50)])
    r.index_user("u")
    r.index_user("small")
    assert r.update_graphs("small") == 0
    added = r.update_graphs("u")
    path = store.vector_graph_path("u", emb.model_id)
    assert (
        store.vector_graph_path("small", emb.model_id) is None
        or not store.vector_graph_path("small", emb.model_id).exists()
    )  # below the threshold: exact, no file
    if store.serves_vector_search:
        assert path is None and added == 0
    else:
        assert path is not None and path.exists() and added == 300
    queries = [emb.embed([f"note {i} about topic {i % 37}"])[0] for i in (3, 150, 299)]
    for q in queries:
        assert [round(h.score, 4) for h in r.dense("u", "hash", q, 10)] == [
            round(h.score, 4) for h in exact.dense("u", "hash", q, 10)
        ]
    if path is not None:
        assert r._index("u", "hash").uses_ann
    gone = [h.turn_id for h in r.dense("u", "hash", queries[1], 3)]
    store.forget_turns("u", gone)
    r.forget("u", gone)
    if path is not None:
        assert not path.exists()  # physically gone with the turns
        assert not r._index("u", "hash").uses_ann
        assert r.update_graphs("u") == 297  # rebuilt from what is left

        graph = usearch_index().restore(str(path))
        assert graph is not None and not any(graph.contains(t) for t in gone)
    assert not set(gone) & {h.turn_id for h in r.dense("u", "hash", queries[1], 50)}
    store.forget_user("u")
    if path is not None:
        assert not path.exists()


def test_put_vector_batches_stores_every_models_vectors_in_one_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = store.add_turns([Turn("u", "s", "user", "first"), Turn("u", "s", "assistant", "second")])
    rng = np.random.default_rng(3)
    one, two = _unit(rng, 2), _unit(rng, 2)
    opened = []
    real = store.transaction
    monkeypatch.setattr(store, "transaction", lambda: opened.append(1) or real())
    store.put_vector_batches(
        "u",
        [
            ("m1", [(content_hash(a.text), one[0]), (content_hash(b.text), one[1])]),
            ("m2", [(content_hash(b.text), two[1])]),
            ("m3", []),  # nothing for this model: no rows, no error
        ],
    )
    store.put_vector_batches("u", [])  # nothing at all: no transaction
    assert opened == [1]
    for model, held in (("m1", {a.id: one[0], b.id: one[1]}), ("m2", {b.id: two[1]})):
        ids, matrix, _ = store.load_vectors("u", model)
        got = {int(i): matrix[k] for k, i in enumerate(ids)}
        assert sorted(got) == sorted(held)
        for turn_id, vec in held.items():
            np.testing.assert_allclose(got[turn_id], vec, atol=1e-6)
    assert store.load_vectors("u", "m3")[0].size == 0


def test_index_user_embeds_every_layer_and_commits_them_together(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One round per chunk: each embedder's missing turns are found, embedded and stored in one
    commit for all embedders; a second call finds nothing to do and writes nothing."""
    embedders = {"a": HashEmbedder(dim=16), "b": HashEmbedder(dim=24)}
    retriever = Retriever(store, embedders)  # type: ignore[arg-type]
    turns = store.add_turns([Turn("u", "s", "user", f"message {i}") for i in range(5)])
    commits = []
    real = store.put_vector_batches
    monkeypatch.setattr(
        store, "put_vector_batches", lambda u, b, checked=(): commits.append(b) or real(u, b, checked=checked)
    )
    assert retriever.index_user("u") == 10  # five turns x two embedders
    assert len(commits) == 1 and [m for m, _ in commits[0]] == ["hash-16", "hash-24"]
    for name, embedder in embedders.items():
        ids, matrix, _ = store.load_vectors("u", embedder.model_id)
        assert sorted(int(i) for i in ids) == [t.id for t in turns], name
        want = embedder.embed([t.text for t in turns])
        got = {int(i): matrix[k] for k, i in enumerate(ids)}
        np.testing.assert_allclose(np.stack([got[int(t.id)] for t in turns if t.id]), want, atol=1e-6)
    assert retriever.index_user("u") == 0 and len(commits) == 1
    # A backlog bigger than a chunk takes several rounds and misses nothing.
    more = store.add_turns([Turn("u", "s", "user", f"later {i}") for i in range(5)])
    assert retriever.index_user("u", chunk=2) == 10
    assert len(commits) == 1 + 3  # 2 + 2 + 1 turns per round
    for embedder in embedders.values():
        ids, _, _ = store.load_vectors("u", embedder.model_id)
        assert {t.id for t in more} <= {int(i) for i in ids}


def test_index_user_pauses_before_each_chunk_and_between_the_embedders(store: Store) -> None:
    """Background indexing pauses before each round and before each embedder's share of it (a
    WordLlama chunk is a few ms of CPU), so a turn in flight waits for one of them at most."""
    events: list[str] = []

    class Recording(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            events.append(f"{self.model_id} {len(texts)}")
            return super().embed(texts)

    embedders = {"a": Recording(dim=16), "b": Recording(dim=24)}
    retriever = Retriever(store, embedders)  # type: ignore[arg-type]
    store.add_turns([Turn("u", "s", "user", f"message {i}") for i in range(5)])
    assert retriever.index_user("u", chunk=3, pause=lambda: events.append("pause")) == 10
    assert events == ["pause", "hash-16 3", "pause", "hash-24 3", "pause", "hash-16 2", "pause", "hash-24 2"]


@pytest.mark.parametrize("graph", [False, True])
def test_vectors_said_many_times_fill_k_from_the_nearest_and_skip_turnless_ones(
    store: Store, monkeypatch: pytest.MonkeyPatch, graph: bool
) -> None:
    """Each of 20 texts said 6 times (one vector, six turns), and 30 bookmark-like vectors with no
    turn nearer to the query than any turn's: the k hits are the nearest texts' turns, in order."""
    if graph:
        if not store.serves_vector_search:
            pytest.skip("SQLite has no graph path; the exact run covers it")
        monkeypatch.setattr(postgres_vectors, "HNSW_MIN_VECTORS", 1)
    rng = np.random.default_rng(5)
    texts = [f"text {i}" for i in range(20)]
    turns = store.add_turns([Turn("u", f"s{r}", "user", t) for r in range(6) for t in texts])
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    vectors = np.zeros((20, DIM), dtype=np.float32)
    for i in range(20):  # text i is nearer to the query than text i + 1
        vectors[i, 0], vectors[i, 1 + i] = 1.0, 0.3 + 0.1 * i
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    text_hash = {t.content: t.hash for t in turns}
    store.put_vectors("u", MODEL, [(text_hash[t], v) for t, v in zip(texts, vectors, strict=True)])
    near = np.tile(query, (30, 1)) + 0.01 * _unit(rng, 30)
    store.put_vectors("u", MODEL, [(content_hash(f"bookmark {i}"), v) for i, v in enumerate(near)])
    by_text: dict[str, list[int]] = {}
    for t in turns:
        by_text.setdefault(t.content, []).append(int(t.id or 0))
    want = [tid for t in texts[:3] for tid in sorted(by_text[t])][:15]
    hits = store.search_vectors("u", MODEL, query, 15)
    assert [h.turn_id for h in hits] == want


def test_a_new_process_starts_its_vector_check_where_the_store_says(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`index_user` records how far every turn has vectors (SQLite), so a process that starts does
    not look through the whole history again; turns stored after that point are still embedded."""
    emb = HashEmbedder(dim=DIM)
    store.add_turns([Turn("u", "s", "user", f"old message {i}") for i in range(30)])
    Retriever(store, {"hash": emb}).index_user("u")
    top = store.max_turn_id("u")
    looked: list[int] = []
    real = store.turns_missing_vectors

    def spy(
        user_id: str, model_id: str, limit: int = 1000, after_id: int = 0, han_only: bool = False
    ) -> list[tuple[int, str]]:
        looked.append(after_id)
        return real(user_id, model_id, limit=limit, after_id=after_id, han_only=han_only)

    monkeypatch.setattr(store, "turns_missing_vectors", spy)
    (new,) = store.add_turns([Turn("u", "s", "user", "a message stored without vectors")])
    fresh = Retriever(store, {"hash": emb})  # another process
    assert fresh.index_user("u") == 1
    assert new.id in set(store.load_vectors("u", emb.model_id)[0].tolist())
    if store.serves_vector_search:  # PostgreSQL records nothing (ids may commit out of order)
        assert store.vectors_checked("u", emb.model_id) == 0 and looked[0] == 0
    else:
        assert looked[0] == top and store.vectors_checked("u", emb.model_id) == new.id
        store.set_vectors_checked("u", emb.model_id, 1)  # never moves back
        assert store.vectors_checked("u", emb.model_id) == new.id
    store.forget_user("u")
    assert store.vectors_checked("u", emb.model_id) == 0


def test_index_user_records_the_watermark_in_the_vectors_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply stored without vectors (the proxy's post-reply work) costs one write transaction
    for every embedder's vectors and watermarks together, not one more per embedder; the next
    process starts from that watermark."""
    embedders = {"a": HashEmbedder(dim=16), "b": HashEmbedder(dim=24)}
    retriever = Retriever(store, embedders)  # type: ignore[arg-type]
    store.add_turns([Turn("u", "s", "user", f"message {i}") for i in range(3)])
    assert retriever.index_user("u") == 6
    (reply,) = store.add_turns([Turn("u", "s", "assistant", "a reply stored without vectors")])
    opened = []
    real = store.transaction
    monkeypatch.setattr(store, "transaction", lambda: opened.append(1) or real())
    assert retriever.index_user("u") == 2
    assert opened == [1]
    monkeypatch.setattr(store, "transaction", real)
    fresh = Retriever(store, embedders)  # type: ignore[arg-type]  # another process
    looked: list[int] = []
    missing = store.turns_missing_vectors
    monkeypatch.setattr(
        store,
        "turns_missing_vectors",
        lambda u, m, limit=1000, after_id=0, han_only=False: (
            looked.append(after_id) or missing(u, m, limit=limit, after_id=after_id, han_only=han_only)
        ),
    )
    (later,) = store.add_turns([Turn("u", "s", "user", "one more without vectors")])
    assert fresh.index_user("u") == 2
    for embedder in embedders.values():
        assert {reply.id, later.id} <= set(store.load_vectors("u", embedder.model_id)[0].tolist())
        if store.serves_vector_search:  # PostgreSQL records nothing (ids may commit out of order)
            assert store.vectors_checked("u", embedder.model_id) == 0
        else:
            assert store.vectors_checked("u", embedder.model_id) == later.id
    assert looked == ([0, 0] if store.serves_vector_search else [reply.id, reply.id])


def test_put_vector_batches_moves_the_watermark_only_with_its_vectors(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watermark written with a batch of vectors commits with them: a failing write leaves
    it where it was (the turns it would have covered are looked at again), a successful one moves
    it, never backwards, and a watermark alone is written without vectors."""
    a, b = store.add_turns([Turn("u", "s", "user", "first"), Turn("u", "s", "assistant", "second")])
    assert a.id is not None and b.id is not None
    vec = _unit(np.random.default_rng(5), 2)
    kept = 0 if store.serves_vector_search else a.id  # PostgreSQL records no watermark
    store.put_vector_batches("u", [("m1", [(content_hash(a.text), vec[0])])], checked=[("m1", a.id)])
    assert store.vectors_checked("u", "m1") == kept

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "put_vectors_tx", broken)
    with pytest.raises(RuntimeError):
        store.put_vector_batches("u", [("m1", [(content_hash(b.text), vec[1])])], checked=[("m1", b.id)])
    monkeypatch.undo()
    assert store.vectors_checked("u", "m1") == kept
    assert store.turns_missing_vectors("u", "m1") == [(b.id, "assistant: second")]
    store.put_vector_batches("u", [("m1", [(content_hash(b.text), vec[1])])], checked=[("m1", b.id)])
    assert store.vectors_checked("u", "m1") == (0 if store.serves_vector_search else b.id)
    store.put_vector_batches("u", [], checked=[("m1", a.id), ("m2", b.id)])  # never backwards
    assert store.vectors_checked("u", "m1") == (0 if store.serves_vector_search else b.id)
    assert store.vectors_checked("u", "m2") == (0 if store.serves_vector_search else b.id)


def test_speakers_are_the_named_ones_sorted(store: Store) -> None:
    store.add_turns(
        [
            Turn("u", "s", "user", "hi", speaker="Melanie"),
            Turn("u", "s", "assistant", "hello"),
            Turn("u", "s", "user", "again", speaker="Caroline"),
            Turn("u", "s", "user", "and again", speaker="Melanie"),
            Turn("v", "s", "user", "other user", speaker="Zed"),
        ]
    )
    assert store.speakers("u") == ["Caroline", "Melanie"]
    assert store.speakers("nobody") == []


def test_storing_a_few_vectors_reads_no_pack_until_enough_are_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply's vector (one row) only checks how many rows the pack lacks: the chunks themselves
    (15 MB of MiniLM vectors for a 10,000-turn user) are read only when the tail is rewritten."""
    from memsched.store.sqlite import SQLiteStore

    monkeypatch.setattr(sqlite_vectors, "CHUNK_ROWS", 64)
    # A pack lacks a row for each turn and each vector stored since it was written.
    monkeypatch.setattr(sqlite_vectors, "REPACK_MIN", 20)
    store = SQLiteStore(tmp_path / "m.db")
    held = _fill(store, "u", 100, batch=50)  # packed
    reads: list[str] = []
    real = store._pack
    monkeypatch.setattr(store, "_pack", lambda db, u, m: reads.append(u) or real(db, u, m))
    rng = np.random.default_rng(7)
    vectors = _unit(rng, 10)
    new = []
    for i in range(10):  # each reply: its turn, then its vector
        new.extend(store.add_turns([Turn("u", "s", "assistant", f"reply {i}")]))
        store.put_vectors("u", MODEL, [(content_hash(new[-1].text), vectors[i])])
        assert reads == ([] if i < 9 else ["u"])  # 18 rows missing after nine: under REPACK_MIN
    packed = raw_sql(store, "SELECT sum(n) FROM vector_packs WHERE user_id = ?", ("u",))[0][0]
    assert packed == 110
    ids, matrix, _ = store.load_vectors("u", MODEL)
    got = {int(i): matrix[k] for k, i in enumerate(ids)}
    assert set(got) == set(held) | {t.id for t in new}
    np.testing.assert_allclose(got[int(new[9].id or 0)], vectors[9], atol=1e-6)
    store.close()


def test_a_refresh_checks_every_layer_in_one_read_and_sees_another_process_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a reply the in-memory indexes are brought up to the store (`Retriever.refresh`): one
    read tells which layers are stale. Vectors another process stored (its own turns) are in the
    indexes after it, and in the next dense search without one."""
    from memsched.store.sqlite import SQLiteStore

    embedders = {"a": HashEmbedder(dim=16), "b": HashEmbedder(dim=24)}
    store = SQLiteStore(tmp_path / "m.db")
    other = SQLiteStore(tmp_path / "m.db")  # another process's connection
    try:
        r = Retriever(store, embedders)  # type: ignore[arg-type]
        store.add_turns([Turn("u", "s", "user", f"message about topic {i}") for i in range(5)])
        r.index_user("u")
        for name, e in embedders.items():  # both indexes in memory
            r.dense("u", name, e.embed(["message about topic 1"])[0], 3)
        reads: list[list[str]] = []
        real = store.vector_versions
        monkeypatch.setattr(store, "vector_versions", lambda u, m: reads.append(list(m)) or real(u, m))
        texts = ["the lighthouse keeper painted the door blue", "a violin under the staircase"]
        for text in texts:
            (turn,) = other.add_turns([Turn("u", "s2", "user", text)])
            Retriever(other, embedders).index_user("u")  # type: ignore[arg-type]
            if text == texts[0]:
                assert r.refresh("u") == 2
                assert reads == [["hash-16", "hash-24"]]
            for name, e in embedders.items():
                assert r.dense("u", name, e.embed([text])[0], 1)[0].turn_id == turn.id, name
    finally:
        other.close()
        store.close()
