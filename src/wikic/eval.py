"""Retrieval evaluation: does the lookup find the sections that answer each question, and does it
refuse the questions the knowledge base cannot answer?

Questions follow DESIGN §8: ``expected`` lists ``source:record-id[#heading-anchor]`` refs, where the
record id may be a layer-1 document's frontmatter ``id``, its key or its file name; ``[]`` marks
a question the KB cannot answer. Per question the lookup returns ranked section refs; the first
``k`` of them are scored:

- file_recall@k: share of the expected documents among the files of the first k refs;
- section_recall@k: share of the expected refs matched exactly (a ref without an anchor matches
  any section of its document);
- MRR: 1 / rank of the first ref in an expected document (0 when none is in the first k);
- correct_refusal: share of unanswerable questions refused;
- false_refusal: share of answerable questions refused;
- latency p50/p95 in milliseconds per question.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .ask import MODES, Lookup, split_ref
from .config import Fields, load_yaml
from .errors import ConfigError

REPORT_VERSION = 1


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected: tuple[str, ...]

    @property
    def answerable(self) -> bool:
        return bool(self.expected)


def load_questions(path: Path) -> list[Question]:
    data = load_yaml(path) or {}
    if isinstance(data, list):
        data = {"questions": data}
    top = Fields(data, str(path))
    items = top.get("questions", list, required=True)
    out, seen = [], set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"{path}: questions[{i}] must be a mapping with id, question and expected")
        qid = str(item.get("id") or f"q{i + 1:03d}")
        text = item.get("question")
        expected = item.get("expected", [])
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{path}: question '{qid}' has no question text")
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            raise ConfigError(
                f"{path}: question '{qid}': expected must be a list of 'source:id[#anchor]' strings"
            )
        if qid in seen:
            raise ConfigError(f"{path}: two questions have id '{qid}'; ids must be unique")
        seen.add(qid)
        out.append(Question(qid, text.strip(), tuple(expected)))
    return out


class RefResolver:
    """Maps ``source:record-id[#anchor]`` (by id, key or file name) to a layer-1 ``path#anchor``."""

    def __init__(self, lookup: Lookup):
        self.by_name: dict[str, str] = {}
        for doc in lookup.docs.values():
            for ref in doc.refs:
                self.by_name.setdefault(ref, doc.path)

    def resolve(self, ref: str) -> tuple[str, str] | None:
        base, _, anchor = ref.partition("#")
        path = self.by_name.get(base.strip())
        return (path, anchor.strip()) if path else None


@dataclass
class Case:
    id: str
    question: str
    expected: list[str]
    retrieved: list[str]
    refused: bool
    evidence: float
    file_recall: float | None
    section_recall: float | None
    rr: float | None
    ms: float
    unresolved: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        if not self.expected:
            return not self.refused
        return (self.file_recall or 0.0) < 1.0 or self.refused

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "question": self.question,
            "expected": self.expected,
            "retrieved": self.retrieved,
            "refused": self.refused,
            "evidence": round(self.evidence, 4),
            "file_recall": self.file_recall,
            "section_recall": self.section_recall,
            "reciprocal_rank": self.rr,
            "latency_ms": round(self.ms, 2),
            **({"unresolved": self.unresolved} if self.unresolved else {}),
        }


@dataclass
class EvalReport:
    mode: str
    k: int
    cases: list[Case]

    @property
    def summary(self) -> dict:
        answerable = [c for c in self.cases if c.expected]
        unanswerable = [c for c in self.cases if not c.expected]
        ms = sorted(c.ms for c in self.cases)

        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 4) if xs else None

        return {
            "mode": self.mode,
            "k": self.k,
            "questions": len(self.cases),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            f"file_recall@{self.k}": mean([c.file_recall or 0.0 for c in answerable]),
            f"section_recall@{self.k}": mean([c.section_recall or 0.0 for c in answerable]),
            "mrr": mean([c.rr or 0.0 for c in answerable]),
            "correct_refusal": mean([1.0 if c.refused else 0.0 for c in unanswerable]),
            "false_refusal": mean([1.0 if c.refused else 0.0 for c in answerable]),
            "latency_ms_p50": round(percentile(ms, 50), 2),
            "latency_ms_p95": round(percentile(ms, 95), 2),
        }

    def metric(self, name: str) -> float:
        value = self.summary.get(f"{name}@{self.k}", self.summary.get(name))
        return float(value or 0.0)

    def as_dict(self) -> dict:
        return {
            "schema_version": REPORT_VERSION,
            "summary": self.summary,
            "cases": [c.as_dict() for c in self.cases],
        }


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    i = (len(sorted_values) - 1) * p / 100
    lo, hi = int(i), min(int(i) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (i - lo)


def score_case(q: Question, refs: list[str], resolver: RefResolver, k: int) -> tuple:
    """(file_recall, section_recall, reciprocal rank, unresolved expected refs) for one question."""
    if not q.expected:
        return None, None, None, []
    want, unresolved = [], []
    for e in q.expected:
        got = resolver.resolve(e)
        if got is None:
            unresolved.append(e)
        else:
            want.append(got)
    top = [split_ref(r) for r in refs[:k]]
    files = [p for p, _ in top]
    want_files = {p for p, _ in want}
    file_recall = len(want_files & set(files)) / len(want_files) if want_files else 0.0
    hits = sum(1 for p, a in want if (p, a) in top or (not a and p in files))
    section_recall = hits / len(want) if want else 0.0
    rr = next((1.0 / i for i, p in enumerate(files, 1) if p in want_files), 0.0)
    return file_recall, section_recall, rr, unresolved


def run_eval(
    root: Path,
    questions: list[Question],
    mode: str = "index",
    k: int = 5,
    lookup: Lookup | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Run every question through the lookup of ``mode`` and score the first ``k`` refs."""
    if mode not in MODES:
        raise ConfigError(f"--mode {mode}: use one of {', '.join(MODES)}")
    own = lookup is None
    lookup = lookup or Lookup(root)
    try:
        resolver = RefResolver(lookup)
        cases = []
        for n, q in enumerate(questions, 1):
            started = time.perf_counter()
            found = lookup.retrieve(q.question, mode, k=max(k, 10))
            ms = (time.perf_counter() - started) * 1000
            fr, sr, rr, unresolved = score_case(q, found.refs, resolver, k)
            cases.append(
                Case(
                    q.id,
                    q.question,
                    list(q.expected),
                    [lookup.ref_label(r) for r in found.refs[:k]],
                    found.refused,
                    found.evidence,
                    fr,
                    sr,
                    rr,
                    ms,
                    unresolved,
                )
            )
            if progress:
                progress(n, len(questions))
        return EvalReport(mode, k, cases)
    finally:
        if own:
            lookup.close()


__all__ = ["EvalReport", "Question", "load_questions", "run_eval"]
