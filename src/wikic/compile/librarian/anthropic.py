"""The Anthropic backend: the official SDK, prompt caching, forced tool use, Message Batches.

The SDK does the retrying (429, 529, 5xx, timeouts; it honours retry-after). Its errors are
translated into wikic errors in ``translate`` and nowhere else.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import anthropic

from ..schema import WikiSchema
from .base import Usage
from .llm import LLMLibrarian
from .model import ModelConfigError, ModelError, ModelRequest, ModelResponse, context_overflow

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_TIMEOUT = 600.0
DEFAULT_RETRIES = 4
DEFAULT_CONTEXT_TOKENS = 200_000


def translate(exc: anthropic.AnthropicError, model: str) -> ModelError:
    """SDK error → wikic error with a message that says what to do.

    A refused key, an unknown model and an unreachable API stop the compile
    (``ModelConfigError``); anything else belongs to the page whose request it was."""
    if isinstance(exc, anthropic.AuthenticationError):
        return ModelConfigError("Anthropic rejected the API key (401); check ANTHROPIC_API_KEY")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return ModelConfigError("the Anthropic API key may not use this model or feature (403)")
    if isinstance(exc, anthropic.NotFoundError):
        return ModelConfigError(f"Anthropic does not know model '{model}' (404); set librarian.model")
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelError("Anthropic did not answer in time, after retries; raise librarian.timeout")
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelConfigError(
            f"cannot reach the Anthropic API ({exc.__cause__ or exc}); check the network "
            "or ANTHROPIC_BASE_URL"
        )
    if isinstance(exc, anthropic.APIStatusError) and 400 <= exc.status_code < 500 and exc.status_code != 429:
        message = _message(exc)
        return context_overflow(message) or ModelError(
            f"Anthropic rejected the request ({exc.status_code}): {message}"
        )
    if isinstance(exc, anthropic.APIStatusError):
        return ModelError(
            f"Anthropic answered {exc.status_code} after retries: {_message(exc)}; rerun compile later"
        )
    return ModelError(f"Anthropic client error: {exc}")


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    err = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(err.get("message") or exc.message)[:300]


def usage_of(u: Any, retries: int = 0) -> Usage:
    return Usage(
        calls=1,
        input_tokens=int(getattr(u, "input_tokens", 0) or 0),
        output_tokens=int(getattr(u, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(u, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(u, "cache_creation_input_tokens", 0) or 0),
        retries=retries,
    )


def response_of(message: Any, retries: int = 0) -> ModelResponse:
    usage = usage_of(message.usage, retries)
    out = ModelResponse(
        usage=usage,
        stop_reason=str(message.stop_reason or ""),
        prompt_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
    )
    texts = []
    for block in message.content:
        if block.type == "tool_use" and out.tool_input is None:
            out.tool_input = block.input if isinstance(block.input, dict) else None
        elif block.type == "text":
            texts.append(block.text)
            for c in getattr(block, "citations", None) or []:
                out.citations.append(c.model_dump() if hasattr(c, "model_dump") else dict(c))
    out.text = "".join(texts)
    return out


class AnthropicModel:
    supports_cache = True
    supports_citations = True  # the provider can; the librarian uses tool use for provenance
    supports_batch = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_RETRIES,
        poll_interval: float = 10.0,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.name = model
        self.poll_interval = poll_interval
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries
        )
        self._closed = threading.Event()

    def params(self, req: ModelRequest) -> dict[str, Any]:
        system = []
        for i, text in enumerate(req.system):
            block: dict[str, Any] = {"type": "text", "text": text}
            if i == req.cached - 1:  # one breakpoint caches tools + the whole shared prefix
                block["cache_control"] = {"type": "ephemeral"}
            system.append(block)
        return {
            "model": self.name,
            "max_tokens": req.max_tokens,
            "system": system,
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.schema} for t in req.tools
            ],
            "tool_choice": {"type": "tool", "name": req.tool_name},
            "messages": [{"role": "user", "content": req.user}],
        }

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self._closed.is_set():
            raise ModelError("cancelled: the compile is stopping")
        try:
            raw = self.client.messages.with_raw_response.create(**self.params(request))
            message = raw.parse()
        except (anthropic.AnthropicError, RuntimeError) as exc:  # RuntimeError: a closed client
            if self._closed.is_set():
                raise ModelError("cancelled: the compile is stopping") from None
            if isinstance(exc, RuntimeError):
                raise
            raise translate(exc, self.name) from exc
        return response_of(message, getattr(raw, "retries_taken", 0))

    def close(self) -> None:
        """Stop: no request or retry starts from now on (one in flight runs to its end)."""
        self._closed.set()
        self.client.close()

    def batch(self, requests: list[ModelRequest]) -> list[ModelResponse | Exception]:
        """All requests as one Message Batch; waits for it to end. Results come back in order;
        a request that errored or expired comes back as a ``ModelError`` for its page."""
        batches = self.client.messages.batches
        try:
            created = batches.create(
                requests=[{"custom_id": f"r{i}", "params": self.params(r)} for i, r in enumerate(requests)]
            )
            status = created
            while status.processing_status != "ended":
                time.sleep(self.poll_interval)
                status = batches.retrieve(created.id)
            results = {r.custom_id: r.result for r in batches.results(created.id)}
        except anthropic.AnthropicError as exc:
            raise translate(exc, self.name) from exc
        out: list[ModelResponse | Exception] = []
        for i in range(len(requests)):
            result = results.get(f"r{i}")
            if result is None:
                out.append(ModelError("the batch returned no result for this page; rerun compile"))
            elif result.type == "succeeded":
                out.append(response_of(result.message))
            elif result.type == "errored":
                err = getattr(result.error, "error", None)
                out.append(ModelError(f"batch request failed: {getattr(err, 'message', result.error)}"))
            else:
                out.append(ModelError(f"batch request {result.type}; rerun compile"))
        return out


class AnthropicLibrarian(LLMLibrarian):
    @classmethod
    def from_schema(
        cls, schema: WikiSchema, env: Mapping[str, str], *, batch: bool = False, **model_args: Any
    ) -> AnthropicLibrarian:
        lib = schema.librarian
        model = AnthropicModel(
            lib.model or DEFAULT_MODEL,
            api_key=env.get("ANTHROPIC_API_KEY"),
            base_url=lib.base_url or env.get("ANTHROPIC_BASE_URL") or None,
            **{"timeout": lib.timeout, **model_args},
        )
        return cls.from_model(
            model, schema, name="anthropic", batch=batch, default_context=DEFAULT_CONTEXT_TOKENS
        )
