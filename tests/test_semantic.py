"""Matching by meaning (``search.semantic``): compile embeds layer 1 into the search index, only
what changed; search, ask and eval fuse the sections nearest a question by meaning; with the
switch off, or without the model, every lookup is exactly what words alone give, and the tool
says once why meaning is not used."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import changed_files, copy_example, snapshot_tree

from wikic.cli import main as entry
from wikic.compile.run import compile_wiki
from wikic.compile.searchindex.dense import KINDS, embed_text, vector_store
from wikic.compile.searchindex.store import DB_PATH
from wikic.core import embedding
from wikic.core.facts import plural_stem
from wikic.core.markdown import content_words
from wikic.core.vectors import text_key
from wikic.lookup.ask import Lookup
from wikic.lookup.eval import load_questions, run_eval
from wikic.lookup.search import open_index

REPO = Path(__file__).resolve().parents[1]
RANKINGS = Path(__file__).resolve().parent / "fixtures" / "lexical_rankings.json"
MODES = ("index", "search", "raw")
NOISE = ("is it noisy", "layer1_sources/faq/pump-noise.md")  # no word in common with its section


@pytest.fixture(scope="module", autouse=True)
def model() -> None:
    try:
        embedding.model_files()
    except embedding.Unavailable as exc:
        pytest.skip(str(exc))


def switch_off(root: Path) -> Path:
    with (root / "schema" / "wiki.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\nsearch:\n  semantic: false\n")
    return root


def search(root: Path, query: str, capsys: pytest.CaptureFixture[str], k: int = 5) -> tuple[list[dict], str]:
    """``wikic search QUERY --json`` as an agent runs it: (results, what it said on stderr)."""
    capsys.readouterr()
    assert entry.quick(["--root", str(root), "search", query, "--k", str(k), "--json"])
    out = capsys.readouterr()
    return json.loads(out.out)["results"], out.err


def stems(text: str) -> set[str]:
    return {plural_stem(w) for w in content_words(text)}


def test_a_question_in_other_words_is_found_by_meaning_and_not_by_words(
    example_kb: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query, path = NOISE
    section = (example_kb / path).read_text("utf-8").split("\n---\n", 1)[1]
    assert stems(query) & stems(section) == set()
    found, said = search(example_kb, query, capsys)
    assert [r["path"] for r in found][:1] == [path] and said == ""
    off = switch_off(copy_example(tmp_path / "off"))
    assert path not in [r["path"] for r in search(off, query, capsys, k=10)[0]]


def test_compile_embeds_each_changed_text_once_and_a_rerun_writes_nothing(
    example_kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = compile_wiki(example_kb)
    db = sqlite3.connect(example_kb / DB_PATH)
    keys = {kind: set(vector_store(db, kind).keys()) for kind in KINDS}
    assert first.search_index["embedded"] == sum(map(len, keys.values())) > 100
    assert (example_kb / embedding.QUERY_ASSETS).is_file()

    embedded: list[str] = []
    real = embedding.BatchEmbedder.embed
    monkeypatch.setattr(
        embedding.BatchEmbedder, "embed", lambda self, texts: embedded.extend(texts) or real(self, texts)
    )
    page = example_kb / "layer1_sources" / "faq" / "pump-noise.md"
    text = page.read_text("utf-8")
    old = "every half hour"
    assert old in text
    page.write_text(text.replace(old, "every thirty minutes", 1), "utf-8")
    second = compile_wiki(example_kb)
    # the index: the changed section and its document, nothing else; the planner, in memory, the
    # changed section once and its guides' queries, never a section the index holds
    changed = [t for t in embedded if "every thirty minutes" in t]
    queries = [t for t in embedded if "every thirty minutes" not in t]
    assert second.search_index["embedded"] == 2 and len(changed) == 3
    assert queries and len(set(queries)) == len(queries)
    assert not {text_key(t) for t in queries} & set().union(*keys.values())
    now = {kind: set(vector_store(db, kind).keys()) for kind in KINDS}
    assert [len(now[k] - keys[k]) for k in KINDS] == [1, 1] and [len(keys[k] - now[k]) for k in KINDS] == [
        1,
        1,
    ]

    before = snapshot_tree(example_kb)
    assert compile_wiki(example_kb).search_index == {}  # nothing changed: the index is not even read
    assert changed_files(before, snapshot_tree(example_kb)) == [] and len(embedded) == len(changed + queries)
    db.close()


def test_a_changed_page_leaves_the_vectors_unread(
    compiled_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only layer-1 chunks have vectors: an update that re-indexes a wiki page alone does not
    list them again (compile's update after writing its pages), while a changed source does."""
    from wikic.compile.searchindex import dense
    from wikic.compile.searchindex.store import IndexStore

    listed: list[int] = []
    real = dense.sync_vectors
    monkeypatch.setattr(dense, "sync_vectors", lambda *a, **k: listed.append(1) or real(*a, **k))
    page = compiled_example / "wiki" / "comparisons" / "herbs.md"
    page.write_text(page.read_text("utf-8") + "\nA line added by hand.\n", "utf-8")
    with IndexStore(compiled_example) as index:
        stats = index.update(semantic=True)
    assert (stats.changed, stats.embedded, listed) == (1, 0, [])
    source = compiled_example / "layer1_sources" / "faq" / "pump-noise.md"
    source.write_text(source.read_text("utf-8") + "\nIt hums when the tank is low.\n", "utf-8")
    with IndexStore(compiled_example) as index:
        stats = index.update(semantic=True)
    assert (stats.changed, stats.embedded, listed) == (1, 2, [1])


def test_the_first_search_after_a_compile_finds_the_index_ready(compiled_example: Path) -> None:
    index, stats = open_index(compiled_example)
    index.close()
    assert (stats.added, stats.changed, stats.removed, stats.embedded) == (0, 0, 0, 0)


def test_a_query_reads_vectors_embedded_for_its_own_text(compiled_example: Path) -> None:
    """The embedded text of a chunk is what compile keyed its vector by."""
    db = sqlite3.connect(compiled_example / DB_PATH)
    rows = db.execute("SELECT kind, title, headings, body, vkey FROM chunks WHERE kind IN ('source', 'doc')")
    from wikic.core.vectors import text_key

    assert all(text_key(embed_text(t, h, b)) == key for _, t, h, b, key in rows)
    db.close()


def test_by_meaning_a_derived_word_no_source_holds_is_searched_as_its_base(
    compiled_example: Path, tmp_path: Path
) -> None:
    """No source says 'crusty'; matching by meaning, the search reads it as 'crust', as answers
    do, and finds the crust FAQ first. By words alone the question is read as typed."""
    question = "My pods have a white crusty layer on them, what is it?"
    crust = "layer1_sources/faq/white-crust-on-pods.md#what-is-the-white-crust-on-my-pods-and-tank"
    on = Lookup(compiled_example).retrieve(question, mode="search")
    off = Lookup(_lexical(tmp_path, "lexical")).retrieve(question, mode="search")
    assert on.refs[0] == crust and off.refs[0] != crust and crust in off.refs


def _lexical(tmp_path: Path, name: str) -> Path:
    return switch_off(copy_example(tmp_path / name))


def test_without_the_package_compile_and_search_say_so_once_and_match_by_words(
    example_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wordllama" else real(name, *a)
    )
    report = compile_wiki(example_kb)
    notes = [n for n in report.notes if "semantic search is off" in n]
    assert len(notes) == 1 and "'wordllama' package is not installed" in notes[0]
    assert not (example_kb / embedding.QUERY_ASSETS).exists()
    lexical = _lexical(tmp_path, "lexical")
    compile_wiki(lexical)
    for query in (NOISE[0], "How long does a full tank last?"):
        found, said = search(example_kb, query, capsys)
        assert found == search(lexical, query, capsys)[0]
        assert said.count("note: semantic search is off: the 'wordllama' package is not installed") == 1
        assert "Traceback" not in said


def test_a_damaged_query_file_is_noted_once_searched_by_words_and_mended_by_compile(
    compiled_example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assets = compiled_example / embedding.QUERY_ASSETS
    good = assets.read_bytes()
    assets.unlink()  # a link to the session's file (conftest.copy_kb): damage this copy only
    assets.write_bytes(good[: len(good) // 2])
    lexical = _lexical(tmp_path, "lexical")
    found, said = search(compiled_example, NOISE[0], capsys)
    assert found == search(lexical, NOISE[0], capsys)[0]
    assert said.count("note:") == 1 and f"{assets} is damaged" in said
    capsys.readouterr()
    assert entry.quick(["--root", str(compiled_example), "ask", "Is it noisy?"])
    assert capsys.readouterr().err.count("is damaged") == 1
    compile_wiki(compiled_example)
    assert assets.read_bytes() == good
    found, said = search(compiled_example, NOISE[0], capsys)
    assert found[0]["path"] == NOISE[1] and said == ""


def test_switching_it_off_and_on_again_needs_no_new_embedding(
    compiled_example: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wiki_yaml = compiled_example / "schema" / "wiki.yaml"
    original = wiki_yaml.read_text("utf-8")
    switch_off(compiled_example)
    assert NOISE[1] not in [r["path"] for r in search(compiled_example, NOISE[0], capsys, k=10)[0]]
    monkeypatch.setattr(embedding.BatchEmbedder, "embed", lambda *a: pytest.fail("embedded again"))
    wiki_yaml.write_text(original, "utf-8")
    assert search(compiled_example, NOISE[0], capsys)[0][0]["path"] == NOISE[1]


# ---------------------------------------------------------------- switch off: words alone, as before


def record(root: Path, questions) -> dict[str, dict[str, str]]:
    """{question id: {part: digest}}: what the search command and each mode's lookup give it
    (the hits; the ranking, pages, evidence, judgement and answer)."""
    lookup = Lookup(root)
    out = {}
    try:
        for q in questions:
            hits = lookup.index.search(q.question, k=10)
            got: dict[str, object] = {
                "search": [h.as_dict() for h in hits.hits],
                "strong": hits.strong_signal,
            }
            for mode in MODES:
                found = lookup.retrieve(q.question, mode, k=10)
                answer = lookup.answer(q.question, mode, found=found)
                got[mode] = {
                    "ranked": found.ranked[:20],
                    "refs": found.refs,
                    "pages": found.pages,
                    "evidence": round(found.evidence, 6),
                    "reason": found.reason,
                    "answer": answer.text,
                }
            out[q.id] = {part: _digest(value) for part, value in got.items()}
    finally:
        lookup.close()
    return out


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _layer1_only(src: Path, dest: Path) -> Path:
    for name in ("schema", "layer1_sources"):
        shutil.copytree(src / name, dest / name)
    return switch_off(dest)


@pytest.mark.parametrize("kb", ["example", "farmbot"])
def test_switched_off_every_lookup_gives_what_words_alone_gave_before(
    kb: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Recorded from wikic before matching by meaning existed (``lexical_rankings.json``); after
    a deliberate change to lexical lookup, rewrite it with WIKIC_RECORD_RANKINGS=1."""
    if kb == "example":
        src, questions = REPO, load_questions(REPO / "examples" / "questions.yaml")
    else:
        from farmbot_kb import QUESTIONS

        src, questions = request.getfixturevalue("farmbot_compiled"), load_questions(QUESTIONS)
    got = record(_layer1_only(src, tmp_path / kb), questions)
    recorded = json.loads(RANKINGS.read_text("utf-8"))
    if os.environ.get("WIKIC_RECORD_RANKINGS"):
        recorded[kb] = got
        RANKINGS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", "utf-8")
    differ = [
        f"{qid}:{part}"
        for qid, parts in recorded[kb].items()
        for part in parts
        if got[qid][part] != parts[part]
    ]
    assert set(got) == set(recorded[kb]) and differ == []


def test_eval_notes_why_meaning_is_not_used(compiled_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (compiled_example / embedding.QUERY_ASSETS).unlink()
    questions = load_questions(REPO / "examples" / "questions.yaml")[:3]
    report = run_eval(compiled_example, questions, "search")
    assert len(report.notes) == 1 and "embedding.bin is missing" in report.notes[0]
    assert report.as_dict()["notes"] == report.notes


def test_soon_hands_back_what_its_thread_returned_or_raised() -> None:
    import _thread

    from wikic.lookup.soon import Soon

    begun, hold = [], _thread.allocate_lock()
    hold.acquire()

    def work() -> int:
        begun.append(_thread.get_ident())
        with hold:  # until the test lets it finish
            return 42

    soon = Soon(work)
    assert begun and begun[0] != _thread.get_ident()  # already running, in a thread of its own
    hold.release()
    assert soon.result() == 42

    def fail() -> None:
        raise ValueError("no vectors here")

    with pytest.raises(ValueError, match="no vectors here"):
        Soon(fail).result()


def test_lists_read_beside_the_dense_list_are_those_read_alone(
    example_kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question's BM25 lists are read in a thread while its dense list is worked out: the pass
    is the same as with both read one after the other."""
    from wikic.lookup import soon
    from wikic.lookup.fuse import PLANS

    class InLine:
        def __init__(self, work):
            self.value = work()

        def result(self):
            return self.value

    questions = [NOISE[0], "how long can I leave the Grove 6 alone", "what is the return policy"]
    index, _ = open_index(example_kb)
    try:
        beside = [index.retrieve(q, PLANS["index"]) for q in questions]
        monkeypatch.setattr(soon, "Soon", InLine)
        alone = [index.retrieve(q, PLANS["index"]) for q in questions]
    finally:
        index.close()
    rows = [{key: ranked.rows for key, ranked in got.lists.items()} for got in beside]
    assert rows == [{key: ranked.rows for key, ranked in got.lists.items()} for got in alone]
    assert any(key[0].startswith("dense:") and ranked for lists in rows for key, ranked in lists.items())
