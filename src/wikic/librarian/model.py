"""The tiny interface between the LLM librarian and a model provider.

A ``Model`` turns one ``ModelRequest`` (system parts, one user message, one tool to call) into a
``ModelResponse`` (the tool input, or text, plus usage). Capabilities are declared as attributes,
so the librarian never asks "which vendor is this". ``MockModel`` serves the unit tests.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import WikicError
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


class ModelError(WikicError):
    """A provider call failed after the client's retries (overload, timeouts, 5xx).

    The page it was for is left unwritten; a rerun tries it again.
    """

    exit_code = 1


class ModelConfigError(ModelError):
    """The provider rejected the request itself (bad key, unknown model, bad request):
    no page can succeed, so the compile stops."""

    exit_code = 2


class Model(Protocol):
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
