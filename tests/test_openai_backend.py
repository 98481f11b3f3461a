"""The OpenAI-compatible backend (httpx) against a fake /v1/chat/completions on 127.0.0.1."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fakellm import UNSUPPORTED, FakeOpenAI
from test_anthropic_backend import assert_prose_supported
from wikiasserts import assert_every_fact_cited, pages, planned

from wikic.compile.librarian.model import ModelConfigError
from wikic.compile.librarian.openai import OpenAILibrarian, retry_after
from wikic.compile.run import compile_wiki
from wikic.compile.schema import load_wiki_schema
from wikic.core.errors import ConfigError


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def kb(unbuilt_example: Path) -> Path:
    return unbuilt_example


def env(fake: FakeOpenAI, key: str = "sk-local") -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": key, "OPENAI_MODEL": "qwen2.5:7b"}


def librarian(kb: Path, fake: FakeOpenAI, **model_args: object) -> OpenAILibrarian:
    model_args = {"timeout": 1.0, "max_retries": 4, "backoff": 0.01, **model_args}
    return OpenAILibrarian.from_schema(load_wiki_schema(kb), env(fake), **model_args)


def test_compile_with_faults_repair_cached_tokens_and_a_no_call_rerun(kb: Path, fake: FakeOpenAI) -> None:
    fake.script("429", "503", "500", "timeout")
    fake.for_page("Grove 6", "malformed").for_page("Watering", "invent")
    report = compile_wiki(kb, librarian=librarian(kb, fake))

    assert report.failed == [] and len(report.added) == len(planned(kb))
    assert report.backend == "openai" and report.model == "qwen2.5:7b"
    assert assert_every_fact_cited(kb) == report.citations
    assert assert_prose_supported(kb) > 100
    calls = fake.calls("/v1/chat/completions")
    assert sorted(r["fault"] for r in calls if r["fault"]) == sorted(
        ["429", "503", "500", "timeout", "malformed", "invent"]
    )
    u = report.usage
    assert len(calls) == u.calls + 4 and u.retries == 4 + 1
    assert u.cache_read_tokens > 0 and u.input_tokens > u.cache_read_tokens
    assert report.repaired >= 1 and report.dropped >= 1
    assert not any(UNSUPPORTED in t for t in pages(kb).values())

    first = calls[0]
    assert first["headers"]["authorization"] == "Bearer sk-local"
    assert first["body"]["tool_choice"] == {"type": "function", "function": {"name": "write_page"}}
    assert first["body"]["messages"][0]["role"] == "system" and first["body"]["model"] == "qwen2.5:7b"

    seen = len(fake.requests)
    again = compile_wiki(kb, librarian=librarian(kb, fake))
    assert len(fake.requests) == seen and again.usage.calls == 0 and not again.wrote_anything


def test_a_server_without_tool_calling_is_used_in_json_mode(kb: Path) -> None:
    fake = FakeOpenAI(tools=False)
    try:
        report = compile_wiki(kb, backend="openai", environ=env(fake, key=""))
    finally:
        fake.close()
    assert report.failed == [] and len(report.added) == len(planned(kb)) and report.dropped == 0
    rejected = [r for r in fake.requests if r["fault"] == "no-tools"]
    assert 1 <= len(rejected) <= 4  # at most one per worker before the mode switches
    answered = fake.calls("/v1/chat/completions")
    later = [r for r in answered if r["fault"] != "no-tools"]
    assert all(r["body"]["response_format"] == {"type": "json_object"} for r in later)
    assert all(
        "tools" not in r["body"] and "# JSON mode" in r["body"]["messages"][0]["content"] for r in later
    )
    assert all("authorization" not in r["headers"] for r in answered)  # no key, no header


def test_exhausted_retries_leave_one_page_for_the_next_run(kb: Path, fake: FakeOpenAI) -> None:
    fake.script("503", "503")
    lib = librarian(kb, fake, max_retries=1)
    lib.concurrency = 1
    report = compile_wiki(kb, librarian=lib)
    assert len(report.failed) == 1 and "503 after retries" in report.causes[report.failed[0]]
    seen = len(fake.requests)
    again = compile_wiki(kb, librarian=librarian(kb, fake))
    title = next(p.title for p in planned(kb) if p.path == report.failed[0])
    assert again.added == report.failed and set(fake.titles(seen)) == {title} and again.usage.calls >= 1


def test_a_refused_key_stops_the_compile(kb: Path, fake: FakeOpenAI) -> None:
    fake.script(*["401"] * 40)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        compile_wiki(kb, librarian=librarian(kb, fake))


def test_configuration_errors_name_what_to_set(kb: Path) -> None:
    schema = load_wiki_schema(kb)
    with pytest.raises(ConfigError, match="librarian.base_url"):
        OpenAILibrarian.from_schema(schema, {})
    with pytest.raises(ConfigError, match="--batch"):
        compile_wiki(kb, backend="openai", batch=True, environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})


def test_retry_after_accepts_seconds_milliseconds_and_dates() -> None:
    assert retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after(httpx.Headers({"retry-after-ms": "150", "retry-after": "9"})) == 0.15
    assert retry_after(httpx.Headers({})) is None
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after(httpx.Headers({"retry-after": date})) <= 30
