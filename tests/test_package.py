from __future__ import annotations

import memsched


def test_all_is_sorted_and_complete() -> None:
    # isort-style order, as ruff's RUF022 keeps it: CONSTANTS, then Classes, then functions
    def kind(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(memsched.__all__) == sorted(memsched.__all__, key=kind)
    for name in memsched.__all__:
        assert hasattr(memsched, name), name
    public = {n for n in vars(memsched) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memsched.__all__)
