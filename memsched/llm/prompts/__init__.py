"""Prompt files, kept as text so they can be read and changed without touching code."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """The text of `prompts/<name>.txt`."""
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
