"""The LLM librarian against a loopback stub that behaves like a small local model, through both
backends (the openai backend over httpx, the anthropic backend through the real SDK).

SmolLM2-135M behind llama.cpp showed all of these on the example KB: prompts over its context
window, replies cut off at max_tokens, pages of false prose, raw newlines inside JSON strings,
and a page it never finishes. A compile must fail only that page, name it with its cause, and
leave no page poorer than the offline compile that was there before.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm import FakeAnthropic, FakeLLM, FakeOpenAI
from typer.testing import CliRunner
from wikiasserts import assert_every_fact_cited, pages, planned
from wikimeasure import cited_lines, sentence_coverage

from wikic.cli.app import app
from wikic.compile.librarian.anthropic import AnthropicLibrarian
from wikic.compile.librarian.model import ModelConfigError, ModelError, ModelRequest
from wikic.compile.librarian.openai import OpenAILibrarian, OpenAIModel
from wikic.compile.run import compile_wiki
from wikic.compile.schema import load_wiki_schema

WINDOW = 6144  # the stub's context; the KB owner believes the model has far more
FAILING = "wiki/topics/troubleshooting.md"


def settings(kb: Path, **values: object) -> None:
    """Set librarian keys in the KB's schema/wiki.yaml."""
    path = kb / "schema/wiki.yaml"
    lines = "".join(f"\n  {k}: {v}" for k, v in values.items())
    path.write_text(path.read_text("utf-8").replace("\nlibrarian:", "\nlibrarian:" + lines, 1), "utf-8")


def env(fake: FakeLLM) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake.url + "/v1",
        "OPENAI_MODEL": "smollm2-135m",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": fake.url,
    }


@pytest.fixture(params=["openai", "anthropic"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def stub(backend: str, **kwargs: object) -> FakeLLM:
    return (FakeOpenAI if backend == "openai" else FakeAnthropic)(**kwargs)


@pytest.fixture
def small(backend: str) -> Iterator[FakeLLM]:
    fake = stub(backend, context=WINDOW)
    try:
        yield fake
    finally:
        fake.close()


def test_a_small_model_fails_one_page_names_its_cause_and_leaves_no_page_poorer(
    example_kb: Path, backend: str, small: FakeLLM
) -> None:
    kb = example_kb  # compiled offline: the wiki before
    settings(kb, context_tokens=32768, page_chars=40000, max_tokens=2048)
    before, covered_before = cited_lines(kb), sentence_coverage(kb)
    old_failing = (kb / FAILING).read_text("utf-8")
    small.for_page("Watering", "cut")  # cut off once, and reported as a finished tool call
    small.for_page("Lighting", "false", "false")  # a page of false prose, and a false repair
    small.for_page("Pods and seeds", "newlines")  # raw newlines in JSON strings
    small.for_page("Troubleshooting", "length", "length")  # cut off, and cut off again on its retry

    result = CliRunner().invoke(app, ["--root", str(kb), "compile", "--librarian", backend], env=env(small))

    out = result.output
    assert result.exit_code == 1, out
    assert f"not written: {FAILING}: the reply was cut off at max_tokens" in out
    assert "raise librarian.max_tokens or lower librarian.page_chars" in out
    assert out.count("not written:") == 1
    # the device pages were over the window: split to the size the server gave, and written
    assert f"exceeds the model's {WINDOW:,}-token context; split into" in out
    assert "wiki/topics/watering.md: the reply was cut off at max_tokens (2,048 tokens); asked again" in out
    assert any(r["fault"] == "context" for r in small.requests)
    # the reply with raw newlines was parsed leniently: no reply had to be asked for again
    assert not any("could not be used" in json.dumps(r["body"]) for r in small.requests)
    assert any(r["fault"] == "newlines" for r in small.requests)

    # every other page was written; the failing one keeps its old text
    written = {p.path for p in planned(kb)} - {FAILING}
    changed = {line.split(" |")[0].strip() for line in out.splitlines() if line.startswith(" wiki/")}
    assert changed == written
    assert (kb / FAILING).read_text("utf-8") == old_failing
    # no page is poorer, and coverage holds
    after, covered_after = cited_lines(kb), sentence_coverage(kb)
    assert all(after[p] >= n for p, n in before.items()), {p: (n, after[p]) for p, n in before.items()}
    assert covered_after[0] >= covered_before[0] - 0.01 * covered_before[1]
    # false prose, garbage summaries and keywords reached nothing
    text = "\n".join(pages(kb).values())
    for false in ("robot gardener", "97 days", "{ {", "calling write_page"):
        assert false not in text
    assert cited_lines(kb)["wiki/topics/lighting.md"] >= before["wiki/topics/lighting.md"]
    assert assert_every_fact_cited(kb) > 1000

    # a rerun without faults writes only the failing page
    seen = len(small.requests)
    again = CliRunner().invoke(app, ["--root", str(kb), "compile", "--librarian", backend], env=env(small))
    assert again.exit_code == 0, again.output
    assert set(small.titles(seen)) == {"Troubleshooting"}


def test_a_refused_request_fails_its_page_only(unbuilt_example: Path, backend: str) -> None:
    fake = stub(backend)
    fake.for_page("Watering", "400")
    try:
        report = compile_wiki(unbuilt_example, backend=backend, environ=env(fake))
    finally:
        fake.close()
    assert report.failed == ["wiki/topics/watering.md"]
    assert "rejected the request (400)" in report.causes["wiki/topics/watering.md"]
    assert len(report.added) == len(planned(unbuilt_example)) - 1


def test_an_unreachable_server_stops_the_compile_with_exit_code_2(
    unbuilt_example: Path, backend: str
) -> None:
    fake = stub(backend)
    url = fake.url
    fake.close()  # nothing listens there any more
    settings(unbuilt_example, concurrency=1)
    environ = {**env(fake), "OPENAI_BASE_URL": url + "/v1", "ANTHROPIC_BASE_URL": url}
    kwargs = {"backoff": 0.01} if backend == "openai" else {}
    cls = OpenAILibrarian if backend == "openai" else AnthropicLibrarian
    lib = cls.from_schema(load_wiki_schema(unbuilt_example), environ, max_retries=1, **kwargs)
    with pytest.raises(ModelConfigError, match="reach") as exc:
        compile_wiki(unbuilt_example, librarian=lib)
    assert exc.value.exit_code == 2
    assert not (unbuilt_example / "wiki").exists() or not any((unbuilt_example / "wiki").rglob("*.md"))


def test_timeout_is_a_setting_and_a_page_that_times_out_twice_fails_alone(unbuilt_example: Path) -> None:
    kb = unbuilt_example
    settings(kb, timeout=0.5)
    fake = FakeOpenAI(timeout_sleep=1.0)
    fake.for_page("Watering", "timeout", "timeout")
    try:
        report = compile_wiki(kb, backend="openai", environ=env(fake))
    finally:
        fake.close()
    assert report.failed == ["wiki/topics/watering.md"]
    assert "did not answer within 0.5 s, twice; raise librarian.timeout" in report.causes[report.failed[0]]
    anthropic = AnthropicLibrarian.from_schema(load_wiki_schema(kb), env(fake))
    assert anthropic.model_api.client.timeout == 0.5


def test_a_configuration_error_cancels_queued_pages_and_waits_for_no_request_in_flight(
    example_kb: Path,
) -> None:
    """Three pages are in flight on a slow server when a fourth is refused for its key: the
    compile stops at once, the queued fifth page is never sent, and nothing waits for the three."""
    fake = FakeOpenAI(timeout_sleep=30.0)  # a "timeout" fault here is a 30-second answer
    for title in ("Sprout 3", "Grove 6", "Lighting"):
        fake.for_page(title, "timeout")
    fake.for_page("Watering", "401")
    lib = OpenAILibrarian.from_schema(load_wiki_schema(example_kb), env(fake), backoff=0.01)
    lib.concurrency = 4
    started = time.monotonic()
    try:
        with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
            compile_wiki(
                example_kb,
                librarian=lib,
                pages=["sprout-3", "grove-6", "lighting", "watering", "edible-flowers"],
            )
        assert time.monotonic() - started < 10
        time.sleep(0.3)
        # the refused page was sent and the queued fifth never was; a page whose turn came as the
        # refusal arrived may not have been sent either (a loaded machine schedules threads late)
        sent = set(fake.titles())
        assert "Watering" in sent and sent <= {"Grove 6", "Lighting", "Sprout 3", "Watering"}
        assert all(t.daemon for t in threading.enumerate() if t.name.startswith("librarian-"))
    finally:
        fake.close()


def test_closing_the_model_stops_a_retry_waiting_for_its_turn() -> None:
    fake = FakeOpenAI().script("503")
    model = OpenAIModel("m", base_url=fake.url + "/v1", backoff=30.0)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            model.complete(ModelRequest(("rules",), "- title: X\n", (), "write_page"))
        except ModelError as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.5)  # the 503 came back; the retry waits out its backoff
    started = time.monotonic()
    model.close()
    thread.join(5)
    fake.close()
    assert not thread.is_alive() and time.monotonic() - started < 5
    assert len(fake.requests) == 1 and "cancelled" in str(errors[0])


def test_page_limit_and_dry_run_try_a_model_on_a_few_pages(example_kb: Path) -> None:
    kb = example_kb
    fake = FakeOpenAI()
    try:
        runner = CliRunner()
        base = ["--root", str(kb), "compile", "--librarian", "openai"]
        plan = runner.invoke(
            app, [*base, "--dry-run", "--page", "grove-6", "--page", "wiki/topics/watering.md"], env=env(fake)
        )
        assert plan.exit_code == 0, plan.output
        assert "wiki/devices/grove-6.md" in plan.output and "wiki/topics/watering.md" in plan.output
        assert "/ 8,192" in plan.output  # each page's largest prompt against the default context
        assert "more left for later" in plan.output and fake.requests == []

        dry = runner.invoke(app, [*base, "--dry-run", "--json", "--page", "grove-6"], env=env(fake))
        row = json.loads(dry.stdout)["plan"][0]
        assert row["page"] == "wiki/devices/grove-6.md" and row["context_tokens"] == 8192
        assert row["parts"] >= 2 and row["prompt_tokens"] <= 8192 - 2048  # split to leave the reply room

        one = runner.invoke(app, [*base, "--page", "grove-6"], env=env(fake))
        assert one.exit_code == 0, one.output
        assert set(fake.titles()) == {"Grove 6"}
        assert "wiki/devices/grove-6.md" in one.output and "left for later" in one.output
        seen = len(fake.requests)
        two = runner.invoke(app, [*base, "--limit", "2"], env=env(fake))
        assert two.exit_code == 0 and len(set(fake.titles(seen))) == 2

        bad = runner.invoke(app, [*base, "--page", "no-such-page"], env=env(fake))
        assert bad.exit_code == 2 and "--page no-such-page: no such page" in bad.output
    finally:
        fake.close()
