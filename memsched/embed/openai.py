"""The `openai` embedder: any OpenAI-compatible `/v1/embeddings` endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from memsched.embed.base import normalize, register
from memsched.errors import ConfigError, EmbedderError, LLMError
from memsched.llm.client import post_json, split_credentials

if TYPE_CHECKING:
    from memsched.config import Config

# Embedded once, lazily, to learn the vector width when it is asked for before any real call.
_PROBE = "dimension probe"


class OpenAIEmbedder:
    """Embeds through `POST {base_url}/embeddings`, `batch_size` texts per request.

    `base_url` includes the version prefix (`https://api.openai.com/v1`). `dim` is not known until
    the server has answered once: reading it before any `embed` costs one probe request. Empty or
    blank texts are not sent (servers reject them) and get zero rows.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        batch_size: int = 64,
        timeout: float = 30.0,
        *,
        retries: int = 2,
        backoff: float = 0.2,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.base_url, self._auth = split_credentials(base_url.rstrip("/"))
        self.model = model
        self.model_id = f"openai:{model}"
        self.batch_size = batch_size
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.micro_batch = True  # one request for the texts of concurrent turns (embed.batch)
        self.sentence = True  # an embedding model's cosine says whether two texts share a subject
        self._api_key = api_key or None
        self._dim: int | None = None
        self._http = httpx.Client()

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._request([_PROBE])
        assert self._dim is not None  # set by _request
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = value

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 matrix of unit rows (zero rows for empty texts).

        Raises `EmbedderError` when the endpoint fails or answers with the wrong shape.
        """
        keep = [i for i, text in enumerate(texts) if text.strip()]
        parts = [
            self._request([texts[i] for i in keep[start : start + self.batch_size]])
            for start in range(0, len(keep), self.batch_size)
        ]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if parts:
            out[keep] = normalize(np.concatenate(parts, axis=0))
        return out

    def _request(self, batch: list[str]) -> np.ndarray:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            data = post_json(
                self._http,
                self.url,
                {"model": self.model, "input": batch},
                headers=headers,
                timeout=self.timeout,
                retries=self.retries,
                backoff=self.backoff,
                secret=self._api_key,
                auth=self._auth,
            )
        except LLMError as exc:
            raise EmbedderError(f"embedder {self.model_id}: {exc}") from None
        matrix = _parse(data, len(batch), self.url)
        if self._dim is None:
            self._dim = matrix.shape[1]
        elif matrix.shape[1] != self._dim:
            raise EmbedderError(f"{self.url} returned {matrix.shape[1]}-dim vectors, expected {self._dim}")
        return matrix

    def close(self) -> None:
        self._http.close()


def _parse(data: dict[str, Any], expected: int, url: str) -> np.ndarray:
    try:
        # Servers may answer out of order; `index` says which input each vector belongs to.
        rows = sorted(data["data"], key=lambda item: item.get("index", 0))
        matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise EmbedderError(f"invalid response from {url}: expected data[].embedding lists") from None
    if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
        raise EmbedderError(f"{url} returned {matrix.shape} vectors for {expected} input(s)")
    return matrix


def from_config(config: Config) -> OpenAIEmbedder:
    """The `openai` embedder configured by `MEMSCHED_EMBED_BASE_URL/_API_KEY/_MODEL`."""
    missing = [
        name
        for name, value in (
            ("MEMSCHED_EMBED_BASE_URL", config.embed_base_url),
            ("MEMSCHED_EMBED_MODEL", config.embed_model),
        )
        if not value
    ]
    if missing:
        raise ConfigError(f"the openai embedder needs {' and '.join(missing)} to be set")
    assert config.embed_base_url is not None and config.embed_model is not None
    return OpenAIEmbedder(config.embed_base_url, config.embed_api_key, config.embed_model)


register("openai", from_config)
