from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from memsched.embed.base import normalize
from memsched.store import Store
from memsched.vectors import (
    Members,
    VectorIndex,
    graph_generation,
    open_graph,
    search_as_one,
    update_graph,
    usearch_index,
)


def _data(n: int, dim: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return np.arange(1, n + 1, dtype=np.int64), normalize(rng.normal(size=(n, dim)))


def test_exact_search_matches_brute_force() -> None:
    ids, m = _data(500)
    index = VectorIndex()
    index.add(ids[:200], m[:200])
    index.add(ids[200:], m[200:])
    q = m[123]
    hits = index.search(q, 5)
    expected = ids[np.argsort(-(m @ q))[:5]]
    assert [h.turn_id for h in hits] == list(expected)
    assert hits[0].score > 0.999 and hits[0].rank == 1


def test_two_indexes_searched_as_one_count_each_turn_once_by_its_nearer_row() -> None:
    """MiniLM's layer and the gloss layer as one space: a turn with a row in both (a Chinese turn:
    its raw MiniLM row and its gloss row) is one hit, scored by the row nearer to the query; the
    list is the brute-force ranking of every turn by that score."""
    ids, m = _data(400)
    base, other = VectorIndex(), VectorIndex()
    base.add(ids, m)  # every turn has a MiniLM row
    chinese = ids[::2]  # half of them have a gloss row as well
    rng = np.random.default_rng(3)
    glossed = normalize(m[::2] + rng.normal(scale=0.8, size=m[::2].shape))
    other.add(chinese, glossed)
    q = m[10] + glossed[40]
    q = q / np.linalg.norm(q)
    best = m @ q
    best[::2] = np.maximum(best[::2], glossed @ q)
    expected = ids[np.lexsort((ids, -best))][:30]
    hits = search_as_one(base, other, q, 30)
    assert [h.turn_id for h in hits] == list(expected)
    assert [h.rank for h in hits] == list(range(1, 31))
    assert len({h.turn_id for h in hits}) == 30
    # Turn 81 (row 80, glossed as gloss row 40) is found by its gloss row, turn 11 by its own.
    by_id = {h.turn_id: h.score for h in hits}
    assert np.isclose(by_id[81], glossed[40] @ q) and np.isclose(by_id[11], m[10] @ q)
    # A user with no gloss rows (English only): the plain search, hit for hit.
    assert search_as_one(base, VectorIndex(), q, 30) == base.search(q, 30)


def test_graph_search_finds_what_exact_search_finds_and_sees_the_tail(tmp_path: Path) -> None:
    """In graph mode the graph holds most vectors and memory only the tail: the hits are nearly all
    of the exact top ten with scores within float16 error, and vectors added after the graph was
    written (the tail) are found exactly."""
    ids, m = _data(3000, dim=32)
    path = tmp_path / "g.usearch"
    assert update_graph(path, ids[:2500], m[:2500], (7, 2500), graph_generation(path), threshold=100) == 2500
    exact = VectorIndex(ann_threshold=100)
    exact.add(ids, m)
    index = VectorIndex(ann_threshold=100)
    opened = open_graph(path)
    assert opened is not None and opened[2] == (7, 2500)
    index.attach_graph(opened[0], opened[1], opened[3])
    index.add(ids, m)  # what the graph holds stays out of memory
    assert index.uses_ann and len(index.ids) == 500 and len(index) == 3000
    rng = np.random.default_rng(3)
    overlap = []
    for q in normalize(rng.normal(size=(20, 32))):
        want = exact.search(q, 10)
        got = index.search(q, 10)
        assert [h.rank for h in got] == list(range(1, 11))
        assert all(abs(h.score - float(m[h.turn_id - 1] @ q)) < 5e-3 for h in got)
        overlap.append(len({h.turn_id for h in got} & {h.turn_id for h in want}) / 10)
    assert np.mean(overlap) >= 0.9, overlap
    for i in (5, 2600, 2999):  # in the graph, and in the tail
        assert index.search(m[i], 1)[0].turn_id == ids[i]
    got = index.vectors([int(ids[5]), int(ids[2600])])
    assert got.shape == (2, 32) and np.allclose(sorted(got @ m[5]), sorted([m[2600] @ m[5], 1.0]), atol=5e-3)


def test_turns_sharing_a_vector_share_a_node_and_all_come_back(tmp_path: Path) -> None:
    """A text said again has one vector for many turns: one graph node, and every turn of it is a
    hit, the oldest first (the exact search's tie order)."""
    ids, m = _data(400, dim=16)
    m[100:110] = m[5]  # turns 101..110 repeat turn 6's text
    path = tmp_path / "g.usearch"
    assert update_graph(path, ids, m, (1, 1), "", threshold=100) == 400
    opened = open_graph(path)
    assert opened is not None and len(opened[0]) == 390 and len(opened[3]) == 400
    index = VectorIndex(ann_threshold=100)
    index.attach_graph(opened[0], opened[1], opened[3])
    hits = index.search(m[5], 11)
    assert [h.turn_id for h in hits] == [6, *range(101, 111)]
    assert index.vectors([105]).shape == (1, 16) and np.allclose(index.vectors([105])[0], m[5], atol=1e-3)


def test_members_open_memory_mapped_in_both_orders_and_old_files_still_open(tmp_path: Path) -> None:
    """The worker writes a graph's members in both orders; a query process maps the file instead of
    sorting a big user's turn ids, and gets what sorting gives. A 2-row file (earlier versions) is
    sorted on open and searches the same."""
    ids, m = _data(400, dim=16)
    m[100:110] = m[5]
    shuffled = np.random.default_rng(1).permutation(len(ids))
    path = tmp_path / "g.usearch"
    assert update_graph(path, ids[shuffled], m[shuffled], (1, 1), "", threshold=100) == 400
    opened = open_graph(path)
    assert opened is not None
    members = opened[3]
    assert isinstance(members.turns, np.memmap)
    assert np.array_equal(members.turns, ids) and np.array_equal(
        members.rows(), Members(ids, members.reps).rows()
    )
    expected = [h.turn_id for h in _attached(opened).search(m[5], 11)]
    assert expected == [6, *range(101, 111)]
    # an earlier version's 2-row members file (written aside and renamed, as the worker does: the
    # open graph's mapping of the old file stays valid)
    np.save(tmp_path / "old.npy", np.vstack([members.turns[::-1], members.reps[::-1]]))
    os.replace(tmp_path / "old.npy", tmp_path / "g.usearch.members.npy")
    old = open_graph(path)
    assert old is not None and not isinstance(old[3].turns, np.memmap)
    assert np.array_equal(old[3].rows(), members.rows())
    assert [h.turn_id for h in _attached(old).search(m[5], 11)] == expected
    # the worker's next look (nothing new to add) writes it in both orders
    assert update_graph(path, ids, m, (1, 1), "", threshold=100) == 0
    again = open_graph(path)
    assert again is not None and isinstance(again[3].turns, np.memmap)
    assert np.array_equal(again[3].rows(), members.rows())


def _attached(opened: tuple[Any, int, tuple[int, int], Members]) -> VectorIndex:
    index = VectorIndex(ann_threshold=100)
    index.attach_graph(opened[0], opened[1], opened[3])
    return index


def test_update_graph_extends_rebuilds_and_respects_forgets(tmp_path: Path) -> None:
    ids, m = _data(400, dim=16)
    path = tmp_path / "g.usearch"
    v = (1, 1)
    assert update_graph(path, ids[:50], m[:50], v, "", threshold=100) == 0 and not path.exists()
    assert update_graph(path, ids[:300], m[:300], v, "", threshold=100) == 300
    # fewer than ANN_UPDATE_EVERY new vectors: left to the exact tail
    assert update_graph(path, ids, m, v, "", threshold=100) == 0
    # a graph holding a vector that is gone is rebuilt from what is left, not patched
    kept = np.concatenate([ids[:10], ids[11:]]), np.concatenate([m[:10], m[11:]])
    assert update_graph(path, *kept, (2, 2), "", threshold=100) == 399
    graph = usearch_index().restore(str(path))
    assert graph is not None and not graph.contains(int(ids[10])) and len(graph) == 399
    assert open_graph(path) is not None and open_graph(path)[2] == (2, 2)  # type: ignore[index]
    # a forget during the build (the generation changed): the new file does not stay
    path.unlink()
    (tmp_path / "generation").write_text("2")
    assert update_graph(path, *kept, v, "1", threshold=100) == 0 and not path.exists()
    assert open_graph(path) is None


def test_index_sees_vectors_embedded_out_of_order(store: Store) -> None:
    """A turn embedded after a later turn was indexed still reaches the in-memory index."""
    from memsched.embed.hashing import HashEmbedder
    from memsched.model import Turn
    from memsched.retrieve import Retriever

    emb = HashEmbedder()
    r = Retriever(store, {"hash": emb})
    a, b = store.add_turns([Turn("u", "s", "user", "zebra stripes"), Turn("u", "s", "user", "lion mane")])
    r.put_vector("u", "hash", b.text, emb.embed([b.text])[0])  # the later turn first
    assert [h.turn_id for h in r.dense("u", "hash", emb.embed(["lion"])[0])] == [b.id]
    r.put_vector("u", "hash", a.text, emb.embed([a.text])[0])  # then the earlier one
    hits = r.dense("u", "hash", emb.embed(["zebra"])[0])
    assert hits[0].turn_id == a.id
    # a new turn whose text already has a vector is searchable at once
    (c,) = store.add_turns([Turn("u", "s2", "user", "zebra stripes")])
    assert c.id in {h.turn_id for h in r.dense("u", "hash", emb.embed(["zebra"])[0])}


def test_growing_index_keeps_every_row() -> None:
    index = VectorIndex()
    ids, m = _data(300)
    for start in range(0, 300, 7):
        index.add(ids[start : start + 7], m[start : start + 7])
    index.add(ids[:10], m[:10])  # repeats are ignored
    assert len(index) == 300
    assert [h.turn_id for h in index.search(m[299], 1)] == [300]
