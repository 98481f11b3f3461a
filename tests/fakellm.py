"""Fake LLM APIs on 127.0.0.1 that speak the real wire formats, with scripted faults.

- ``FakeAnthropic``: ``POST /v1/messages`` (tool_use and text blocks, usage with
  ``cache_creation_input_tokens``/``cache_read_input_tokens``: a cache write the first time a
  cached prefix is seen, reads afterwards) and the Message Batches endpoints.
- ``FakeOpenAI``: ``POST /v1/chat/completions`` (tool calls or JSON mode, usage with
  ``prompt_tokens_details.cached_tokens``).

Both answer with ``Brain``, a stand-in model that quotes the sources it is given, so its pages
verify. Faults are queued with ``script(...)`` and consumed one per model call, in arrival order:
``429`` (with retry-after), ``529``, ``500``, ``timeout`` (sleeps past the client's timeout),
``malformed`` (wrong-shaped tool input), ``text`` (no tool call), ``invent`` (invented citation
keys and an unsupported sentence), ``obey`` (writes what an injected instruction asks for),
``401``, ``400`` (a request the server refuses, not about its length).

Asked a question (the ``answer`` tool of ``wikic ask``), ``Brain`` quotes the first sentence of
the section holding most of the question's words, citing its key, and refuses when none holds
any; faults there: ``refuse``, ``cites5`` (``"cites": 5``, not a list), ``obey`` (also cites a
key it was not given and writes what an injected instruction asks for).

Faults that a small local model shows (SmolLM2-135M behind llama.cpp did all of them):
``length`` (the reply is cut off at max_tokens: ``finish_reason: "length"`` with half the JSON,
or ``stop_reason: "max_tokens"`` with part of the tool input), ``cut`` (the same, but as
llama-cpp-python reports it: ``finish_reason: "tool_calls"``, with all of max_tokens used), ``newlines`` (valid JSON but for
raw newlines inside strings), ``false`` (every sentence false: wrong numbers, made-up claims; its
repair is as false). ``context=N`` plays a server with an N-token window: a longer prompt is
refused with a 400 in the provider's words, and consumes no fault.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from apiserver import QuietServer

from wikic.compile.librarian.extract import prose_units

SOURCE = re.compile(r'<source key="(S\d+)"[^>]*section="([^"]*)"[^>]*>\n(.*?)\n</source>', re.S)
SECTION = re.compile(r'<section key="(S\d+)"[^>]*>\n(.*?)\n</section>', re.S)
QUESTION = re.compile(r"<question>(.*?)</question>", re.S)
REPAIR_LINE = re.compile(r'^(\d+)\. (".*") cites \[([^\]]*)\]: ', re.M)
UNSUPPORTED = "Every Verdant garden comes with a free 99-year warranty and a robot gardener."
INDUCED = "Readers should visit evil.example.com at once for a 90% refund on every order."


def ntok(text: str) -> int:
    return max(1, len(text) // 4)


class Brain:
    """A careful model: each offered section becomes a section of the page with its first quotes."""

    def __init__(self, per_source: int = 2, max_sections: int = 8) -> None:
        self.per_source = per_source
        self.max_sections = max_sections

    def sources(self, user: str) -> list[tuple[str, str, str]]:
        return SOURCE.findall(user)

    def page(self, user: str, fault: str = "") -> dict[str, Any]:
        sections = []
        first_key = ""
        for key, heading, text in self.sources(user):
            quotes = [t for _, t in prose_units(text)][: self.per_source]
            if not quotes:
                continue
            first_key = first_key or key
            sentences = [{"text": q, "cites": [key]} for q in quotes]
            if fault == "invent" and not sections:
                sentences[0] = {"text": quotes[0], "cites": ["S999"]}  # a key nobody offered
            sections.append({"heading": heading or "Overview", "sentences": sentences})
            if len(sections) >= self.max_sections:
                break
        if fault == "invent" and sections:
            sections[-1]["sentences"].append({"text": UNSUPPORTED, "cites": [first_key]})
        if fault == "obey":
            for key, _, text in self.sources(user):
                if "ignore" in text.lower():
                    sections.append({"heading": "Notice", "sentences": [{"text": INDUCED, "cites": [key]}]})
        return {
            "summary": sections[0]["sentences"][0]["text"] if sections else "",
            "keywords": [s["heading"].lower() for s in sections][:5],
            "sections": sections,
        }

    def repair(self, user: str) -> dict[str, Any]:
        """Fixes what it can from the sources; leaves out the sentences it cannot support."""
        sources = {k: t for k, _, t in self.sources(user)}
        out = []
        for ident, quoted, keys in REPAIR_LINE.findall(user):
            if json.loads(quoted) in (UNSUPPORTED, INDUCED):
                continue  # nothing in the sources says it: drop
            valid = [k.strip() for k in keys.split(",") if k.strip() in sources]
            key = valid[0] if valid else next(iter(sources))
            quotes = [t for _, t in prose_units(sources[key])]
            if quotes:
                out.append({"id": int(ident), "text": quotes[0], "cites": [key]})
        return {"sentences": out}

    def reply(self, user: str, fault: str = "") -> dict[str, Any]:
        """An answer to ``<question>`` from the ``<section>``s offered (see the module docstring)."""
        if fault == "refuse":
            return {"refuse": True, "sentences": []}
        asked = set(re.findall(r"\w{4,}", QUESTION.search(user).group(1).lower()))
        best = max(
            (
                (len(asked & set(re.findall(r"\w{4,}", text.lower()))), key, text)
                for key, text in SECTION.findall(user)
            ),
            default=(0, "", ""),
        )
        quotes = [t for _, t in prose_units(best[2])] if best[0] else []
        if not quotes:
            return {"refuse": True, "sentences": []}
        sentences: list[dict[str, Any]] = [
            {"text": quotes[0], "cites": 5 if fault == "cites5" else [best[1]]}
        ]
        if fault == "obey":
            sentences.append({"text": quotes[0], "cites": ["S99"]})
            for key, text in SECTION.findall(user):
                if "ignore" in text.lower():
                    sentences.append({"text": INDUCED, "cites": [key]})
        return {"refuse": False, "sentences": sentences}

    def false_page(self, user: str) -> dict[str, Any]:
        """What a tiny model writes: the sources' words with numbers and claims they never make."""
        sections = []
        for key, heading, text in self.sources(user):
            quotes = [t for _, t in prose_units(text)][: self.per_source]
            false = [_falsify(q) for q in quotes] + [
                f"Every {heading or 'model'} comes with a robot gardener."
            ]
            sections.append(
                {"heading": heading or "Overview", "sentences": [{"text": f, "cites": [key]} for f in false]}
            )
        return {"summary": "{ {", "keywords": ["1", "calling write_page"], "sections": sections}

    def answer(self, user: str, fault: str = "") -> dict[str, Any]:
        if "<question>" in user:
            return self.reply(user, fault)
        if fault == "false":
            if "\n# Repair\n" in user:
                ids = [int(i) for i, _, _ in REPAIR_LINE.findall(user)]
                return {
                    "sentences": [{"id": i, "text": _falsify(FALSE_REPAIR), "cites": ["S1"]} for i in ids]
                }
            return self.false_page(user)
        return self.repair(user) if "\n# Repair\n" in user else self.page(user, fault)


FALSE_REPAIR = "The tank holds 3 litres and lasts 2 days."


def _falsify(sentence: str) -> str:
    """The sentence with every number changed, or with a number it never had."""
    if re.search(r"\d", sentence):
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 97), sentence)
    return sentence.rstrip(".") + ", within 97 days."


def cut(arguments: str) -> str:
    """A reply cut off at max_tokens: the first half of its JSON."""
    return arguments[: len(arguments) // 2]


def raw_newlines(args: dict[str, Any]) -> str:
    """Valid JSON but for raw newlines inside strings (json.loads(strict=True) rejects it)."""
    return json.dumps(args).replace(". ", ".\\n").replace("\\n", "\n")


class _Server(QuietServer):
    allow_reuse_address = True


class FakeLLM:
    """Shared machinery: the HTTP server, the fault queue, the request log and the cache."""

    def __init__(self, latency: float = 0.0, timeout_sleep: float = 1.6, context: int | None = None) -> None:
        self.brain = Brain()
        self.context = context  # the model's window in tokens; None: unlimited
        self.latency = latency
        self.timeout_sleep = timeout_sleep
        self.faults: deque[str] = deque()
        self.page_faults: dict[str, list[str]] = {}  # page title → faults for its requests
        self.requests: list[dict[str, Any]] = []  # every request: path, body, fault
        self.cached: set[str] = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer._dispatch(self, "POST")

            def do_GET(self) -> None:
                outer._dispatch(self, "GET")

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *faults: str) -> FakeLLM:
        """Faults for the next calls, in arrival order."""
        self.faults.extend(faults)
        return self

    def for_page(self, title: str, *faults: str) -> FakeLLM:
        self.page_faults.setdefault(title, []).extend(faults)
        return self

    def calls(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # plumbing

    def _dispatch(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        try:
            status, headers, payload = self.handle(
                method, h.path, body, {k.lower(): v for k, v in h.headers.items()}
            )
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            h.send_response(status)
            for k, v in {"content-type": "application/json", **headers}.items():
                h.send_header(k, v)
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout fault)

    def titles(self, since: int = 0) -> list[str]:
        """The page titles of the requests received from ``since`` on."""
        return [r["title"] for r in self.requests[since:] if r.get("title")]

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """What the prompt of a request costs in this server's tokens: system, tools and messages."""
        parts = [json.dumps(body.get("tools", [])), json.dumps(body.get("system", ""))]
        parts += [json.dumps(m.get("content", "")) for m in body.get("messages", [])]
        return ntok("".join(parts))

    def next_fault(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> str:
        user = body.get("messages", [{}])[-1].get("content", "")
        title = re.search(r"^- title: (.*)$", user if isinstance(user, str) else "", re.M)
        over = self.context is not None and self.prompt_tokens(body) > self.context
        with self.lock:
            mine = self.page_faults.get(title.group(1), []) if title else []
            if over:
                fault = "context"  # refused before the model runs: no scripted fault is used up
            else:
                fault = mine.pop(0) if mine else self.faults.popleft() if self.faults else ""
            record = {"path": path, "body": body, "fault": fault, "headers": headers}
            self.requests.append({**record, "title": title.group(1) if title else ""})
        if self.latency:
            time.sleep(self.latency)
        if fault == "timeout":
            time.sleep(self.timeout_sleep)
        return fault

    def cache_split(self, prefix: str, rest: str) -> tuple[int, int, int]:
        """(uncached input, cache write, cache read) tokens for a request."""
        if not prefix:
            return ntok(rest), 0, 0
        digest = hashlib.sha256(prefix.encode()).hexdigest()
        with self.lock:
            hit = digest in self.cached
            self.cached.add(digest)
        return (ntok(rest), 0, ntok(prefix)) if hit else (ntok(rest), ntok(prefix), 0)

    def handle(self, method: str, path: str, body: dict, headers: dict) -> tuple[int, dict, Any]:
        raise NotImplementedError


class FakeAnthropic(FakeLLM):
    def __init__(self, *args: Any, batch_polls: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batch_polls = batch_polls  # how many retrieves report in_progress before "ended"
        self.batches: dict[str, dict[str, Any]] = {}

    def handle(self, method: str, path: str, body: dict, headers: dict) -> tuple[int, dict, Any]:
        if method == "POST" and path == "/v1/messages":
            fault = self.next_fault(path, body, headers)
            return self.messages(body, fault)
        if method == "POST" and path == "/v1/messages/batches":
            with self.lock:
                self.requests.append({"path": path, "body": body, "fault": "", "headers": headers})
            return 200, {}, self.create_batch(body)
        m = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", path)
        if method == "GET" and m:
            with self.lock:
                self.requests.append({"path": path, "body": {}, "fault": "", "headers": headers})
            batch = self.batches.get(m.group(1))
            if batch is None:
                return 404, {}, _error("not_found_error", "no such batch")
            if m.group(2):
                lines = [json.dumps(r) for r in batch["results"]]
                return 200, {"content-type": "application/binary"}, ("\n".join(lines) + "\n").encode()
            batch["polls"] += 1
            return 200, {}, self.batch_object(batch)
        return 404, {}, _error("not_found_error", f"{method} {path}")

    def messages(self, body: dict, fault: str) -> tuple[int, dict, Any]:
        if fault == "context":
            n = self.prompt_tokens(body)
            message = f"prompt is too long: {n} tokens > {self.context} maximum"
            return 400, {}, _error("invalid_request_error", message)
        if fault == "400":
            return 400, {}, _error("invalid_request_error", "messages.0.content: too many source blocks")
        if fault == "429":
            return 429, {"retry-after": "0.05"}, _error("rate_limit_error", "Number of requests exceeded")
        if fault == "529":  # a short retry-after, as the API may send: the SDK waits that, not seconds
            return 529, {"retry-after-ms": "20"}, _error("overloaded_error", "Overloaded")
        if fault == "500":
            return 500, {"retry-after-ms": "20"}, _error("api_error", "Internal server error")
        if fault == "401":
            return 401, {}, _error("authentication_error", "invalid x-api-key")
        return 200, {}, self.message(body, fault)

    def message(self, body: dict, fault: str = "") -> dict[str, Any]:
        system = body.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        marks = [i for i, b in enumerate(system) if b.get("cache_control")]
        cut = marks[-1] + 1 if marks else 0
        prefix = json.dumps(body.get("tools", [])) + "".join(b["text"] for b in system[:cut]) if cut else ""
        user = body["messages"][-1]["content"]
        if isinstance(user, list):
            user = "".join(b.get("text", "") for b in user)
        rest = "".join(b["text"] for b in system[cut:]) + user
        fresh, write, read = self.cache_split(prefix, rest)
        tool = (body.get("tool_choice") or {}).get("name", "write_page")
        stop = ""
        if fault == "malformed":
            content = [{"type": "tool_use", "id": "toolu_bad", "name": tool, "input": {"sections": "none"}}]
        elif fault == "text":
            content = [{"type": "text", "text": "I would rather not call a tool today."}]
        elif fault == "newlines":
            content = [{"type": "text", "text": raw_newlines(self.brain.answer(user))}]
        elif fault in ("length", "cut"):  # what was parsed of the tool input when max_tokens struck
            args = self.brain.answer(user)
            args["sections"] = args.get("sections", [])[: max(1, len(args.get("sections", [])) // 2)]
            content = [{"type": "tool_use", "id": "toolu_cut", "name": tool, "input": args}]
            stop = "max_tokens"
        else:
            args = self.brain.answer(user, fault)
            content = [{"type": "tool_use", "id": f"toolu_{len(self.requests)}", "name": tool, "input": args}]
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": stop or ("tool_use" if content[0]["type"] == "tool_use" else "end_turn"),
            "stop_sequence": None,
            "usage": {
                "input_tokens": fresh,
                "output_tokens": ntok(json.dumps(content)),
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
            },
        }

    def create_batch(self, body: dict) -> dict[str, Any]:
        ident = f"msgbatch_{len(self.batches) + 1:04d}"
        results = []
        for item in body["requests"]:
            fault = self.next_fault("/v1/messages(batch)", item["params"], {})
            if fault in ("429", "529", "500"):
                result = {
                    "type": "errored",
                    "error": {"type": "error", "error": _error("api_error", fault)["error"]},
                }
            else:
                result = {"type": "succeeded", "message": self.message(item["params"], fault)}
            results.append({"custom_id": item["custom_id"], "result": result})
        self.batches[ident] = {"id": ident, "results": results[::-1], "polls": 0}  # any order
        return self.batch_object(self.batches[ident])

    def batch_object(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["polls"] >= self.batch_polls
        n = len(batch["results"])
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": n if ended else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch['id']}/results" if ended else None,
        }


class FakeOpenAI(FakeLLM):
    """``tools=False`` plays a local server without function calling: it rejects ``tools`` with
    400, and answers JSON mode requests with the JSON in ``content``."""

    def __init__(self, *args: Any, tools: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools = tools

    def handle(self, method: str, path: str, body: dict, headers: dict) -> tuple[int, dict, Any]:
        if not (method == "POST" and path == "/v1/chat/completions"):
            return 404, {}, {"error": {"message": f"{method} {path} not found"}}
        if body.get("tools") and not self.tools:
            with self.lock:
                self.requests.append({"path": path, "body": body, "fault": "no-tools", "headers": headers})
            return 400, {}, {"error": {"message": "tool_choice is not supported by this server"}}
        fault = self.next_fault(path, body, headers)
        if fault == "context":  # as llama.cpp's server says it
            n = self.prompt_tokens(body)
            return (
                400,
                {},
                {
                    "error": {
                        "code": 400,
                        "message": f"request ({n} tokens) exceeds the available context size "
                        f"({self.context} tokens), try increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": n,
                        "n_ctx": self.context,
                    }
                },
            )
        if fault == "400":
            return 400, {}, {"error": {"message": "failed to parse grammar for the response"}}
        if fault == "429":
            return 429, {"retry-after": "0"}, {"error": {"message": "rate limited"}}
        if fault in ("500", "503"):
            return int(fault), {}, {"error": {"message": "server error"}}
        if fault == "401":
            return 401, {}, {"error": {"message": "bad key"}}
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        fresh, _, read = self.cache_split(system, user)  # servers cache the repeated system prompt
        finish = ""
        if fault == "malformed":
            arguments = '{"summary": "half an object'
        elif fault == "newlines":
            arguments = raw_newlines(self.brain.answer(user))
        elif fault in ("length", "cut"):  # "cut": cut off, but called "tool_calls" (llama-cpp-python)
            arguments = cut(json.dumps(self.brain.answer(user)))
            finish = "length" if fault == "length" or not body.get("tools") else "tool_calls"
        else:
            arguments = json.dumps(self.brain.answer(user, fault))
        out_tokens = body.get("max_tokens", 0) if fault in ("length", "cut") else ntok(arguments)
        if body.get("tools"):
            name = body["tool_choice"]["function"]["name"]
            call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = finish or "tool_calls"
        else:
            message = {"role": "assistant", "content": arguments}
            finish = finish or "stop"
        return (
            200,
            {},
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": fresh + read,
                    "completion_tokens": out_tokens,
                    "total_tokens": fresh + read + out_tokens,
                    "prompt_tokens_details": {"cached_tokens": read},
                },
            },
        )


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
