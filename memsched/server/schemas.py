"""The service's request and response models (pydantic at the edge; the OpenAPI schema comes from them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# -- requests -------------------------------------------------------------------------------------
#
# Strict: a JSON value of the wrong type is a 400 naming the field, as the OpenAI API answers it, not
# coerced ("stream": "yes", "record": 1, "budget": true or "500" used to be read as true, 1 and 500).
# memsched's own requests also refuse fields they do not know: a misspelt "bugdet" or "sesion_id"
# would otherwise be dropped without a word. The OpenAI-shaped ones keep and forward unknown fields.
OWN = ConfigDict(strict=True, extra="forbid")
OPENAI = ConfigDict(strict=True, extra="allow")


class ContextRequest(BaseModel):
    model_config = OWN
    user: str = Field(description="Whose memory to use")
    message: str = Field(description="The new message the context is built for")
    session_id: str | None = None
    budget: int | None = Field(
        default=None, ge=1, le=1_000_000, description="Token budget (default: MEMSCHED_BUDGET)"
    )
    timestamp: str | None = Field(default=None, description="ISO 8601 time of the message (default: now)")
    timezone: str | None = None
    record: bool = Field(default=False, description="Also record the message as a user turn")
    system_prompt: str | None = Field(
        default=None,
        description="Your app's persona, the start of the system message (an assistant's instructions);"
        " default: MEMSCHED's companion persona. Not stored",
    )


class TurnRequest(BaseModel):
    model_config = OWN
    user: str
    session_id: str
    role: str = Field(default="assistant", description="user, assistant or system")
    content: str
    timestamp: str | None = None
    timezone: str | None = Field(
        default=None,
        description="The user's IANA time zone (Asia/Shanghai): relative time in the turn is resolved in"
        " it, and it is remembered as the user's `timezone` profile fact",
    )


class ContentPart(BaseModel):
    model_config = OPENAI
    type: str


class ChatMessage(BaseModel):
    """An OpenAI chat message; fields memsched does not know are kept and forwarded."""

    model_config = OPENAI
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class ChatMetadata(BaseModel):
    model_config = OPENAI
    user: str | None = Field(default=None, description="Used when the top-level `user` is absent")
    session_id: str | None = Field(default=None, description="Default: 'default'")
    timestamp: str | None = None
    timezone: str | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat completion request. memsched owns `messages` history, `user` and `metadata`;
    every other field (temperature, tools, response_format, ...) is forwarded to the upstream."""

    model_config = OPENAI
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    user: str | None = Field(default=None, description="Whose memory to use (required here or in metadata)")
    safety_identifier: str | None = Field(
        default=None,
        description="OpenAI's per-user id (its successor to `user`): whose memory to use when neither"
        " `user` nor `metadata.user` is sent; forwarded to the upstream as sent",
    )
    stream: bool = False
    metadata: ChatMetadata | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_format: dict[str, Any] | None = None
    logit_bias: dict[str, float] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None


class ResponsesRequest(BaseModel):
    """An OpenAI Responses API request. memsched owns `input` (read as the turn), `instructions` (the
    persona), `user` and `metadata`; every other field (tools, temperature, max_output_tokens,
    previous_response_id, store, ...) is forwarded to the upstream."""

    model_config = OPENAI
    model: str | None = None
    input: str | list[Any] = Field(
        description="The user's message, or a list of input items (messages with role user, assistant,"
        " system or developer; function_call_output; ...)"
    )
    instructions: str | None = Field(default=None, description="The persona (a system prompt)")
    user: str | None = Field(default=None, description="Whose memory to use (required here or in metadata)")
    safety_identifier: str | None = Field(
        default=None,
        description="OpenAI's per-user id (its successor to `user`): whose memory to use when neither"
        " `user` nor `metadata.user` is sent; forwarded to the upstream as sent",
    )
    stream: bool = False
    metadata: ChatMetadata | None = None
    previous_response_id: str | None = Field(
        default=None, description="The upstream's stored response to continue (passed on as it is)"
    )
    store: bool | None = Field(default=None, description="Passed on to the upstream as it is")


class ResponseObject(BaseModel):
    """An OpenAI response, as the upstream sent it (with `stream: true`: its events, relayed)."""

    model_config = ConfigDict(extra="allow")
    id: str
    object: str = "response"
    output: list[dict[str, Any]]


# -- responses ------------------------------------------------------------------------------------


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "memsched"


class ModelList(BaseModel):
    """GET /v1/models: the model the proxy answers with (every request goes to the configured upstream
    model, whatever `model` it names), so that clients which list models first work unchanged."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class HealthResponse(BaseModel):
    status: str
    version: str
    db: str
    embedders: list[str]
    upstream: bool
    uptime_s: float


class ContextResponse(BaseModel):
    messages: list[dict[str, Any]]
    trace: dict[str, Any]


class TurnCreated(BaseModel):
    turn_id: int
    jobs: list[int]
    commands: list[dict[str, Any]]


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatChoice(BaseModel):
    model_config = ConfigDict(extra="allow")
    index: int
    message: dict[str, Any]
    finish_reason: str | None


class ChatCompletion(BaseModel):
    """An OpenAI chat completion (with `stream: true`: `text/event-stream` of chat.completion.chunk)."""

    model_config = ConfigDict(extra="allow")
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage | None = None


class LayerScores(BaseModel):
    scores: dict[str, float] = Field(description="Raw score per retrieval layer (bm25, minilm, ...)")
    ranks: dict[str, int] = Field(description="1-based rank per layer")
    fused: float


class MemoryHit(BaseModel):
    """A stored turn found by search."""

    turn_id: int
    session_id: str
    created_at: str
    role: str
    speaker: str | None = None
    content: str
    page_id: int | None = None
    dates: list[str] = Field(default_factory=list, description="Absolute dates the turn mentions")
    score: float
    scores: dict[str, float]
    layers: LayerScores


class BookmarkOut(BaseModel):
    id: int | None
    session_id: str
    keywords: list[str]
    aliases: dict[str, list[str]]
    summary: str
    kind: str
    importance: float
    source: str
    page_ids: list[int]
    turn_ids: list[int]
    first_at: str
    last_at: str


class SessionOut(BaseModel):
    id: str
    created_at: str
    turns: int


class TurnOut(BaseModel):
    id: int | None
    session_id: str
    seq: int | None
    page_id: int | None
    role: str
    speaker: str | None
    content: str
    created_at: str
    meta: dict[str, Any]


class TurnPage(BaseModel):
    turns: list[TurnOut] = Field(description="Oldest first")
    next_before: int | None = Field(
        description="Pass as `before` for the page of older turns (None: no more)"
    )


class JobOut(BaseModel):
    id: int | None
    kind: str
    user_id: str | None
    session_id: str | None
    priority: int | None
    status: str | None
    attempts: int | None
    last_error: str | None
    payload: dict[str, Any]
    run_after: str | None
    created_at: str | None
    finished_at: str | None
