"""Typed defaults and the `Config` that reads `MEMSCHED_*` variables.

Precedence, everywhere: an explicit argument (a CLI option, a keyword) > the environment > the default.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from memsched.errors import ConfigError

ENV_PREFIX = "MEMSCHED_"

DEFAULT_PAGE_SIZE = 20
DEFAULT_PG_LOCK_CONNECTIONS = 20
DEFAULT_TOKENIZER = "o200k_base"
# Chosen by measurement (BENCHMARKS.md, "Which embedder"): English queries use MiniLM + BM25; Chinese
# queries fuse WordLlama, MiniLM (half weight) and jieba-segmented BM25 (weights in retrieve.FusionWeights).
DEFAULT_EMBEDDERS = "minilm,wordllama,gloss"
DEFAULT_BUDGET = 2000
DEFAULT_RECENT_SHARE = 0.3
DEFAULT_RECENT_MAX_TURNS = 12
DEFAULT_MODEL_CONTEXT = 8192
DEFAULT_OVERFLOW_THRESHOLD = 0.8
DEFAULT_SYSTEM_PROMPT = (
    "You are a warm, attentive companion in a long-running conversation. "
    "Use the remembered conversation excerpts when they help; never invent memories."
)
DEFAULT_LLM_TIMEOUT = 20.0
# The proxy's upstream: a non-streamed reply sends nothing until it is written, which can take minutes
# on a slow model; the OpenAI SDK (the proxy's usual client) waits 600 s, and so does memsched.
DEFAULT_UPSTREAM_TIMEOUT = 600.0
DEFAULT_RERANK_TIMEOUT = 2.0
# The service's limits: bigger bodies / messages are a 413 (nothing is stored).
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024  # room for an inline image of 20 MB (base64) and its text
DEFAULT_MAX_MESSAGE_TOKENS = 32_000
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8377


# What a database URL (rather than a SQLite file path) starts with.
DATABASE_URL_SCHEMES = ("postgresql://", "postgres://")


def default_home() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("memsched", appauthor=False))


@dataclass(slots=True)
class Config:
    """Every setting memsched reads. Build one with `Config.load(...)`."""

    home: Path = field(default_factory=default_home)
    db: Path | None = None  # default: <home>/memsched.db
    # postgresql://user:pass@host/db: a shared PostgreSQL (with pgvector) instead of the SQLite file.
    database_url: str | None = field(default=None, repr=False)  # may hold a password
    # PostgreSQL: connections per process pinned by session locks, one per session in flight (a turn
    # holds its session through the upstream call); a hold that finds them all pinned waits for one.
    pg_lock_connections: int = DEFAULT_PG_LOCK_CONNECTIONS
    page_size: int = DEFAULT_PAGE_SIZE
    tokenizer: str = DEFAULT_TOKENIZER
    embedders: str = DEFAULT_EMBEDDERS  # comma-separated names: minilm, wordllama, gloss, openai, hash
    budget: int = DEFAULT_BUDGET
    recent_share: float = DEFAULT_RECENT_SHARE
    recent_max_turns: int = DEFAULT_RECENT_MAX_TURNS
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    model_context: int = DEFAULT_MODEL_CONTEXT
    overflow_threshold: float = DEFAULT_OVERFLOW_THRESHOLD
    # The model that writes the replies (the proxy's upstream).
    upstream_base_url: str | None = None
    upstream_api_key: str | None = field(default=None, repr=False)  # a secret: never in reprs or logs
    upstream_model: str | None = None
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT  # seconds for each phase (connect, each read)
    # memsched's own helper LLM (bookmarks, rerank, summaries, judge); falls back to the upstream.
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)  # a secret: never in reprs or logs
    llm_model: str | None = None
    llm_timeout: float = DEFAULT_LLM_TIMEOUT
    rerank_timeout: float = DEFAULT_RERANK_TIMEOUT
    # An OpenAI-compatible /v1/embeddings endpoint, for the `openai` embedder.
    embed_base_url: str | None = None
    embed_api_key: str | None = field(default=None, repr=False)  # a secret: never in reprs or logs
    embed_model: str | None = None
    # A vision model that describes images in user messages (OpenAI-compatible chat with image parts).
    # With only the model set, the upstream's base URL and key are used.
    vision_base_url: str | None = None
    vision_api_key: str | None = field(default=None, repr=False)  # a secret: never in reprs or logs
    vision_model: str | None = None
    upstream_vision: bool = False  # the proxy also sends the image parts themselves upstream
    paging_mode: str = "retrieve"  # retrieve | tools | both
    recall_rounds: int = 3  # proxy: recall rounds answered per turn before the model must reply
    recall_max_tokens: int = 1000  # proxy: a recalled page is cut to this many tokens
    # The cooperative layer (LLM rerank, LLM decomposition of compound questions) runs on the P0
    # path, so it is opt-in: by default a turn makes no LLM call but the reply.
    rerank: bool = False
    # On (and with a helper LLM configured), a P2 job labels each routed user message (mode, mood,
    # intensity, cause) and corrects the carried state for the next turn (`labeller.py`). Off by
    # default: it is one LLM call per user message, the write cost memsched exists to avoid.
    mood_labeller: bool = False
    # One thread per MiniLM call: a single query takes ~9 ms on one core but 50+ ms with two when
    # background jobs hold the other core (BENCHMARKS.md). Raise it for bulk imports on idle machines.
    torch_threads: int = 1
    # `memsched serve` keeps one CPU for the batched embedding dispatcher that every turn waits on,
    # and its other threads off it (`memsched.affinity`; Linux, 2+ CPUs): +20% turns/s on 2 cores.
    embed_core: bool = True
    minilm_int8: bool = False  # dynamic int8 MiniLM: faster, slightly different vectors
    # onnx: MiniLM exported once to ONNX and run by ONNX Runtime (same vectors, ~2x faster); torch:
    # sentence-transformers. The export is cached in `model_cache` (default: the user cache dir).
    minilm_backend: str = "onnx"
    model_cache: Path | None = None
    p2_window: str | None = None  # "HH:MM-HH:MM" local time: P2 jobs run only inside it
    # In-memory vectors (per-user indexes) are a cache over the store, capped in MB; the least
    # recently used users' indexes are dropped and reloaded from the store when they come back.
    vector_cache_mb: int = 512
    user_cache_size: int = 2000  # per-user in-memory state (name indexes, speakers …): users kept
    strategies: Path | None = None  # a strategy table (TOML) replacing memsched/strategies.toml
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = 1
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # 0: no limit
    max_message_tokens: int = DEFAULT_MAX_MESSAGE_TOKENS  # 0: no limit
    max_image_bytes: int = 20 * 1024 * 1024  # an inline (data: URL) image over this is a 413
    # The user a request acts for when it names none (no `user` field, no `metadata.user`): for an app
    # with one user whose OpenAI client never sets `user`. Unset: such a request is a 400.
    default_user: str | None = None
    # "tenant:key,tenant:key": API keys of the HTTP service (more with `memsched keys add TENANT`).
    api_keys: str | None = field(default=None, repr=False)

    @classmethod
    def load(cls, env: dict[str, str] | None = None, **overrides: Any) -> Config:
        """Defaults, then `MEMSCHED_<FIELD>` variables, then the non-None keyword overrides."""
        env = dict(os.environ) if env is None else env
        hints = get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None and raw != "":
                if f.name == "db" and raw.startswith(DATABASE_URL_SCHEMES):
                    values.setdefault("database_url", raw)  # MEMSCHED_DB=postgresql://...
                    continue
                values[f.name] = _coerce(f.name, raw, hints[f.name])
        for name, value in overrides.items():
            if name not in hints:
                raise ConfigError(f"unknown setting {name!r}")
            if value is not None and name == "db" and str(value).startswith(DATABASE_URL_SCHEMES):
                # `--db postgresql://...`: the URL whole (a Path would fold its "//" into "/").
                values["database_url"] = str(value)
                values.pop("db", None)
                continue
            if value is not None:
                values[name] = _coerce(name, value, hints[name]) if isinstance(value, str) else value
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if self.page_size < 1:
            raise ConfigError(f"page_size must be >= 1, got {self.page_size}")
        if self.pg_lock_connections < 1:
            raise ConfigError(f"pg_lock_connections must be >= 1, got {self.pg_lock_connections}")
        if self.budget < 1:
            raise ConfigError(f"budget must be >= 1, got {self.budget}")
        if not 0.0 <= self.recent_share <= 1.0:
            raise ConfigError(f"recent_share must be between 0 and 1, got {self.recent_share}")
        if not 0.1 <= self.overflow_threshold <= 1.0:
            raise ConfigError(f"overflow_threshold must be between 0.1 and 1, got {self.overflow_threshold}")
        if self.minilm_backend not in ("onnx", "torch"):
            raise ConfigError(f"minilm_backend must be onnx or torch, got {self.minilm_backend!r}")
        if self.workers < 0:
            raise ConfigError(
                f"workers must be >= 0 (0: no background jobs in `memsched serve`), got {self.workers}"
            )
        if self.recall_rounds < 0:
            raise ConfigError(f"recall_rounds must be >= 0, got {self.recall_rounds}")
        if not self.upstream_timeout > 0 or not self.llm_timeout > 0:
            raise ConfigError(
                f"upstream_timeout and llm_timeout must be > 0, got {self.upstream_timeout} and {self.llm_timeout}"
            )
        if self.paging_mode not in ("retrieve", "tools", "both"):
            raise ConfigError(f"paging_mode must be retrieve, tools or both, got {self.paging_mode!r}")
        for name in ("upstream_base_url", "llm_base_url", "embed_base_url", "vision_base_url"):
            url = getattr(self, name)
            if url and not re.match(r"https?://[^/\s]", url, re.IGNORECASE):
                # "localhost:11434" or "127.0.0.1:8000/v1" (no scheme): every call would fail, retried.
                shown = re.sub(r"//[^@/]*@", "//***@", url)  # credentials in it stay out of the message
                raise ConfigError(
                    f"{ENV_PREFIX}{name.upper()} must be an http(s) URL such as"
                    f" http://127.0.0.1:11434/v1, got {shown!r}"
                )

    @property
    def db_path(self) -> Path:
        return self.db if self.db is not None else self.home / "memsched.db"

    @property
    def store_location(self) -> str:
        """Where the data lives, for logs: the database URL without its password, or the SQLite file."""
        if self.database_url:
            return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", self.database_url)
        return str(self.db_path)

    @property
    def embedder_names(self) -> list[str]:
        return [n.strip() for n in self.embedders.split(",") if n.strip()]

    def helper_llm(self) -> tuple[str, str | None, str] | None:
        """(base_url, api_key, model) of memsched's own LLM, or None when none is configured."""
        base = self.llm_base_url or self.upstream_base_url
        model = self.llm_model or self.upstream_model
        if not base or not model:
            return None
        key = self.llm_api_key if self.llm_base_url else self.upstream_api_key
        return base, key, model

    def vision_llm(self) -> tuple[str, str | None, str] | None:
        """(base_url, api_key, model) of the vision model, or None when none is configured."""
        if not self.vision_model:
            return None
        base = self.vision_base_url or self.upstream_base_url
        if not base:
            return None
        key = self.vision_api_key if self.vision_base_url else self.upstream_api_key
        return base, key, self.vision_model

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


def _coerce(name: str, raw: Any, typ: Any) -> Any:
    text = str(raw)
    try:
        if typ in (int, "int"):
            return int(text)
        if typ in (float, "float"):
            return float(text)
        if typ in (bool, "bool"):
            return text.strip().lower() in ("1", "true", "yes", "on")
        if typ is Path or typ == (Path | None) or "Path" in str(typ):
            return Path(text).expanduser()
    except ValueError as exc:
        kind = "an integer" if typ in (int, "int") else "a number" if typ in (float, "float") else f"a {typ}"
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={text!r} is not {kind}") from exc
    return text
