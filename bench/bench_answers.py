"""Answer figures on the FarmBot dev questions (and any question file named in
``WIKIC_EXTRA_QUESTIONS``, ':'-separated), compiled offline: ``wikic eval`` in its three modes,
next to a baseline measured in the same run, the full text of raw BM25's first section taken as
the answer (what plain RAG would hand a reader)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import farmbot_kb  # noqa: E402

from wikic.compile.searchindex.chunks import split_ref  # noqa: E402
from wikic.lookup.ask import Lookup  # noqa: E402
from wikic.lookup.eval import RefResolver, contains, load_questions, run_eval  # noqa: E402
from wikic.lookup.evidence import section_text  # noqa: E402

COLUMNS = (
    "answer_accuracy",
    "string_recall",
    "cited_gold",
    "file_recall@5",
    "correct_refusal",
    "false_refusal",
)


def top_section_accuracy(lookup: Lookup, questions) -> float:
    """Share of answerable questions whose strings are all in raw BM25's first section (whole)."""
    resolver = RefResolver(lookup)
    scored = [q for q in questions if q.expected and q.answer_contains]
    hits = 0
    for q in scored:
        refs = lookup.retrieve(q.question, "raw", k=1).refs
        if not refs:
            continue
        text = section_text(lookup.docs, refs[0])
        gold = {got[0] for got in map(resolver.resolve, q.expected) if got}
        hits += split_ref(refs[0])[0] in gold and all(contains(text, s) for s in q.answer_contains)
    return hits / len(scored) if scored else 0.0


def main() -> int:
    if not farmbot_kb.available():
        print("FarmBot corpus not found in ../shared; skipping")
        return 0
    files = farmbot_kb.question_files()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "farmbot"
        farmbot_kb.build_compiled(root)
        lookup = Lookup(root)
        try:
            for path in files:
                questions = load_questions(path)
                print(f"\n{path.name}: {len(questions)} questions")
                print(f"{'mode':8}" + "".join(f"{c:>17}" for c in COLUMNS))
                for mode in ("raw", "search", "index"):
                    s = run_eval(root, questions, mode, 5, lookup=lookup).summary
                    print(
                        f"{mode:8}"
                        + "".join(f"{s.get(c) if s.get(c) is not None else '—':>17}" for c in COLUMNS)
                    )
                base = top_section_accuracy(lookup, questions)
                print(f"baseline: raw BM25's first section, whole, as the answer: accuracy {base:.3f}")
        finally:
            lookup.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
