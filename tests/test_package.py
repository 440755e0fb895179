from __future__ import annotations

import memsched


def test_all_is_sorted_and_complete() -> None:
    assert list(memsched.__all__) == sorted(memsched.__all__)
    for name in memsched.__all__:
        assert hasattr(memsched, name), name
    public = {n for n in vars(memsched) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memsched.__all__)
