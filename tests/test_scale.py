"""What must hold however large the KB: findings that do not depend on how many documents repeat
a sentence, and the same wiki from one process or many."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, changed_files, copy_example, snapshot_tree

from wikic.compile.disagreements import disagreements
from wikic.compile.run import compile_wiki
from wikic.compile.timeline import document_frequencies, sentences_of
from wikic.core.errors import KBError
from wikic.core.markdown import split_sections
from wikic.core.models import SourceDoc


def doc(n: int, body: str, title: str = "") -> SourceDoc:
    path = f"layer1_sources/help/{n:05d}.md"
    sections = tuple(split_sections(body))
    return SourceDoc("help", str(n), f"{n:05d}", path, title or f"Note {n}", {}, body, "sha256:x", sections)


FILLER = "## Notes\n\nWater the basil every morning and keep the tray topped up."
ETCHER = "## Flashing\n\nFlash the microSD card using the special Etcher program before the first boot."
IMAGER = (
    "## Flashing\n\nFlash the microSD card with a special writing tool called Raspberry Pi Imager "
    "before the first boot."
)


def test_a_disagreement_repeated_by_hundreds_of_documents_is_still_found() -> None:
    """Help centres repeat their sentences: two ways to flash a card, each said by 250 articles
    among 10,000, are one disagreement between two tools, found as it is among a few articles."""
    for copies, total in ((2, 200), (250, 10000)):
        docs = [doc(i, ETCHER if i < copies else IMAGER if i < 2 * copies else FILLER) for i in range(total)]
        said = {d.path: sentences_of(d) for d in docs}
        found = disagreements(docs, said, document_frequencies(docs))
        choices = {frozenset((d.choice_a, d.choice_b)) for d in found}
        assert choices == {frozenset(("Etcher", "Raspberry Pi Imager"))}, (copies, choices)
        assert all(d.a.doc.path < d.b.doc.path and d.a.doc.path != d.b.doc.path for d in found)


def wiki_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "wiki").rglob("*"))
        if p.is_file()
    }


def vectors(root: Path) -> dict[str, list[tuple]]:
    """Every vector table of the search index compile wrote, row by row."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(root / ".wikic" / "search.sqlite")) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        tables = [n for n in names if n.startswith("vectors_") and not n.endswith("_scan")]
        return {n: conn.execute(f"SELECT * FROM {n} ORDER BY key").fetchall() for n in tables}


def test_any_number_of_processes_writes_the_same_wiki(tmp_path: Path) -> None:
    """Pages made (and layer 1 embedded for the search index) in one process or in a pool of three
    are byte for byte the same wiki and vectors (and the same report), and a recompile with nothing
    changed writes nothing."""
    base = copy_example(tmp_path / "base")
    shutil.rmtree(base / "wiki")
    wikis, reports, embedded = [], [], []
    for jobs in (1, 3):
        root = tmp_path / f"jobs-{jobs}"
        shutil.copytree(base, root)
        report = compile_wiki(root, jobs=jobs)
        assert report.added and not report.failed
        wikis.append(wiki_bytes(root))
        embedded.append(vectors(root))
        reports.append((report.added, report.sentences, report.verified, report.citations, report.coverage))
        before = snapshot_tree(root)
        assert not compile_wiki(root, jobs=jobs).wrote_anything
        assert changed_files(before, snapshot_tree(root)) == []
    assert wikis[0] == wikis[1]
    assert reports[0] == reports[1]
    assert_same_vectors(embedded[0], embedded[1])
    # layer 1 indexed in a process of its own while the pages were made: the same index
    assert index_rows(tmp_path / "jobs-1") == index_rows(tmp_path / "jobs-3")


def index_rows(root: Path) -> dict[str, list[tuple]]:
    """The search index's files, chunks and documents, and its full-text rows, in a set order."""
    import sqlite3

    from wikic.compile.searchindex.files import TABLES

    with contextlib.closing(sqlite3.connect(root / ".wikic" / "search.sqlite")) as conn:
        rows = {
            "files": conn.execute("SELECT path, kind, sha256 FROM files ORDER BY path").fetchall(),
            "docs": conn.execute("SELECT * FROM docs ORDER BY path").fetchall(),
            "chunks": conn.execute(
                "SELECT file, kind, path, anchor, heading, body, vkey FROM chunks ORDER BY file, id"
            ).fetchall(),
        }
        for kind in TABLES:  # the FTS tables keep no text: each row's token counts per column
            rows[kind] = conn.execute(
                f"SELECT c.file, c.anchor, f.sz FROM fts_{kind}_docsize f"
                " JOIN chunks c ON c.id = f.id ORDER BY c.file, c.id"
            ).fetchall()
    assert len(rows["source"]) > 100 and len(rows["page"]) > 100
    return rows


def test_a_compile_whose_layer1_indexing_fails_indexes_layer1_after_the_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layer 1 is indexed alongside the plan in a process of its own; when that fails, the
    compile says so in a note and indexes layer 1 itself: the index is whole all the same."""
    from wikic.compile import run

    whole = copy_example(tmp_path / "whole")
    shutil.rmtree(whole / "wiki")
    broken = tmp_path / "broken"
    shutil.copytree(whole, broken)
    assert not compile_wiki(whole, jobs=2).notes

    def fails(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(run, "update_layer1", fails)
    report = compile_wiki(broken, jobs=2)
    assert report.notes == [
        "layer 1 was indexed after the pages: indexing it alongside failed (OSError: disk full)"
    ]
    assert index_rows(broken) == index_rows(whole) and not report.failed


def test_a_compile_whose_page_indexing_fails_indexes_the_pages_after_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages go into the index in a process of their own while the compile is recorded
    (coverage, log, state); when that fails, the compile says so and indexes them itself."""
    from wikic.compile import run

    whole = copy_example(tmp_path / "whole")
    shutil.rmtree(whole / "wiki")
    broken = tmp_path / "broken"
    shutil.copytree(whole, broken)
    first = compile_wiki(whole, jobs=2)
    assert not first.notes
    compiling, update_index = os.getpid(), run.update_index

    def fails_alongside(*args: object, **kwargs: object) -> object:
        if os.getpid() != compiling:
            raise OSError("disk full")
        return update_index(*args, **kwargs)

    monkeypatch.setattr(run, "update_index", fails_alongside)
    report = compile_wiki(broken, jobs=2)
    assert report.notes == [f"{run.PAGES_LATE} (OSError: disk full)"]
    assert index_rows(broken) == index_rows(whole) and not report.failed
    assert report.search_index == first.search_index


def test_the_index_takes_a_pages_rows_as_made_only_for_the_bytes_they_were_made_from(
    tmp_path: Path,
) -> None:
    """The page phase hands the index each new page's rows (``page_rows``): the index writes them
    as they are when the page's bytes have the hash they were made for, and chunks a page that
    has other bytes itself."""
    from wikic.compile.searchindex.store import page_rows, update_index

    root = copy_example(tmp_path / "kb")
    compile_wiki(root, jobs=1)
    whole = index_rows(root)
    page = next(p for p in sorted((root / "wiki").rglob("*.md")) if "/index" not in p.as_posix())
    rel = page.relative_to(root).as_posix()
    shutil.rmtree(root / ".wikic")
    text = page.read_text("utf-8")
    digest, rows = page_rows(rel, text)
    assert rows and page_rows(rel, text) == (digest, rows)
    marked = [(kind, (values[0], "made", *values[2:]), fts) for kind, values, fts in rows]
    update_index(root, True, pages={rel: (digest, marked)})
    assert {r[3] for r in index_rows(root)["chunks"] if r[0] == rel} == {"made"}
    shutil.rmtree(root / ".wikic")
    update_index(root, True, pages={rel: ("sha256:other", marked)})
    assert index_rows(root) == whole


def test_work_run_ahead_gives_its_result_or_says_why_it_has_none() -> None:
    from wikic.core.pool import AHEAD_NICENESS, Ahead, ahead

    found = Ahead(lambda: {"files": 3})
    assert found.result() == {"files": 3} and found.why == ""
    # it runs below this process, which keeps the cores for the work that waits on it
    assert Ahead(lambda: os.nice(0)).result() == min(19, os.nice(0) + AHEAD_NICENESS)

    def fails() -> None:
        raise ValueError("no such table")

    failed = Ahead(fails)
    assert failed.result() is None and failed.why == "ValueError: no such table"
    killed = Ahead(lambda: os._exit(3))
    assert killed.result() is None and killed.why == "the process ended with code 3"
    with ahead(lambda: 1, enabled=False) as job:
        assert job is None


def test_farmbot_from_one_process_is_the_wiki_a_pool_of_three_wrote(
    farmbot_compiled: Path, tmp_path: Path
) -> None:
    """The shared FarmBot build is compiled in a pool of three (conftest); one process writes the
    same wiki and vectors, and its recompile writes nothing."""
    root = tmp_path / "jobs-1"
    shutil.copytree(farmbot_compiled, root)
    shutil.rmtree(root / "wiki")
    shutil.rmtree(root / ".wikic")
    assert not compile_wiki(root, jobs=1).failed
    assert wiki_bytes(root) == wiki_bytes(farmbot_compiled)
    assert_same_vectors(vectors(root), vectors(farmbot_compiled))
    before = snapshot_tree(root)
    assert not compile_wiki(root, jobs=1).wrote_anything
    assert changed_files(before, snapshot_tree(root)) == []


def assert_same_vectors(one: dict[str, list[tuple]], other: dict[str, list[tuple]]) -> None:
    layer1 = ("vectors_source", "vectors_doc")  # vectors_plan holds the planner's few queries
    assert one == other and all(len(one[n]) > 10 for n in layer1), {n: len(rows) for n, rows in one.items()}


def test_pages_of_one_type_made_from_nearly_the_same_sources_are_duplicates() -> None:
    """Found through the sources pages share, not by comparing every pair of pages."""
    from types import SimpleNamespace

    from wikic.check.pages import WikiPage
    from wikic.check.placement import rule_duplicates

    def page(name: str, kind: str, sources: range | list[int]) -> WikiPage:
        meta = {"title": name, "type": kind, "sources": [f"layer1_sources/s/{i}.md" for i in sources]}
        return WikiPage(f"wiki/{kind}s/{name}.md", meta, [], 0)

    pages = [
        page("a", "topic", range(5)),
        page("b", "topic", range(6)),  # 5 of its 6 sources are a's
        page("c", "topic", [0, 1, 7, 8]),
        page("d", "guide", range(5)),  # a's sources, but another type of page
        page("e", "topic", range(100, 103)),
    ]
    found = list(rule_duplicates(SimpleNamespace(content_pages=pages)))
    assert [(f.path, f.message.split("%")[0]) for f in found] == [("wiki/topics/b.md", "83")]


def test_a_contradiction_repeated_by_hundreds_of_documents_is_reported_once(tmp_path: Path) -> None:
    """Two values for one fact, each stated by 400 articles: one warning, naming the first pair
    of articles and how many more say the same (it used to vanish past 300 copies)."""
    from types import SimpleNamespace

    from wikic.check.contradictions import Claims, rule_contradictions
    from wikic.check.state import DocRow

    said = {
        0: "## Tank\n\nThe water tank of the planter holds 4 litres when filled to the line.",
        1: "## Tank\n\nThe water tank of the planter holds 6 litres when filled to the line.",
    }
    docs = {d.path: d for d in (doc(i, said[i % 2], "Planter care") for i in range(800))}
    claims = Claims()
    for d in docs.values():
        claims.add(d)
    rows = {p: DocRow.of(d) for p, d in docs.items()}
    kb = SimpleNamespace(root=tmp_path, docs=rows, superseded_by={}, plan=None, doc=docs.__getitem__)
    found = [f for f in rule_contradictions(kb, claims) if "litre" in f.message]
    assert len(found) == 1, [f.message for f in found]
    assert "4 l" in found[0].message and "6 l" in found[0].message
    assert "159999 more pairs of documents say the same two things" in found[0].message


def test_check_of_an_unchanged_kb_reports_the_last_findings_without_running_a_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second check of the same bytes runs no rule; an edit that keeps the file's time, or
    --full, runs them all again."""
    import os

    import wikic.check.run as check_run

    root = copy_example(tmp_path / "kb")
    first = check_run.check(root)
    assert not first.errors and first.statements > 100

    def no_rules(_root: Path) -> None:
        raise AssertionError("the rules ran again")

    with monkeypatch.context() as m:
        m.setattr(check_run, "run_rules", no_rules)
        again = check_run.check(root)
    assert again.findings == first.findings and again.statements == first.statements
    assert again.coverage.as_dict() == first.coverage.as_dict()
    assert check_run.check(root, full=True).findings == first.findings

    page = root / "wiki/topics/orders-and-policies.md"
    stat = page.stat()
    page.write_text(page.read_text("utf-8").replace("ship for a flat $5.95.", "ship for a flat $4.95."))
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    found = [f for f in check_run.check(root).errors if f.rule == "unsupported-citation"]
    assert [f.path for f in found] == ["wiki/topics/orders-and-policies.md"]


def test_check_after_a_compile_reuses_its_plan_and_verification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a compile, check neither plans again nor verifies the pages the compile wrote
    and verified; a page edited since, a changed source and --full are checked as before."""
    import os

    import wikic.check.state as check_state
    from wikic.check.run import check
    from wikic.compile.citations import Verifier

    root = copy_example(tmp_path / "kb")
    shutil.rmtree(root / "wiki")
    compile_wiki(root)
    real_plan, real_check = check_state.planned_now, Verifier.check
    verified: list[str] = []

    def counted(self, text, cites, quotes=()):
        verified.append(text)
        return real_check(self, text, cites, quotes)

    with monkeypatch.context() as m:
        m.setattr(check_state, "planned_now", lambda *a: pytest.fail("planned again"))
        m.setattr(Verifier, "check", counted)
        first = check(root)
        assert not first.errors and first.coverage is not None and not verified
        page = root / "wiki/topics/orders-and-policies.md"
        page.write_text(page.read_text("utf-8").replace("ship for a flat $5.95.", "ship for a flat $4.95."))
        found = [f for f in check(root).errors if f.rule == "unsupported-citation"]
        assert [f.path for f in found] == [page.relative_to(root).as_posix()] and verified
        count = len(verified)
        m.setattr(check_state, "planned_now", real_plan)
        full = check(root, full=True)
        assert len(verified) > count + 100 and full.findings == check(root).findings
    source = next((root / "layer1_sources/faq").glob("*.md"))
    source.write_text(source.read_text("utf-8") + "\nOne more line.\n", "utf-8")
    os.utime(source, ns=(0, 0))
    assert any(f.rule == "stale-page" for f in check(root).errors)


def test_check_after_a_source_changed_verifies_again_only_the_pages_that_cite_it(
    compiled_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layer-1 file changed since the compile: the pages citing it are verified again (and a
    sentence it no longer supports is reported); the others are as the compile verified them."""
    from wikic.check.pages import wiki_pages
    from wikic.check.run import check
    from wikic.compile.citations import Verifier

    root = compiled_example
    changed = "layer1_sources/faq/shipping.md"
    citing = {
        p.path: p for p in wiki_pages(root) if any(c.path == changed for s in p.statements for c in s.cites)
    }
    assert citing and len(citing) < len(wiki_pages(root)) / 2
    source = root / changed
    source.write_text(source.read_text("utf-8").replace("ship for a flat $5.95.", "ship for a flat $4.95."))
    real_check, verified = Verifier.check, []

    def counted(self, text, cites, quotes=()):
        verified.append(text)
        return real_check(self, text, cites, quotes)

    monkeypatch.setattr(Verifier, "check", counted)
    report = check(root)
    again = {s.text for p in citing.values() for s in p.statements if s.cites}
    assert verified and set(verified) <= again
    found = [f for f in report.errors if f.rule == "unsupported-citation"]
    assert [f.path for f in found] == ["wiki/topics/orders-and-policies.md"] and "$5.95" in found[0].message
    assert report.findings == check(root, full=True).findings


def test_check_reads_layer1_and_the_wiki_one_document_and_one_page_at_a_time(
    compiled_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a compile, a check holds no more than a document or two and a page at once,
    however many there are: what the rules over the whole KB read is kept as rows, not texts."""
    import weakref

    import wikic.check.run as check_run
    import wikic.check.state as check_state
    import wikic.transform.layer1 as layer1

    monkeypatch.setattr(layer1, "RECENT_DOCS", 1)  # the process's own cache of parsed documents
    monkeypatch.setattr(layer1, "_RECENT", type(layer1._RECENT)())
    docs: list[weakref.ref] = []
    pages: list[weakref.ref] = []
    real_parsed, real_read = layer1._parsed, check_state.read_page

    def parsed(*args):
        docs.append(weakref.ref(found := real_parsed(*args)))
        return found

    def read_page(*args):
        pages.append(weakref.ref(found := real_read(*args)))
        return found

    alive: list[tuple[int, int]] = []

    def census(kb, page):
        alive.append((sum(r() is not None for r in docs), sum(r() is not None for r in pages)))
        return iter(())

    monkeypatch.setattr(layer1, "_parsed", parsed)
    monkeypatch.setattr(check_state, "read_page", read_page)
    monkeypatch.setattr(check_run, "PAGE_RULES", (*check_run.PAGE_RULES, census))
    report = check_run.run_rules(compiled_example)
    assert not report.errors and len(docs) >= report.sources > 100  # every document was read
    assert len(alive) == len(list((compiled_example / "wiki").rglob("*.md")))  # and every page
    assert max(d for d, _ in alive) <= 2 and max(p for _, p in alive) == 1, alive


def _faulty(root: Path, sources_too: bool) -> Path:
    """The compiled example with hand edits: a number changed in a cited sentence, an uncited
    sentence, raw HTML, a link out, an anchor that is no heading, an orphan page; with
    ``sources_too``, a source edited and one that lost its headings."""
    page = root / "wiki/topics/orders-and-policies.md"
    page.write_text(
        page.read_text("utf-8").replace("ship for a flat $5.95.", "ship for a flat $7.95.")
        + "\nThis sentence cites nothing at all.\n\nSome <b>bold</b> text, [out](https://example.com/x).\n\n"
        + "See [there](watering.md#no-such-heading).\n",
        "utf-8",
    )
    (root / "wiki/topics/orphan.md").write_text("---\ntitle: Orphan\n---\n\n# Orphan\n\nNobody links here.\n")
    if sources_too:
        docs = sorted((root / "layer1_sources/faq").glob("*.md"))
        docs[0].write_text(docs[0].read_text("utf-8").replace(" the ", " a ", 3), "utf-8")
        docs[1].write_text(docs[1].read_text("utf-8").replace("\n## ", "\n"), "utf-8")
    return root


@pytest.mark.parametrize("sources_too", [False, True])
def test_check_finds_the_same_whether_it_holds_layer1_or_reads_it_again(
    compiled_example: Path, monkeypatch: pytest.MonkeyPatch, sources_too: bool
) -> None:
    """What a check finds, and the coverage it measures, do not depend on whether it holds every
    document (planning or measuring anew) or reads each again when a rule asks for it."""
    import wikic.check.run as check_run
    import wikic.check.state as check_state

    root = _faulty(compiled_example, sources_too)
    reports = []
    for whole in (False, True):  # hold layer 1 / expect the wiki as compiled, and read again
        monkeypatch.setattr(check_state, "whole_as_compiled", lambda *_, whole=whole: whole)
        reports.append(check_run.run_rules(root))
    held, reread = reports
    rules = {f.rule for f in held.findings}
    assert {
        "unsupported-citation",
        "uncited-sentence",
        "unsafe-markup",
        "broken-link",
        "orphan-page",
    } <= rules
    assert ("stale-page" in rules) == sources_too
    assert held.findings == reread.findings and held.statements == reread.statements
    assert held.coverage.as_dict() == reread.coverage.as_dict()


def test_wikic_jobs_sets_the_default_number_of_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """`WIKIC_JOBS` (a whole number ≥ 1) is how many processes a compile uses when `--jobs` is not
    given; anything else leaves one per core."""
    from wikic.core.pool import default_jobs

    monkeypatch.setenv("WIKIC_JOBS", "3")
    assert default_jobs() == 3
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for junk in ("0", "two", "", "-1"):
        monkeypatch.setenv("WIKIC_JOBS", junk)
        assert default_jobs() == cores


def test_guides_planned_in_processes_are_the_guides_planned_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``GUIDES_IN_PROCESSES`` quotable sections the guides' texts are read, once, and the
    guides planned in forked processes: the plan is the one a single process makes."""
    from wikic.compile import pageplan
    from wikic.compile.schema import load_wiki_schema
    from wikic.core import pool
    from wikic.transform.layer1 import load_layer1

    docs, schema = list(load_layer1(REPO)), load_wiki_schema(REPO)
    alone = pageplan.plan(docs, schema, jobs=1)
    pools, real = [], pool.forked
    monkeypatch.setattr(pool, "forked", lambda jobs: pools.append(jobs) or real(jobs))
    pageplan.plan(docs, schema, jobs=2)
    small = len(pools)  # the example's 365 sections: its guides are planned here
    monkeypatch.setattr(pageplan, "GUIDES_IN_PROCESSES", 0)
    forked = pageplan.plan(docs, schema, jobs=2)
    # the same forks, and the guides': their sections read, then planned (their documents were
    # read with the corpus's words; their quotable sections are found here: it is what the pages
    # read of them later too)
    assert len(pools) == 2 * small + 2
    guides = [s for s in forked.pages if s.type == "guide"]
    assert len(guides) == len(schema.guides) >= 2
    assert forked.pages == alone.pages


def test_an_index_built_in_processes_is_the_index_built_in_one(
    compiled_example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``POOLED_FILES`` files an update reads and chunks them in forked processes, a slice at a
    time: the tables it writes are the ones one process writes, row for row, and a file that
    cannot be parsed is skipped and reported the same way."""
    import sqlite3

    from wikic.compile.searchindex import store
    from wikic.core import pool

    bad = compiled_example / "layer1_sources" / "faq" / "zz-broken.md"
    bad.write_text("---\ntitle: [unclosed\n---\n\nBody.\n")

    def built(db: Path, jobs: int) -> tuple[list, list[str]]:
        with store.IndexStore(compiled_example, db) as index:
            stats = index.update(semantic=False, jobs=jobs)
        conn = sqlite3.connect(db)
        tables = ["files", "chunks", "docs", *(f"fts_{k}_docsize" for k in store.TABLES)]
        rows = [conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall() for t in tables]
        conn.close()
        return rows, stats.skipped

    alone = built(tmp_path / "one.sqlite", 1)
    forks, real = [], pool.forked
    monkeypatch.setattr(pool, "forked", lambda jobs: forks.append(jobs) or real(jobs))
    monkeypatch.setattr(store, "POOLED_FILES", 0)
    pooled = built(tmp_path / "two.sqlite", 2)
    assert forks == [2]
    assert len(alone[0][1]) > 300 and alone[1] and "zz-broken.md" in alone[1][0]
    assert pooled == alone


def test_streamed_work_comes_back_whole_and_in_order() -> None:
    from wikic.core.pool import streamed

    items = list(range(1003))
    assert list(streamed(lambda x: x * x, items, 2, per_slice=7)) == [x * x for x in items]
    assert list(streamed(lambda x: -x, items[:3], 2)) == [0, -1, -2]  # too few to fork


def test_light_work_runs_here_until_each_process_gets_enough_of_it() -> None:
    """Forking costs more than a light pass over a few hundred documents saves: ``least`` items
    per process are needed before ``slices`` and ``each`` fork, and the result is the same."""
    import os

    from wikic.core.pool import each, slices

    here = os.getpid()
    items = list(range(40))
    assert slices(lambda part: {os.getpid()}, items, 2, least=21) == [{here}]
    assert each(lambda x: (x, os.getpid()), items, 2, least=21) == [(x, here) for x in items]
    forked = slices(lambda part: (list(part), os.getpid()), items, 2, least=20)
    assert [x for part, _ in forked for x in part] == items and here not in {pid for _, pid in forked}


def test_layer1_parsed_in_processes_is_layer1_parsed_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``PARSED_IN_PROCESSES`` files, layer 1 is parsed in forked processes: the same
    documents in the same order, and a file that cannot be parsed is reported, not lost."""
    from wikic.core import pool
    from wikic.transform import layer1

    root = copy_example(tmp_path)
    (root / "layer1_sources" / "faq" / "zz-broken.md").write_text("---\ntitle: [unclosed\n---\n\nBody.\n")
    alone: dict[str, str] = {}
    docs = layer1.load_layer1(root, None, alone, jobs=1)
    forks, real = [], pool.forked
    monkeypatch.setattr(pool, "forked", lambda jobs: forks.append(jobs) or real(jobs))
    monkeypatch.setattr(layer1, "PARSED_IN_PROCESSES", 0)
    pooled: dict[str, str] = {}
    assert layer1.load_layer1(root, None, pooled, jobs=2) == docs and len(docs) > 20
    assert forks == [2] and pooled == alone and list(alone) == ["layer1_sources/faq/zz-broken.md"]
    with pytest.raises(KBError, match="zz-broken.md"):
        layer1.load_layer1(root, jobs=2)


def test_a_pages_chunks_from_the_parts_its_writer_joined_are_those_of_its_text() -> None:
    """The page phase chunks a page from the frontmatter and body it joined (``page_parts``),
    not by reading its text back: both give the same chunks, for odd titles and keywords too, and
    a frontmatter whose YAML holds a line that would end it early is read from the text."""
    from wikic.compile.draft import Block, Citation, Draft, Sentence
    from wikic.compile.librarian.offline import OfflineLibrarian
    from wikic.compile.pageplan import PageSpec
    from wikic.compile.searchindex.chunks import _as_written, page_chunks
    from wikic.compile.workers import page_parts, page_text

    cite = (Citation("layer1_sources/faq/tank.md", "how-long"),)
    blocks = (
        Block("para", sentences=(Sentence("The tank lasts 7 days.", cite),)),
        Block("heading", text="Refills", level=2),
        Block("bullets", sentences=(Sentence("Fill it to the *line*.", cite), Sentence("Yes: no.", cite))),
    )
    titles = ["Tank", "yes", "1.5", "# not a heading", "---", "a: b", "Ünïcode — 'quoted' \"both\"", ""]
    for title in titles:
        for summary in ["", "---\n--- spaced ---", "  lead and  trail  ", "null"]:
            draft = Draft(title, summary, ("on", "1e3", "---", title), blocks)
            spec = PageSpec(
                "topic", "tank", title or "Tank", "wiki/topics/tank.md", ("layer1_sources/faq/tank.md",)
            )
            parts = page_parts(spec, draft, "sha256:x", OfflineLibrarian(), None)
            text = page_text(*parts[1:])
            assert page_chunks(spec.path, text, parts) == page_chunks(spec.path, text), (title, summary)
    assert _as_written(({}, "title: a\n---\nb: c\n", "# A")) is None  # YAML that would end early
