"""The per-turn lookups of a few turns by id go through the primary key, not the user's whole index.

SQLite's planner picked the (user_id, ...) indexes for `user_id = ? AND id IN (...)` and walked every
turn of the user to find a handful (`turn_vectors`: 4.6 ms for 6 turns of a 10k-turn user). These
tests read the plan SQLite makes for the statements the store runs, so they fail if it goes back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memsched.model import Turn, content_hash
from memsched.store.sqlite import SQLiteStore


def _plans(store: SQLiteStore, call: object) -> list[str]:
    """The query plans of the SELECTs `call()` runs on this thread's connection."""
    seen: list[str] = []
    store.db.set_trace_callback(seen.append)
    try:
        call()  # type: ignore[operator]
    finally:
        store.db.set_trace_callback(None)
    plans: list[str] = []
    for sql in seen:
        if sql.lstrip().upper().startswith("SELECT"):
            plans.extend(str(r[3]) for r in store.db.execute("EXPLAIN QUERY PLAN " + sql))
    return plans


def test_lookups_by_turn_id_use_the_primary_key(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db", page_size=4)
    try:
        turns = [Turn(user_id="u", session_id="s", role="user", content=f"turn {i}") for i in range(300)]
        store.add_turns(turns)
        store.add_turns([Turn(user_id="v", session_id="s", role="user", content="someone else")])
        vec = np.ones(4, dtype=np.float32) / 2
        store.put_vectors("u", "m", [(content_hash(t.text), vec) for t in turns])
        ids = [t.id for t in turns[-5:] if t.id is not None]
        other = store.session_turns("v", "s")[0].id
        assert other is not None

        found = store.turn_vectors("u", "m", [*ids, other])
        assert sorted(found) == sorted(ids)  # the other user's turn is filtered out
        assert np.array_equal(found[ids[0]], vec)
        assert sorted(store.turn_meta("u", [*ids, other])) == sorted(ids)
        assert [t.id for t in store.get_turns("u", [*ids, other])] == sorted(ids)

        for call in (
            lambda: store.turn_vectors("u", "m", ids),
            lambda: store.turn_meta("u", ids),
            lambda: store.get_turns("u", ids),
        ):
            plans = _plans(store, call)
            turn_steps = [
                p for p in plans if p.startswith(("SEARCH t ", "SEARCH turns ", "SCAN t ", "SCAN turns"))
            ]
            assert turn_steps, plans
            assert all("INTEGER PRIMARY KEY" in p for p in turn_steps), plans
    finally:
        store.close()
