"""The OpenAI-compatible backend: ``POST {base_url}/chat/completions`` through httpx.

Works with OpenAI and with local servers (Ollama, llama.cpp server, vLLM). It forces the tool
call; a server that rejects ``tools``/``tool_choice`` is asked again in JSON mode
(``response_format: json_object``), and stays in that mode. 429 and 5xx are retried with backoff,
honouring Retry-After; a timeout is retried once (a slow local server is still busy with the
first request). HTTP errors are translated into wikic errors in ``_error`` only: a refused key,
an unknown model or an unreachable server stop the compile; anything else fails one page.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ...core.errors import ConfigError
from ..schema import WikiSchema
from .base import Usage
from .llm import LLMLibrarian
from .model import ModelConfigError, ModelError, ModelRequest, ModelResponse, context_overflow

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONTEXT_TOKENS = 8192  # a local server's usual window; OpenAI's own models have more
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
MAX_RETRY_AFTER = 60.0
TIMEOUT_RETRIES = 1


def retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return max(0.0, email.utils.mktime_tz(parsed) - time.time()) if parsed else None


class OpenAIModel:
    supports_cache = False  # servers cache prefixes on their own; we only read the counts
    supports_citations = False
    supports_batch = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        json_mode: bool = False,
        client: httpx.Client | None = None,
    ) -> None:
        self.name = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.max_retries = max_retries
        self.backoff = backoff
        self.json_mode = json_mode
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            headers=headers,
            follow_redirects=False,
        )
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def payload(self, req: ModelRequest, json_mode: bool) -> dict[str, Any]:
        system = "\n\n".join(req.system)
        body: dict[str, Any] = {"model": self.name, "max_tokens": req.max_tokens, "temperature": 0}
        if json_mode:
            tool = req.tool
            system += (
                f"\n\n# JSON mode\n\nReply with one JSON object and nothing else: the arguments of "
                f"`{tool.name}`, matching this JSON schema:\n{json.dumps(tool.schema)}"
            )
            body["response_format"] = {"type": "json_object"}
        else:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.schema},
                }
                for t in req.tools
            ]
            body["tool_choice"] = {"type": "function", "function": {"name": req.tool_name}}
        body["messages"] = [{"role": "system", "content": system}, {"role": "user", "content": req.user}]
        return body

    def complete(self, request: ModelRequest) -> ModelResponse:
        retries = timeouts = 0
        while True:
            if self._closed.is_set():
                raise ModelError("cancelled: the compile is stopping")
            json_mode = self.json_mode
            resp = None
            try:
                resp = self.client.post(self.url, json=self.payload(request, json_mode))
            except (httpx.TransportError, RuntimeError) as exc:  # RuntimeError: a closed client
                if self._closed.is_set():
                    raise ModelError("cancelled: the compile is stopping") from None
                if isinstance(exc, RuntimeError):
                    raise
                if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
                    timeouts += 1
                    if timeouts > TIMEOUT_RETRIES:
                        raise ModelError(
                            f"{self.url} did not answer within {self.timeout:g} s, twice; raise "
                            "librarian.timeout (a slow local model needs minutes per page)"
                        ) from None
                elif retries >= self.max_retries:
                    raise ModelConfigError(
                        f"cannot reach {self.url} ({exc or type(exc).__name__}), after {retries} "
                        "retries: is the server running? check librarian.base_url or OPENAI_BASE_URL"
                    ) from None
            if resp is not None and resp.status_code == 200:
                return self._response(resp, retries, request.max_tokens)
            if resp is not None and resp.status_code == 400 and not json_mode and _about_tools(resp):
                with self._lock:
                    self.json_mode = True  # this server has no (forced) tool calling
                continue
            if resp is not None and resp.status_code not in RETRY_STATUS:
                raise _error(resp, self.url, self.name)
            if resp is not None and retries >= self.max_retries:
                raise _error(resp, self.url, self.name)
            wait = retry_after(resp.headers) if resp is not None else None
            if wait is None:
                wait = self.backoff * (2**retries) * (1 - 0.25 * random.random())
            if self._closed.wait(min(wait, MAX_RETRY_AFTER)):
                raise ModelError("cancelled: the compile is stopping")
            retries += 1

    def _response(self, resp: httpx.Response, retries: int, max_tokens: int) -> ModelResponse:
        try:
            data = resp.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            # an unusable body counts as malformed output: the librarian retries it once
            return ModelResponse(text=resp.text[:2000], usage=Usage(calls=1, retries=retries))
        u = data.get("usage") or {}
        details = u.get("prompt_tokens_details") or {}
        usage = Usage(
            calls=1,
            input_tokens=int(u.get("prompt_tokens") or 0),
            output_tokens=int(u.get("completion_tokens") or 0),
            cache_read_tokens=int(details.get("cached_tokens") or 0),
            retries=retries,
        )
        out = ModelResponse(text=message.get("content") or "", usage=usage, prompt_tokens=usage.input_tokens)
        out.stop_reason = str(data["choices"][0].get("finish_reason") or "")
        if usage.output_tokens >= max_tokens:  # llama-cpp-python says "tool_calls" even when cut off
            out.stop_reason = "length"
        for call in message.get("tool_calls") or []:
            args = (call.get("function") or {}).get("arguments")
            if isinstance(args, dict):
                out.tool_input = args
            elif isinstance(args, str):
                try:
                    value = json.loads(args, strict=False)  # small models leave raw newlines in strings
                except json.JSONDecodeError:
                    out.text = out.text or args
                    continue
                out.tool_input = value if isinstance(value, dict) else None
            break
        return out

    def close(self) -> None:
        """Stop: no request or retry starts from now on (one in flight runs to its end)."""
        self._closed.set()
        self.client.close()


def _about_tools(resp: httpx.Response) -> bool:
    text = resp.text.lower()
    return ("tool" in text or "function" in text) and context_overflow(text) is None


def _error(resp: httpx.Response, url: str, model: str) -> ModelError:
    try:
        body = resp.json()
        detail = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
    except ValueError:
        detail = resp.text
    detail = str(detail)[:300]
    if resp.status_code in (401, 403):
        return ModelConfigError(f"{url} refused the request ({resp.status_code}): check OPENAI_API_KEY")
    if resp.status_code == 404:
        return ModelConfigError(
            f"{url} answered 404 for model '{model}': check librarian.base_url (it ends in /v1) "
            f"and librarian.model ({detail})"
        )
    if 400 <= resp.status_code < 500 and resp.status_code not in RETRY_STATUS:
        # a request the server refuses belongs to its page: the prompt is too long, or odd
        return context_overflow(detail) or ModelError(
            f"{url} rejected the request ({resp.status_code}): {detail}"
        )
    return ModelError(f"{url} answered {resp.status_code} after retries: {detail}; rerun compile later")


class OpenAILibrarian(LLMLibrarian):
    @classmethod
    def from_schema(
        cls, schema: WikiSchema, env: Mapping[str, str], *, batch: bool = False, **model_args: Any
    ) -> OpenAILibrarian:
        lib = schema.librarian
        key = env.get("OPENAI_API_KEY") or None
        base_url = lib.base_url or env.get("OPENAI_BASE_URL") or (DEFAULT_BASE_URL if key else "")
        if not base_url:
            raise ConfigError(
                f"{schema.path}: librarian.base_url is not set; set it (for example "
                "http://localhost:11434/v1 for Ollama) or OPENAI_BASE_URL, or set OPENAI_API_KEY for OpenAI"
            )
        model = env.get("OPENAI_MODEL") or lib.model
        if not model:
            raise ConfigError(f"{schema.path}: librarian.model is not set; name the model to use")
        if batch:
            raise ConfigError("--batch needs the anthropic librarian")
        model_api = OpenAIModel(
            model, base_url=base_url, api_key=key, **{"timeout": lib.timeout, **model_args}
        )
        return cls.from_model(model_api, schema, name="openai", default_context=DEFAULT_CONTEXT_TOKENS)
