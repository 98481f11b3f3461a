"""Search: FTS5 index over wiki pages, layer-1 sections and index.md; RRF fusion; CJK; incremental."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.compile.searchindex.files import kb_files
from wikic.compile.searchindex.store import SCHEMA_VERSION
from wikic.lookup.respell import base_form, split_compound
from wikic.lookup.search import Hit, SearchIndex, rrf
from wikic.lookup.text import is_strong_signal, match_expression, normalise, query_terms

REPO = Path(__file__).resolve().parents[1]


def doc(title: str, body: str, **meta: str) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in {"title": title, **meta}.items())
    return f"---\n{head}---\n\n# {title}\n\n{body}\n"


@pytest.fixture
def kb(tree):
    return tree(
        {
            "layer1_sources/faq/tank.md": doc(
                "How long does the tank last?", "## Duration\n\nA full tank lasts about 7 days.\n"
            ),
            "layer1_sources/faq/pump.md": doc(
                "Cleaning the pump", "## Steps\n\nRinse the pump with vinegar.\n"
            ),
            "layer1_sources/faq/body-only.md": doc(
                "Lights", "## Schedule\n\nThe pump and the tank are mentioned here, in the body only.\n"
            ),
            "layer1_sources/zh/shuixiang.md": doc(
                "水箱能用多久？", "## 使用时间\n\n满水箱大约可以使用七天，之后需要加水。\n"
            ),
            "layer1_sources/zh/dengguang.md": doc("灯光时间表", "## 默认设置\n\n灯光每天开启十六个小时。\n"),
            "wiki/topics/watering.md": (
                "---\ntitle: Watering\ntype: topic\nsummary: tank\nkeywords: [tank]\n---\n\n# Watering\n\n"
                "## Duration\n\nA full tank lasts about 7 days. "
                "[faq/tank](../../layer1_sources/faq/tank.md#duration)\n"
            ),
            "wiki/index.md": (
                "# Wiki index\n\n## Topics\n\n- [Watering](topics/watering.md) — How long the tank lasts. "
                "*Keywords:* tank, water, holiday\n"
            ),
        }
    )


def test_normalise_maps_bm25_scores_into_unit_interval():
    assert normalise(0.0) == 0.0
    assert normalise(-1.0) == pytest.approx(0.5)
    assert normalise(3.0) == pytest.approx(0.75)
    assert normalise(-9.0) == pytest.approx(0.9)
    assert 0 <= normalise(-1e9) < 1


def test_strong_signal_needs_high_top_and_a_clear_gap():
    assert is_strong_signal([-9.0, -1.0])  # 0.90 vs 0.50: strong
    assert not is_strong_signal([-9.0, -5.0])  # 0.90 vs 0.83: gap too small
    assert not is_strong_signal([-4.0, -0.1])  # 0.80: top too low
    assert is_strong_signal([-6.0])  # a lone hit: 0.857, gap to nothing
    assert not is_strong_signal([])


def test_query_terms_drop_stopwords_and_are_safe_fts_syntax():
    assert query_terms("How long does the tank last?") == ["long", "tank", "last"]
    assert query_terms("Can you tell me how she waters it?") == ["tell", "waters"]
    expr = match_expression(query_terms('tank" OR pump) AND NOT* NEAR(x'))
    assert expr.count(" OR ") >= 2 and '"tank"' in expr


def test_search_finds_natural_language_question_with_missing_terms(kb):
    with SearchIndex(kb) as index:
        index.update()
        # 'holidays' and 'weekend' appear nowhere: the query must not AND its words
        result = index.search("how many days will the tank last over my holidays weekend", k=5)
    paths = [h.target for h in result.hits]
    assert "layer1_sources/faq/tank.md#duration" in paths
    top = result.hits[0]
    assert top.snippet and top.score > 0 and (top.heading or top.title)


def test_unknown_words_split_into_two_known_words():
    df = {"sweet": 40, "corn": 12, "sweetc": 1, "orn": 3, "blue": 9, "tooth": 2, "pump": 5}.get

    def known(word: str) -> int:
        return df(word, 0)

    assert split_compound("sweetcorn", known) == "sweet corn"  # not 'sweetc orn': its rarer half is rarer
    assert split_compound("bluetooth", known) == "blue tooth"
    assert split_compound("pump", known) is None  # known words stay
    assert split_compound("zigbeehub", known) is None  # nothing known to split into
    assert split_compound("sweet-corn", known) is None and split_compound("süßkorn", known) is None


def test_unknown_derived_words_are_searched_as_the_word_they_derive_from():
    vocab = {"crust", "slime", "mud", "easy", "green", "app", "leak"}
    known = vocab.__contains__
    assert base_form("crusty", known) == "crust"
    assert base_form("slimy", known) == "slime"
    assert base_form("muddy", known) == "mud"  # a doubled consonant undoubled
    assert base_form("easily", known) == "easy" and base_form("greenish", known) == "green"
    assert base_form("leak", known) is None  # known words stay
    assert base_form("fuzzy", known) is None  # nothing known it derives from
    assert base_form("ly", known) is None and base_form("ay", known) is None  # too short to have a base


def test_search_respells_run_together_words(kb):
    with SearchIndex(kb) as index:
        index.update()
        assert index.respell("Does a fulltank last, tankpump?") == "Does a full tank last, tank pump?"
        assert index.respell("How long does the tank last?") == "How long does the tank last?"
        assert index.respell("Is the pumpy tank lasting?") == "Is the pumpy tank lasting?"  # split only
        assert index.respell("Is the pumpy tank lasting?", derive=True) == "Is the pump tank lasting?"
        plain = index.query("source", "fulltank")
        found = index.search("fulltank", k=3)
    assert plain == [] and found.searched == "full tank" and found.query == "fulltank"
    assert "layer1_sources/faq/tank.md#duration" in [h.target for h in found.hits]


def test_user_input_with_fts_operators_does_not_fail(kb):
    with SearchIndex(kb) as index:
        index.update()
        for q in ['"unbalanced', "tank AND OR NOT", "pump*", "NEAR(tank pump)", "col:tank", "-", ""]:
            index.search(q)


def test_titles_and_headings_outrank_body(kb):
    with SearchIndex(kb) as index:
        index.update()
        hits = index.query("source", "pump")
    assert hits[0].path == "layer1_sources/faq/pump.md"
    assert hits[-1].path == "layer1_sources/faq/body-only.md"


def test_chinese_sources_are_searchable_with_chinese_queries(kb):
    with SearchIndex(kb) as index:
        index.update()
        assert index.search("水箱可以用几天？", k=3).hits[0].path == "layer1_sources/zh/shuixiang.md"
        assert index.search("灯光每天开多久", k=3).hits[0].path == "layer1_sources/zh/dengguang.md"
        assert index.search("灯", k=3).hits  # a single character still matches


def test_wiki_chunks_carry_their_citations_and_index_entries_link_pages(kb):
    with SearchIndex(kb) as index:
        index.update()
        page = index.query("page", "tank days")
        entries = index.query("index", "holiday")
        section = next(h for h in page if h.anchor == "duration")
        shown = index.with_snippets([section], ["tank", "days"])[0]
    assert section.refs == ("layer1_sources/faq/tank.md#duration",)
    assert shown.snippet and "[faq/tank]" not in shown.snippet
    assert entries[0].path == "wiki/topics/watering.md"


def test_update_is_incremental_by_content_hash(kb):
    db = kb / ".wikic" / "search.sqlite"
    with SearchIndex(kb) as index:
        first = index.update()
        assert first.added == 7 and first.chunks > 0
    before = db.read_bytes(), db.stat().st_mtime_ns
    with SearchIndex(kb) as index:
        again = index.update()
        assert not again.wrote and again.unchanged == 7
        assert index.conn.total_changes == 0
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before

    (kb / "layer1_sources/faq/pump.md").write_text(doc("Cleaning the pump", "## Steps\n\nUse citric acid.\n"))
    (kb / "layer1_sources/faq/body-only.md").unlink()
    with SearchIndex(kb) as index:
        stats = index.update()
        assert (stats.added, stats.changed, stats.removed, stats.unchanged) == (0, 1, 1, 5)
        assert index.query("source", "citric")[0].path == "layer1_sources/faq/pump.md"
        assert not index.query("source", "vinegar")
        assert not [h for h in index.query("source", "mentioned") if "body-only" in h.path]


def _hit(path: str, kind: str = "source") -> Hit:
    return Hit(kind, path, "", "", path, 0.0, "")


def test_rrf_weights_original_lists_and_gives_top_rank_bonus():
    a, b, c = _hit("a"), _hit("b"), _hit("c")
    fused = rrf([(2.0, [a, b, c]), (1.0, [c, b, a])])
    scores = {h.path: h.score for h in fused}
    assert scores["a"] == pytest.approx(2 / 61 + 1 / 63 + 0.05)
    assert scores["b"] == pytest.approx(2 / 62 + 1 / 62 + 0.02)
    assert scores["c"] == pytest.approx(2 / 63 + 1 / 61 + 0.05)
    assert [h.path for h in fused][0] == "a"  # the original query's list counts twice


def test_expansion_runs_only_when_the_probe_is_weak(kb):
    calls: list[str] = []

    def expander(q: str) -> list[str]:
        calls.append(q)
        return ["rinse vinegar", q]

    with SearchIndex(kb) as index:
        index.update()
        weak = index.search("cleaning", expander=expander)
        assert calls == ["cleaning"] and weak.expanded == ["rinse vinegar"] and not weak.strong_signal
        assert any(h.path == "layer1_sources/faq/pump.md" for h in weak.hits)
        calls.clear()
        index.search("full tank lasts about 7 days duration long", expander=expander)
        probe = index.query("source", "full tank lasts about 7 days duration long")
        assert is_strong_signal([h.score for h in probe]) == (calls == [])


def test_an_index_written_by_another_schema_version_is_rebuilt(kb):
    """The index is derived state: a file from another version of wikic is replaced, not an error."""
    with SearchIndex(kb) as index:
        index.update()
    import sqlite3

    conn = sqlite3.connect(kb / ".wikic" / "search.sqlite")
    with conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
        conn.execute("CREATE TABLE leftover(x)")
    conn.close()
    with SearchIndex(kb) as index:
        assert index.count("source") == 0  # emptied, not read with the wrong schema
        stats = index.update()
        assert stats.added == len(kb_files(kb)) and index.query("source", "vinegar")
        tables = {r[0] for r in index.conn.execute("SELECT name FROM sqlite_master")}
        version = index.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert "leftover" not in tables and version == str(SCHEMA_VERSION)


def test_cli_search_json_on_the_example_kb(example_kb):
    root = example_kb
    result = CliRunner().invoke(
        app, ["--root", str(root), "search", "how long does the water tank last", "--json", "--k", "3"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["results"]) == 3
    assert {"path", "heading", "score", "snippet"} <= set(data["results"][0])
    assert any("tank" in r["path"] or "watering" in r["path"] for r in data["results"])
    plain = CliRunner().invoke(app, ["--root", str(root), "search", "pump noise"])
    assert plain.exit_code == 0 and "1." in plain.output


def test_aliases_are_searched_with_their_source_and_documents_whole(tree):
    root = tree(
        {
            "layer1_sources/crops/arugula.md": doc(
                "Arugula", "## Sowing\n\nSow thinly in rows.\n", common_names="[Rocket Salad, Roquette]"
            ),
            "layer1_sources/crops/kale.md": doc("Kale", "## Sowing\n\nSow kale in rows.\n"),
            "layer1_sources/faq/safety.md": doc("Product safety", "## Hazards\n\nPinch points.\n"),
        }
    )
    with SearchIndex(root) as index:
        index.update()
        assert {h.path for h in index.query("source", "rocket")} == {"layer1_sources/crops/arugula.md"}
        assert index.query("doc", "rocket rows")[0].refs == ("layer1_sources/crops/arugula.md",)
        assert not index.doc_freq("source", "safe")  # the stemmer keeps 'safe' and 'safety' apart…
        assert index.doc_freq("source", "safe", prefix=True) == 2  # …a prefix joins them (both sections)
        arugula = index.doc("layer1_sources/crops/arugula.md")
        assert arugula.title == "Arugula" and arugula.meta["common_names"] == ["Rocket Salad", "Roquette"]
        assert [s.anchor for s in arugula.sections] == ["arugula", "sowing"]
        assert index.doc_names()["layer1_sources/crops/arugula.md"][4] == ("Rocket Salad", "Roquette")


def test_the_index_knows_superseded_documents_and_the_configured_backend(tree):
    root = tree(
        {
            "layer1_sources/faq/old.md": doc("Returns", "## Window\n\n30 days.\n", id="returns-2024"),
            "layer1_sources/faq/new.md": doc("Returns", "## Window\n\n60 days.\n", supersedes="returns-2024"),
            "schema/wiki.yaml": "librarian:\n  backend: offline\n",
            "schema/librarian.md": "# Librarian rules\n",
        }
    )
    with SearchIndex(root) as index:
        index.update()
        assert index.superseded() == {"layer1_sources/faq/old.md": "layer1_sources/faq/new.md"}
        assert index.backend() is None  # not read yet
        index.remember_backend("offline")
        assert index.backend() == "offline"
        (root / "schema" / "wiki.yaml").write_text("librarian:\n  backend: anthropic\n")
        assert index.backend() is None  # the schema changed: read it again
        (root / "layer1_sources" / "faq" / "new.md").unlink()
        index.update()
        assert index.superseded() == {}


def test_an_unchanged_file_is_not_reread_and_a_changed_one_is(kb, monkeypatch):
    import os
    import time

    from wikic.compile.searchindex import store as search

    old = time.time() - 60
    settled = list((kb / "layer1_sources").rglob("*.md"))
    for path in settled:
        os.utime(path, (old, old))
    with SearchIndex(kb) as index:
        index.update()
        read: list[str] = []
        real = search.sha256_tag
        monkeypatch.setattr(search, "sha256_tag", lambda data: read.append(data) or real(data))
        # settled files are known by size and time; the wiki files, just written, are hashed again
        assert index.update().unchanged == len(kb_files(kb)) and len(read) == len(kb_files(kb)) - len(settled)
        pump = kb / "layer1_sources" / "faq" / "pump.md"
        pump.write_text(pump.read_text().replace("vinegar", "citric"))  # same size, new bytes
        read.clear()
        stats = index.update()
        assert stats.changed == 1 and index.query("source", "citric")[0].path == "layer1_sources/faq/pump.md"


def test_chunks_written_in_batches_take_the_ids_rows_written_one_by_one_would(kb, tmp_path, monkeypatch):
    """Chunks are written a few thousand at a time; their ids (which order hits tied in score)
    are those the database gives rows inserted one by one, also after a file changed, and each
    FTS row has its chunk's id."""
    import shutil

    from wikic.compile.searchindex import store

    def indexed(root: Path, limit: int) -> list[tuple]:
        monkeypatch.setattr(store._Pending, "LIMIT", limit)
        with SearchIndex(root) as index:
            index.update(semantic=False)
            pump = root / "layer1_sources" / "faq" / "pump.md"
            pump.write_text(pump.read_text().replace("vinegar", "citric acid"))
            index.update(semantic=False)
            rows = index.conn.execute("SELECT id, file, kind, anchor FROM chunks ORDER BY id").fetchall()
            for kind in ("page", "source", "index", "doc"):
                fts = index.conn.execute(f"SELECT rowid FROM fts_{kind} ORDER BY rowid").fetchall()
                assert [r for (r,) in fts] == [r[0] for r in rows if r[2] == kind]
            return rows

    other = shutil.copytree(kb, tmp_path / "other")
    one_by_one, batched = indexed(kb, 1), indexed(other, 3)
    assert batched == one_by_one and one_by_one[-1][1] == "layer1_sources/faq/pump.md"


def test_a_changed_or_removed_file_leaves_nothing_behind_in_the_full_text_tables(kb, tmp_path):
    """The FTS tables keep no text of their own: a chunk's row is deleted with the values it was
    made of (its title with its subject's other names, CJK as bigrams). After files change and
    go, every word matches, and scores, as in an index built afresh from the files as they are."""
    import shutil

    arugula = kb / "layer1_sources" / "plants" / "arugula.md"
    arugula.parent.mkdir()
    arugula.write_text(doc("Arugula", "## Sowing\n\nSow arugula thinly in spring.\n", aliases="[rocket]"))
    with SearchIndex(kb) as index:
        index.update(semantic=False)
        assert index.query("source", "rocket")[0].path == "layer1_sources/plants/arugula.md"
        pump = kb / "layer1_sources" / "faq" / "pump.md"
        pump.write_text(pump.read_text().replace("vinegar", "citric acid"))
        arugula.write_text(arugula.read_text().replace("rocket", "roquette"))
        shuixiang = kb / "layer1_sources" / "zh" / "shuixiang.md"
        shuixiang.write_text(shuixiang.read_text().replace("七天", "五天"))
        (kb / "layer1_sources" / "faq" / "body-only.md").unlink()
        watering = kb / "wiki" / "topics" / "watering.md"
        watering.write_text(watering.read_text().replace("7 days", "a week"))
        stats = index.update(semantic=False)
        assert (stats.changed, stats.removed) == (4, 1)
        fresh = shutil.copytree(kb, tmp_path / "fresh", ignore=shutil.ignore_patterns(".wikic"))
        with SearchIndex(fresh) as rebuilt:
            rebuilt.update(semantic=False)
            words = ["vinegar", "citric", "rocket", "roquette", "arugula", "pump", "tank", "body", "days"]
            words += ["week", "lights", "七天", "五天", "水箱"]
            for kind in ("page", "source", "index", "doc"):
                for word in words:
                    found = [(h.path, h.anchor, h.score) for h in index.query(kind, word)]
                    assert found == [(h.path, h.anchor, h.score) for h in rebuilt.query(kind, word)], (
                        kind,
                        word,
                    )
            assert not index.query("source", "vinegar") and not index.query("doc", "rocket")
            assert not index.query("source", "body") and index.query("doc", "roquette")


def test_bm25_from_counted_texts_scores_as_bm25_from_the_texts() -> None:
    """Guides score a corpus once per plan from each text's length and counts of the words any
    guide asks by: the scores are exactly those of BM25 over the texts themselves."""
    from wikic.core.bm25 import BM25, counted, tokens

    texts = [
        "Fill the tank with water, then set the light schedule.",
        "The tank holds four litres; water lasts about two weeks.",
        "Prune basil from week six.",
        "",
        "Set up the garden: plant the pods and fill the tank.",
    ]
    queries = ["fill the water tank", "light schedule for basil", "nothing matches here"]
    wanted = frozenset(t for q in queries for t in tokens(q))
    index = BM25.of_counts([counted(t, wanted) for t in texts])
    for query in queries:
        assert index.scores(query) == BM25(texts).scores(query)
    assert any(s > 0 for s in index.scores(queries[0]))
