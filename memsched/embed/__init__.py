"""Embedders: the `Embedder` protocol and its implementations (minilm, wordllama, gloss, openai, hash)."""

from memsched.embed.base import Embedder, available, create, normalize, register

__all__ = ["Embedder", "available", "create", "normalize", "register"]
