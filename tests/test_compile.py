"""The compile stage on the example KB with the offline librarian: citations, incrementality, safety."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import changed_files, copy_example, copy_kb, shared_build, snapshot_tree
from typer.testing import CliRunner
from wikiasserts import (
    assert_every_fact_cited,
    assert_reachable_from_index,
    body_lines,
    front_matter,
    page_types,
    pages,
)

from wikic.cli.app import app
from wikic.compile.draft import parse_citations, strip_citations
from wikic.compile.run import compile_wiki
from wikic.core.config import load_sources
from wikic.core.errors import ConfigError
from wikic.fetch.run import fetch
from wikic.transform.layer1 import load_layer1
from wikic.transform.run import transform


def read_layer1(root: Path, path: str):
    return next(d for d in load_layer1(root) if d.path == path)


REPO = Path(__file__).resolve().parents[1]


def fresh_example(dest: Path) -> Path:
    """The example KB with its layers but no wiki yet."""
    root = copy_example(dest)
    shutil.rmtree(root / "wiki")
    (root / "wiki").mkdir()
    assert all(not r.errors for r in transform(root, load_sources(root)))
    return root


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return fresh_example(tmp_path / "kb")


FIRST_COMPILE = ("added", "failed", "dropped", "sentences", "verified", "cited", "citations")


def _compile_fresh(root: Path) -> None:
    """``kb``'s first compile, and what it reported (``first_compile``)."""
    fresh_example(root)
    report = compile_wiki(root)
    assert not report.failed and report.added, report.failed
    summary = {k: getattr(report, k) for k in FIRST_COMPILE}
    (root.parent / "report.json").write_text(json.dumps(summary), "utf-8")


@pytest.fixture(scope="session")
def compiled_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kb`` compiled from an empty wiki, once per run (workers share it). Read-only: ``built``
    hands each test a copy."""
    return shared_build(tmp_path_factory, "example-compiled", _compile_fresh)


@pytest.fixture
def built(compiled_once: Path, tmp_path: Path) -> Path:
    """A copy of ``kb`` after its first compile, with the compile's state (``.wikic``), for the
    tests of what that compile wrote or of what a later one changes."""
    return copy_kb(compiled_once, tmp_path / "kb")


@pytest.fixture(scope="session")
def first_compile(compiled_once: Path) -> dict[str, Any]:
    """What the first compile of ``kb`` (``compiled_once``) reported."""
    return json.loads((compiled_once.parent / "report.json").read_text("utf-8"))


def test_the_committed_example_wiki_is_what_compile_produces(example_kb: Path) -> None:
    before = snapshot_tree(example_kb)
    assert all(not r.written and not r.deleted for r in transform(example_kb, load_sources(example_kb)))
    report = compile_wiki(example_kb)
    assert not report.wrote_anything, "recompile the example KB (make compile) and commit wiki/"
    assert [p for p in changed_files(before, snapshot_tree(example_kb)) if not p.startswith(".wikic/")] == []


def test_every_sentence_and_fact_cell_cites_an_existing_section(built: Path, first_compile: dict) -> None:
    report = first_compile  # the compile of ``kb`` from an empty wiki
    assert report["failed"] == [] and report["dropped"] == 0
    assert report["sentences"] == report["verified"] == report["cited"] > 500
    assert assert_every_fact_cited(built) == report["citations"]


def test_all_page_types_and_every_page_reachable_from_index(built: Path) -> None:
    assert page_types(built) == {
        "topic",
        "device",
        "guide",
        "comparison",
        "hub",
        "glossary",
        "changes",
        "entity",
        "directory",
    }
    assert_reachable_from_index(built)


def test_no_change_recompile_writes_nothing_and_output_is_byte_identical(
    built: Path, first_compile: dict, tmp_path: Path
) -> None:
    before = snapshot_tree(built)
    again = compile_wiki(built)
    assert not again.wrote_anything and again.usage.calls == 0
    assert again.unchanged == len(first_compile["added"])
    assert changed_files(before, snapshot_tree(built)) == []
    other = fresh_example(tmp_path / "other")  # a compile of its own, in this process
    compile_wiki(other)
    ours, theirs = pages(built), pages(other)
    assert ours == theirs


def _change_plant(root: Path, plant_id: str, field: str, value: object) -> None:
    for page in sorted((root / "examples/api/plants").glob("page-*.json")):
        data = json.loads(page.read_text("utf-8"))
        for item in data["results"]["items"]:
            if item["id"] == plant_id:
                item[field] = value
                page.write_text(json.dumps(data, indent=1), "utf-8")
                return
    raise AssertionError(f"no plant {plant_id}")


def test_one_changed_source_rewrites_only_the_pages_that_cite_it(built: Path) -> None:
    before = snapshot_tree(built)
    _change_plant(built, "genovese-basil", "light_hours", 15)
    config = load_sources(built)
    assert [r.changed for r in fetch(built, config) if r.source == "plants"] == [1]
    transform(built, config)
    citing = {p for p, t in pages(built).items() if "layer1_sources/plants/genovese-basil.md" in t}
    report = compile_wiki(built)
    changed = {p for p in changed_files(before, snapshot_tree(built)) if p.startswith("wiki/")}
    assert set(report.changed) == citing - {"wiki/index.md"}
    assert changed - {"wiki/index.md", "wiki/log.md"} == citing
    assert "| 15 " in (built / "wiki/comparisons/herbs.md").read_text("utf-8")
    log = (built / "wiki/log.md").read_text("utf-8")
    assert re.search(r"^## \[\d{4}-\d{2}-\d{2}\] compile \| \+0 ~\d+ -0 pages \| sources: plants$", log, re.M)


def test_rules_change_recompiles_everything(built: Path, first_compile: dict) -> None:
    rules = built / "schema/librarian.md"
    rules.write_text(rules.read_text("utf-8") + "\n7. Keep headings short.\n", "utf-8")
    again = compile_wiki(built)
    # Offline output does not depend on the prose of the rules, but every page is reconsidered
    # and rewritten with its new fingerprint.
    assert len(again.changed) == len(first_compile["added"]) and again.unchanged == 0


def test_deleted_source_drops_its_citations_and_sole_source_pages(built: Path) -> None:
    (built / "layer1_sources/faq/pump-noise.md").unlink()
    # Remove every source of one topic page: the page must go away.
    page = "wiki/topics/algae.md"
    sources = front_matter(pages(built)[page])["sources"]
    for src in sources:
        (built / src).unlink()
    report = compile_wiki(built)
    assert page in report.removed and not (built / page).exists()
    text = "\n".join(pages(built).values())
    assert "faq/pump-noise.md" not in text
    assert page.split("/")[-1] not in (built / "wiki/index.md").read_text("utf-8")


def test_superseded_versions_are_noted_with_dates_and_current_value_stated(built: Path) -> None:
    text = (built / "wiki/topics/orders-and-policies.md").read_text("utf-8")
    current = [
        line for line in body_lines(text) if "return-policy-2026.md" in line and not line.startswith(">")
    ]
    assert any("60 days" in line for line in current)
    notes = [line for line in body_lines(text) if line.startswith("> ")]
    assert any("**Superseded** (earlier version, updated 2025-03-03):" in n for n in notes)
    assert all("return-policy-2026" not in n for n in notes)
    # The old 30-day statement appears only inside a superseded note.
    for line in body_lines(text):
        if "30 days" in line and "faq/return-policy.md" in line:
            assert line.startswith("> ")


def test_dry_run_plans_with_token_estimates_and_writes_nothing(kb: Path) -> None:
    before = snapshot_tree(kb)
    result = CliRunner().invoke(app, ["--root", str(kb), "compile", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "wiki/devices/grove-6.md" in result.output and "estimated cost" in result.output
    assert [p for p in changed_files(before, snapshot_tree(kb)) if not p.startswith(".wikic")] == []


def test_cli_compile_prints_report_and_diffstat(kb: Path) -> None:
    result = CliRunner().invoke(app, ["--root", str(kb), "compile"])
    assert result.exit_code == 0, result.output
    assert re.search(r"wiki/devices/grove-6\.md \| \d+ \++$", result.output, re.M)
    assert "verified" in result.output and "dropped 0" in result.output


def test_index_splits_into_sub_indexes_past_its_budget(kb: Path) -> None:
    wiki_yaml = kb / "schema/wiki.yaml"
    data = yaml.safe_load(wiki_yaml.read_text("utf-8"))
    data["index"]["token_budget"] = 1200
    wiki_yaml.write_text(yaml.safe_dump(data), "utf-8")
    compile_wiki(kb)
    index = (kb / "wiki/index.md").read_text("utf-8")
    subs = sorted((kb / "wiki/index").glob("*.md"))
    assert subs and len(index) // 4 <= 1200
    for sub in subs:
        assert len(sub.read_text("utf-8")) // 4 <= 1200
        assert f"index/{sub.name}" in index
    # the largest groups moved to sub-indexes, the small ones stay on the first page: together
    # they list every page
    listed = {os.path.normpath(os.path.join("wiki", m)) for m in re.findall(r"\]\(([^)]+\.md)\)", index)}
    for sub in subs:
        listed |= {
            os.path.normpath(os.path.join("wiki/index", m))
            for m in re.findall(r"\]\(([^)]+\.md)\)", sub.read_text("utf-8"))
        }
    content = {p for p in pages(kb) if not p.startswith("wiki/index")}
    assert content <= listed
    assert "## Devices\n\n- [Canopy 12](devices/canopy-12.md)" in index  # small groups stay inline


def test_a_group_on_a_sub_index_names_and_links_its_pages_when_the_budget_allows() -> None:
    """Past the budget the largest group (entries) moves to sub-indexes; a smaller one that moves
    too (topics) still names and links each of its pages on index.md when that fits, and falls
    back to naming its series when it does not."""
    from wikic.compile.index import Entry, estimate_tokens, render_index

    summary = "What this page covers, in a sentence long enough to weigh on the budget of the index."
    entries = [Entry(f"wiki/entries/e{i}.md", "entity", f"Entry {i}", summary, ("word",)) for i in range(80)]
    topics = [Entry(f"wiki/topics/t{i}.md", "topic", f"Topic {i}", summary, ("word",)) for i in range(20)]
    files = render_index(entries + topics, 800)
    index = files["wiki/index.md"]
    assert estimate_tokens(index) <= 800 and "wiki/index/topics-1.md" in files
    assert all(f"[Topic {i}](topics/t{i}.md)" in index for i in range(20))
    assert "(entries/e1.md)" not in index and "Entry (" in index  # entries: by series, on sub-indexes
    tight = render_index(entries + topics, 400)["wiki/index.md"]
    assert "(topics/t1.md)" not in tight and "Topic (" in tight


def test_strict_schema_errors_name_file_and_key(kb: Path) -> None:
    wiki_yaml = kb / "schema/wiki.yaml"
    wiki_yaml.write_text(wiki_yaml.read_text("utf-8") + "\nbogus_key: 1\n", "utf-8")
    with pytest.raises(ConfigError, match=r"wiki\.yaml.*bogus_key"):
        compile_wiki(kb)
    result = CliRunner().invoke(app, ["--root", str(kb), "compile"])
    assert result.exit_code == 2 and "bogus_key" in result.output


def test_a_concurrent_compile_is_refused_by_the_lock(kb: Path) -> None:
    from wikic.core.errors import LockedError
    from wikic.core.fsutil import kb_lock

    with kb_lock(kb), pytest.raises(LockedError):
        compile_wiki(kb)


def test_kill_9_mid_compile_leaves_a_consistent_wiki_that_a_rerun_completes(
    kb: Path, compiled_once: Path
) -> None:
    expected = pages(compiled_once)
    # Kill real compiles at several moments (before, during and after the writes); whatever the
    # moment, the files present are complete and a rerun converges on the reference wiki.
    for delay in (0.3, 0.45, 0.6, 0.75, 0.9):
        shutil.rmtree(kb / "wiki")
        (kb / "wiki").mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-m", "wikic", "--root", str(kb), "compile"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for p in (kb / "wiki").rglob("*.md"):
            assert p.read_text("utf-8").endswith("\n"), f"{p} is incomplete"
        compile_wiki(kb)
        assert pages(kb) == expected
        assert not list((kb / "wiki").rglob(".*.tmp"))


def test_a_hand_edited_page_is_restored_by_the_next_compile(built: Path) -> None:
    page = built / "wiki/devices/grove-6.md"
    original = page.read_text("utf-8")
    page.write_text(original.replace("4.0 litres", "40 litres"), "utf-8")
    report = compile_wiki(built)
    assert report.changed == ["wiki/devices/grove-6.md"] and page.read_text("utf-8") == original


def test_entries_quote_where_other_sources_name_them(built: Path) -> None:
    entry = (built / "wiki/entries/thai-basil.md").read_text("utf-8")
    elsewhere = entry.split("## Elsewhere in the knowledge base\n", 1)[1].split("\n## ", 1)[0]
    quoted = [line for line in elsewhere.split("\n") if line.startswith("- ")]
    assert 0 < len(quoted) <= 3
    for line in quoted:  # each quotes a sentence that names Thai basil, citing its section
        cites = parse_citations(line, "wiki/entries/thai-basil.md")
        assert cites and all(c.path != "layer1_sources/plants/thai-basil.md" for c in cites)
        assert "thai basil" in strip_citations(line).lower()
        for cite in cites:
            section = next(s for s in read_layer1(built, cite.path).sections if s.anchor == cite.anchor)
            assert "thai basil" in section.text.lower()
    # the entry's directory links it with its opening sentence, cited
    herbs = (built / "wiki/directories/herbs.md").read_text("utf-8")
    (line,) = [
        x
        for x in herbs.split("\n")
        if x.startswith("- [Genovese Basil](../entries/genovese-basil.md)") and "layer1_sources" in x
    ]
    assert parse_citations(line, "wiki/directories/herbs.md")


def test_a_line_read_for_citations_and_text_in_one_pass_reads_as_in_two(built: Path) -> None:
    """The search index reads a page line's citations and its text in one pass: the same as
    ``parse_citations`` and ``strip_citations`` read them, on every line of the example wiki and
    on lines with percent-encoded links, nested brackets and no anchor."""
    import os

    from wikic.compile.draft import cited_and_stripped

    lines = [
        (p.relative_to(built).as_posix(), line)
        for p in sorted((built / "wiki").rglob("*.md"))
        for line in p.read_text("utf-8").split("\n")
    ]
    lines += [
        (
            "wiki/a/b.md",
            "Two [x [y]](../../layer1_sources/faq/a%20b.md#q)  and\t[z](../../layer1_sources/k.md) .",
        ),
        ("wiki/b.md", "[no](layer1_sources/x.md#) [layer1_sources](https://example.com) tail"),
    ]
    for page, line in lines:
        expected = ([str(c) for c in parse_citations(line, page)], strip_citations(line))
        assert cited_and_stripped(line, os.path.dirname(page)) == expected, line
    assert sum(1 for page, line in lines if parse_citations(line, page)) > 100


def test_dated_posts_are_headed_with_their_date_newest_first(built: Path) -> None:
    headings = [
        line
        for line in body_lines((built / "wiki/topics/firmware-releases.md").read_text("utf-8"))
        if line.startswith("## ") and line not in ("## See also", "## Linked from", "## Filed under")
    ]
    dates = [re.search(r"\((\d{4}-\d{2}-\d{2})\)$", h).group(1) for h in headings]
    assert len(dates) == 3 and dates == sorted(dates, reverse=True)
    # Reference entries (FAQ answers, plants) keep their plain titles.
    assert "## What is the return policy?\n" in (built / "wiki/topics/orders-and-policies.md").read_text(
        "utf-8"
    )


def test_a_section_that_repeats_another_keeps_its_heading_for_the_links_to_it(tree) -> None:
    """Two help articles on one topic page share a section word for word under different headings;
    the second heading stays on the topic page (the repeat is kept, citing its own source), so a
    guide or an entry may link to either, and check finds no broken link."""
    shared = (
        "Mount the frame on a raised bed before wiring the motors. "
        "Level the tracks with a spirit level so the gantry rolls freely."
    )
    files = {
        "schema/librarian.md": "Quote the sources.\n",
        "schema/wiki.yaml": {
            "topics": [{"source": "help", "group_by": "category"}],
            "guides": [
                {"id": "mounting", "title": "Mounting", "purpose": "Mounting.", "query": "mount frame"}
            ],
        },
    }
    for name, heading in (("a", "Background"), ("b", "Next steps")):
        files[f"layer1_sources/help/{name}.md"] = (
            f"---\ntitle: Assembly {name}\ncategory: hardware\n---\n\n## Overview\n\n"
            f"Assembly {name} covers the kit from the box to the first move.\n\n## {heading}\n\n{shared}\n\n"
            f"## Tips\n\nKit {name} ships with its own spare belt clips.\n"
        )
    root = tree(files)
    compile_wiki(root)
    assert (root / "wiki/guides/mounting.md").is_file()
    topic = (root / "wiki/topics/hardware.md").read_text("utf-8")
    assert "### Next steps" in topic
    from wikic.check.run import check

    report = check(root)
    assert not [f for f in report.findings if f.rule == "broken-link"], report.findings
