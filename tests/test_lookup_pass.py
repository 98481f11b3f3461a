"""A question reads the search index in one pass: ``SearchIndex.retrieve`` reads its term counts
and every list its mode fuses, and nothing after it (fusing, judging, composing) reads the index
again. The statements that read the FTS5 tables are counted on the connection itself, and so are
those of its dense lists (search.semantic), on the dense reader's own connection: per kind of
chunk, whether its vectors changed (their packed masks too, the first time) and the vectors of its
candidates; then one statement for the chunks of all of them (and, once per index, whether it
matches by meaning at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikic.lookup.ask import Lookup
from wikic.lookup.dense import DenseReader
from wikic.lookup.eval import load_questions, run_eval
from wikic.lookup.fuse import MODES, PLANS
from wikic.lookup.search import SearchIndex

REPO = Path(__file__).resolve().parents[1]
# the example KB's questions, and words no source uses: run together, derived, unknown
QUESTIONS = [q.question for q in load_questions(REPO / "examples" / "questions.yaml")] + [
    "Does a fulltank last a week?",
    "My pods have a white crusty layer on them, what is it?",
    "Is the zorblax firmware compatible with Grove 6?",
]
MOST = 3  # statements a pass issues: the counts, those of unknown words' alternatives, the lists
DENSE_KINDS = 2  # a search or index mode question's dense lists: sections and documents
DENSE_MOST = 3 * DENSE_KINDS + 1  # see above: per kind, its generation, masks (first pass only), candidates


class Reads:
    """The statements reading the FTS5 index, each with the pass it ran in (0: outside any)."""

    def __init__(self, index: SearchIndex, monkeypatch: pytest.MonkeyPatch):
        self.statements: list[int] = []
        self.dense: list[int] = []  # statements reading the vectors, or chunks by their vectors' keys
        self.state: list[int] = []
        self.passes = 0
        self._in_pass = False
        index.conn.set_trace_callback(self._note)
        opened = DenseReader.conn

        def traced(reader: DenseReader):
            conn = opened(reader)
            conn.set_trace_callback(self._note)
            return conn

        monkeypatch.setattr(DenseReader, "conn", traced)
        retrieve = index.retrieve

        def counted(*args, **kwargs):
            self.passes += 1
            self._in_pass = True
            try:
                return retrieve(*args, **kwargs)
            finally:
                self._in_pass = False

        monkeypatch.setattr(index, "retrieve", counted)

    def _note(self, sql: str) -> None:
        where = self.passes if self._in_pass else 0
        if "MATCH" in sql and not sql.startswith("--"):  # '--': FTS5's own reads of its tables
            self.statements.append(where)
        elif "vectors_" in sql or "c.vkey" in sql:
            self.dense.append(where)
        elif "key='dense'" in sql:  # whether the index matches by meaning at all: once per index
            self.state.append(where)

    def clear(self) -> None:
        self.statements.clear()
        self.dense.clear()
        self.state.clear()
        self.passes = 0

    def assert_one_pass_each(self, questions: int) -> None:
        assert self.passes == questions
        assert 0 not in self.statements, "the index was read outside a question's pass"
        per_pass = [self.statements.count(n) for n in range(1, questions + 1)]
        assert all(2 <= n <= MOST for n in per_pass), per_pass
        assert 0 not in self.dense + self.state, "the vectors were read outside a question's pass"
        assert all(self.dense.count(n) <= DENSE_MOST for n in range(1, questions + 1))


@pytest.mark.parametrize("mode", MODES)
def test_ask_reads_the_index_in_one_pass_per_question(example_kb, monkeypatch, mode):
    lookup = Lookup(example_kb)
    reads = Reads(lookup.index, monkeypatch)
    try:
        for question in QUESTIONS:
            reads.clear()
            answer = lookup.answer(question, mode)
            reads.assert_one_pass_each(1)
            assert answer.text
            # the dense lists are read beside the BM25 lists (none in raw mode), and fused only
            # when the BM25 probe is not a strong signal
            assert bool(reads.dense) == (mode != "raw")
            fused = any(
                kind.startswith("dense:") for kind, _ in lookup.index.retrieve(question, PLANS[mode]).lists
            )
            assert fused == (mode != "raw" and not answer_strong(lookup, question))
    finally:
        lookup.close()


def answer_strong(lookup: Lookup, question: str) -> bool:
    return lookup.index.retrieve(question, PLANS["raw"]).strong


def test_switched_off_a_pass_reads_no_vectors(example_kb, monkeypatch):
    with (example_kb / "schema" / "wiki.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\nsearch:\n  semantic: false\n")
    lookup = Lookup(example_kb)
    reads = Reads(lookup.index, monkeypatch)
    try:
        for mode in MODES:
            for question in QUESTIONS:
                lookup.answer(question, mode)
        assert lookup.index.search(QUESTIONS[0]).hits
    finally:
        lookup.close()
    assert reads.dense == [] and len(reads.state) == 1
    assert reads.passes == len(MODES) * len(QUESTIONS) + 1


def test_eval_and_search_read_the_index_in_one_pass_per_question(example_kb, monkeypatch):
    lookup = Lookup(example_kb)
    reads = Reads(lookup.index, monkeypatch)
    questions = load_questions(REPO / "examples" / "questions.yaml")
    try:
        for mode in MODES:
            reads.clear()
            run_eval(example_kb, questions, mode, lookup=lookup)  # a retrieval, then its answer
            reads.assert_one_pass_each(len(questions))
        for question in QUESTIONS:
            reads.clear()
            assert lookup.index.search(question, k=5).hits
            reads.assert_one_pass_each(1)
    finally:
        lookup.close()


def test_an_expander_adds_one_read_for_its_rewrites(example_kb, monkeypatch):
    lookup = Lookup(example_kb)
    reads = Reads(lookup.index, monkeypatch)
    asked: list[str] = []

    def expander(question: str) -> list[str]:
        asked.append(question)
        return ["pump cleaning", "filter screen"]

    try:
        found = lookup.retrieve("cleaning", "search", expander=expander)
        result = lookup.index.search("cleaning", expander=expander)
    finally:
        lookup.close()
    assert asked == ["cleaning", "cleaning"] and result.expanded == ["pump cleaning", "filter screen"]
    assert found.candidates.expanded == ("pump cleaning", "filter screen")
    # each pass, then one statement outside it for both rewrites' lists
    assert reads.passes == 2 and reads.statements.count(0) == 2


def test_counts_and_lists_survive_a_term_the_index_cannot_match(example_kb):
    with SearchIndex(example_kb) as index:
        index.update()
        counts = index.counts({("pump", False): -1, ("a\x00b", False): -1, ("clea", True): 1})
        lists = index.ranked([("source", ["pump"], 5), ("source", ["a\x00b"], 5), ("page", [], 5)])
        assert counts[("pump", False)] == index.doc_freq("source", "pump") > 1
        assert counts[("a\x00b", False)] == 0 and counts[("clea", True)] == 1
        assert [h.path for h in lists[0].hits()] == [h.path for h in index.query("source", "pump", 5)]
        assert not lists[1].hits() and not lists[2].hits()


def test_a_search_on_a_settled_index_loads_no_fact_code(example_kb):
    """Fields' facts and plural stems weigh an answer; a search, started once per query by an
    agent, needs neither, and pays for no import it does not use."""
    import os
    import subprocess
    import sys

    from wikic.cli import main as entry

    old = 1_000_000_000  # every file long settled, so none is re-read
    for path in example_kb.rglob("*"):
        os.utime(path, (old, old))
    entry.quick(["--root", str(example_kb), "search", "warm up"])  # builds the index
    probe = (
        "import sys\nfrom wikic.cli import main as entry\n"
        f"entry.quick(['--root', {str(example_kb)!r}, 'search', 'How long does a full tank last?'])\n"
        "print('wikic.lookup.search' in sys.modules, 'wikic.core.facts' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.rstrip().splitlines()[-1] == "True False"
