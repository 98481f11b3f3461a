"""The tiny interface between the LLM librarian and a model provider.

A ``Model`` turns one ``ModelRequest`` (system parts, one user message, one tool to call) into a
``ModelResponse`` (the tool input, or text, plus usage). Capabilities are declared as attributes,
so the librarian never asks "which vendor is this". ``MockModel`` serves the unit tests.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...core.errors import WikicError
from .base import Usage


@dataclass(frozen=True)
class Tool:
    """The one function the model must call; ``schema`` is its JSON schema."""

    name: str
    description: str
    schema: dict[str, Any]


# A cited sentence as every tool returns it: text plus the keys of the sections it cites.
CITED_SENTENCE = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "cites": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text", "cites"],
}


@dataclass(frozen=True)
class ModelRequest:
    """``tools`` and ``system[:cached]`` are the shared prefix (rules, output schema), identical
    for every page, so providers that cache prompts can reuse it; the rest varies per page."""

    system: tuple[str, ...]
    user: str
    tools: tuple[Tool, ...]  # the same list on every request: tools are part of a cached prefix
    tool_name: str  # the tool the model is made to call
    max_tokens: int = 4096
    cached: int = 1
    key: str = ""  # a caller-chosen id (the page path), used to match batch results

    @property
    def prefix(self) -> tuple[str, ...]:
        return self.system[: self.cached]

    @property
    def tool(self) -> Tool:
        return next(t for t in self.tools if t.name == self.tool_name)


@dataclass
class ModelResponse:
    tool_input: dict[str, Any] | None = None  # the arguments of the tool call, when there was one
    text: str = ""  # any text the model wrote (may hold JSON when the endpoint has no tool calling)
    citations: list[dict[str, Any]] = field(default_factory=list)  # provider citation blocks, if any
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    stop_reason: str = ""
    prompt_tokens: int = 0  # the whole prompt as the provider counted it (cached or not); 0: unknown

    @property
    def truncated(self) -> bool:
        """The reply stopped at ``max_tokens`` (OpenAI "length", Anthropic "max_tokens")."""
        return self.stop_reason in ("length", "max_tokens")


class ModelError(WikicError):
    """One request failed for good: retries exhausted (overload, 5xx), a timeout, or a request
    the provider refused (400). It belongs to one page, which is left unwritten; a rerun tries
    it again, and the other pages are written."""

    exit_code = 1


class ContextOverflow(ModelError):
    """The prompt (plus the reply budget) does not fit the model's context window. The numbers
    are the provider's when it gave them: the librarian splits the page to fit and tries again."""

    def __init__(self, message: str, prompt_tokens: int | None = None, context_tokens: int | None = None):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_tokens = context_tokens


class ModelConfigError(ModelError):
    """No page can succeed (a refused key, an unknown model, an unreachable server), so the
    compile stops with exit code 2."""

    exit_code = 2


# How providers say a prompt is over the context window, with the numbers they give:
# llama.cpp server "request (9962 tokens) exceeds the available context size (8192 tokens)";
# OpenAI, vLLM and llama-cpp-python "maximum context length is 8192 tokens. However, you
# requested 14058 tokens (9962 in the messages, 4096 in the completion)"; llama-cpp-python
# "Requested tokens (9962) exceed context window of 8192"; Anthropic "prompt is too long:
# 215000 tokens > 200000 maximum".
_OVERFLOW = (
    re.compile(r"\((?P<prompt>\d+) tokens\) exceeds? the available context size \((?P<ctx>\d+) tokens\)"),
    re.compile(r"maximum context length is (?P<ctx>\d+) tokens.*?\((?P<prompt>\d+) in the messages", re.S),
    re.compile(r"maximum context length is (?P<ctx>\d+) tokens.*?requested (?P<prompt>\d+) tokens", re.S),
    re.compile(r"requested tokens \((?P<prompt>\d+)\) exceed context window of (?P<ctx>\d+)"),
    re.compile(r"prompt is too long: (?P<prompt>\d+) tokens > (?P<ctx>\d+)"),
)
_OVERFLOW_WORDS = ("context length", "context window", "context size", "context_length", "prompt is too long")


def context_overflow(message: str) -> ContextOverflow | None:
    """A ``ContextOverflow`` when a provider's error message says the prompt is too long."""
    low = message.lower()
    for pattern in _OVERFLOW:
        m = pattern.search(low)
        if m:
            prompt, ctx = int(m.group("prompt")), int(m.group("ctx"))
            return ContextOverflow(
                f"prompt of {prompt:,} tokens exceeds the model's {ctx:,}-token context", prompt, ctx
            )
    if any(w in low for w in _OVERFLOW_WORDS):
        return ContextOverflow(f"the prompt exceeds the model's context ({message[:200]})")
    return None


class Model(Protocol):
    """A provider. It may also have ``close()``: the librarian calls it when a compile stops
    (a configuration error, Ctrl-C), after which no request or retry may start."""

    name: str  # the model id sent to the provider
    supports_cache: bool  # honours ``ModelRequest.cached`` (prompt caching)
    supports_citations: bool  # can return provider citation blocks
    supports_batch: bool  # has ``batch(requests)``

    def complete(self, request: ModelRequest) -> ModelResponse: ...


class MockModel:
    """A scripted model for unit tests.

    ``enqueue`` a ``ModelResponse``, a tool-input dict, a callable ``(request) -> response`` or an
    exception; ``complete`` records the request in ``history`` and plays the next item. With an
    empty queue it falls back to ``default`` (a callable), or fails the test.
    """

    name = "mock-1"
    supports_cache = True
    supports_citations = False
    supports_batch = False

    def __init__(self, default: Callable[[ModelRequest], Any] | None = None) -> None:
        self.queue: deque[Any] = deque()
        self.history: list[ModelRequest] = []
        self.default = default
        self._lock = threading.Lock()

    def enqueue(self, item: Any) -> MockModel:
        self.queue.append(item)
        return self

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.history.append(request)
            item = self.queue.popleft() if self.queue else self.default
        if item is None:
            raise AssertionError(f"MockModel: no response queued for request {len(self.history)}")
        if callable(item) and not isinstance(item, type):
            item = item(request)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, dict):
            return ModelResponse(tool_input=item)
        if isinstance(item, str):
            return ModelResponse(text=item)
        assert isinstance(item, ModelResponse), f"MockModel cannot play {item!r}"
        return item
