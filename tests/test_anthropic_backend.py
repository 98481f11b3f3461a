"""The Anthropic backend: the real ``anthropic`` SDK against a fake Messages API on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakellm import UNSUPPORTED, FakeAnthropic
from typer.testing import CliRunner
from wikiasserts import assert_every_fact_cited, pages, planned

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.librarian.anthropic import AnthropicLibrarian, AnthropicModel
from wikic.compile.librarian.llm import LLMLibrarian
from wikic.compile.librarian.model import ModelConfigError
from wikic.compile.librarian.offline import DERIVED_TYPES
from wikic.compile.run import compile_wiki
from wikic.compile.schema import load_wiki_schema
from wikic.core.errors import ConfigError

KEY = "sk-ant-test-key"


@pytest.fixture
def kb(unbuilt_example: Path) -> Path:
    return unbuilt_example


def librarian(kb: Path, fake: FakeAnthropic, **model_args: object) -> AnthropicLibrarian:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    model_args = {"timeout": 1.0, "max_retries": 3, **model_args}
    return AnthropicLibrarian.from_schema(load_wiki_schema(kb), env, **model_args)


def assert_prose_supported(root: Path) -> int:
    """Every cited statement of every page passes the verifier again, as ``wikic check`` runs it
    (note lead-ins and row labels are no statements); returns how many were checked."""
    report = check(root)
    unsupported = [str(f) for f in report.errors if f.rule == "unsupported-citation"]
    assert not unsupported, unsupported[:5]
    return report.statements


def test_compile_through_the_sdk_with_faults_caching_repair_and_a_no_call_rerun(
    kb: Path, fake: FakeAnthropic
) -> None:
    fake.script("429", "529", "500", "timeout")
    fake.for_page("Grove 6", "malformed").for_page("Lighting", "text")
    fake.for_page("Watering", "invent").for_page("Your first week with a Verdant garden", "invent")
    report = compile_wiki(kb, librarian=librarian(kb, fake, max_retries=4))

    assert report.failed == [] and len(report.added) == len(planned(kb))
    assert assert_every_fact_cited(kb) == report.citations
    assert assert_prose_supported(kb) > 100
    u = report.usage
    # every HTTP fault was retried by the SDK; malformed and text-only replies by the librarian
    faults = [r["fault"] for r in fake.calls("/v1/messages")]
    assert sorted(f for f in faults if f) == sorted(
        ["429", "529", "500", "timeout", "malformed", "text", "invent", "invent"]
    )
    assert len(faults) == u.calls + 4 and u.retries == 4 + 2
    # the shared prefix is written to the cache once per concurrent first wave, then read
    assert u.cache_write_tokens > 0 and u.cache_read_tokens > u.cache_write_tokens
    # invented keys were repaired from the sources; the unsupported sentence was dropped
    assert report.repaired >= 2 and report.dropped >= 2
    assert report.sentences == report.verified + report.repaired + report.dropped
    assert not any(UNSUPPORTED in t for t in pages(kb).values())

    body = fake.calls("/v1/messages")[0]["body"]
    assert (
        body["system"][0]["text"].startswith("# Librarian rules") and "cache_control" not in body["system"][0]
    )
    assert body["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "tool", "name": "write_page"}
    assert [t["name"] for t in body["tools"]] == ["write_page", "repair_sentences"]
    headers = fake.calls("/v1/messages")[0]["headers"]
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert (
        sum(r["headers"].get("x-stainless-retry-count", "0") != "0" for r in fake.calls("/v1/messages")) == 4
    )

    seen = len(fake.requests)
    again = compile_wiki(kb, librarian=librarian(kb, fake))
    assert len(fake.requests) == seen and again.usage.calls == 0 and not again.wrote_anything


def test_retries_exhausted_leave_the_page_unwritten_and_a_rerun_completes(
    kb: Path, fake: FakeAnthropic
) -> None:
    fake.script("529", "529")
    lib = librarian(kb, fake, max_retries=1)
    lib.concurrency = 1
    report = compile_wiki(kb, librarian=lib)
    assert len(report.failed) == 1 and len(report.added) == len(planned(kb)) - 1
    assert "529 after retries" in report.causes[report.failed[0]]
    missing = report.failed[0]
    seen = len(fake.requests)
    again = compile_wiki(kb, librarian=librarian(kb, fake))
    title = next(p.title for p in planned(kb) if p.path == missing)
    assert again.added == [missing] and set(fake.titles(seen)) == {title} and again.usage.calls >= 1


def test_a_rejected_key_stops_the_compile_with_exit_code_2(
    kb: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.script(*["401"] * 40)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        compile_wiki(kb, librarian=librarian(kb, fake))
    assert not (kb / "wiki").exists() or not any((kb / "wiki").rglob("*.md"))
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    result = CliRunner().invoke(app, ["--root", str(kb), "compile", "--librarian", "anthropic"], env=env)
    assert result.exit_code == 2 and "rejected the API key" in result.output


def test_cli_batch_compile_uses_message_batches(kb: Path, fake: FakeAnthropic) -> None:
    fake.batch_polls = 0  # ended at once: the CLI polls every 10 s
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    args = ["--root", str(kb), "compile", "--librarian", "anthropic", "--batch"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    created = fake.calls("/v1/messages/batches")
    titles = [
        re.search(r"^- title: (.*)$", r["params"]["messages"][0]["content"], re.M).group(1)
        for r in created[0]["body"]["requests"]
    ]  # every part of every page that a model writes, in one batch
    written_by_model = [p for p in planned(kb) if p.type not in ("comparison", *DERIVED_TYPES)]
    assert len(created) == 1 and len(set(titles)) == len(written_by_model)
    assert any(r["path"].endswith("/results") for r in fake.requests)
    assert fake.calls("/v1/messages") == []  # nothing failed, so nothing was sent one by one
    assert assert_every_fact_cited(kb) > 0
    again = CliRunner().invoke(app, args, env=env)
    assert again.exit_code == 0 and len(fake.calls("/v1/messages/batches")) == 1


def test_batch_polls_until_ended_and_resends_errored_requests_directly(kb: Path, fake: FakeAnthropic) -> None:
    fake.batch_polls = 2
    fake.script("500")  # the first batch entry errors: it is sent again directly
    fake.for_page("Watering", "invent")
    lib = librarian(kb, fake, poll_interval=0.01)
    lib.batch = True
    report = compile_wiki(kb, librarian=lib)
    assert report.failed == [] and len(report.added) == len(planned(kb))
    polls = [r for r in fake.requests if r["path"].startswith("/v1/messages/batches/msgbatch_")]
    assert len([p for p in polls if not p["path"].endswith("/results")]) >= 3
    direct = fake.calls("/v1/messages")
    assert len(direct) >= 2  # the errored page again, plus repairs
    assert report.repaired >= 1 and report.usage.cache_read_tokens > 0


def test_batch_needs_the_anthropic_backend(kb: Path) -> None:
    with pytest.raises(ConfigError, match="--batch needs the anthropic librarian"):
        compile_wiki(kb, backend="offline", batch=True)


def test_asking_for_anthropic_without_an_api_key_is_a_config_error(kb: Path) -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        compile_wiki(kb, backend="anthropic", environ={})


def test_model_is_an_llm_librarian_with_declared_capabilities(kb: Path, fake: FakeAnthropic) -> None:
    lib = librarian(kb, fake)
    assert isinstance(lib, LLMLibrarian) and lib.name == "anthropic" and lib.model == "claude-sonnet-4-5"
    assert lib.concurrency == 4 and not lib.deterministic and lib.can_repair
    model = lib.model_api
    assert isinstance(model, AnthropicModel)
    assert model.supports_cache and model.supports_batch
