"""Evaluation: does the lookup find the sections that answer each question, does the answer state
what they say, and does it refuse the questions the knowledge base cannot answer?

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

Questions that carry ``answer_contains`` (strings any correct answer contains) are also scored on
the answer ``ask`` gives, built from the context the same ``mode`` gathers:

- answer_accuracy: the answer is not refused, holds every string, and cites an expected file;
- string_recall: share of the strings the answer holds (case-insensitive; a string that begins
  or ends with a digit only matches a whole number, so '10' is not found in '100' or '1.10');
- cited_gold: share of answers citing an expected file;
- field_stated: for questions naming an ``answer_field``, share of answers stating that field's
  value as an expected document's frontmatter gives it.

Questions that carry ``page`` (the wiki page, or a list of pages, that should answer them) are
also scored on routing: which wiki pages the lookup opened, in order (in ``index`` mode, the pages
``index.md`` and the pages' own text led to):

- page_routed@k: share of them with an expected page among the first k pages opened;
- page_routed@1: share whose first page opened is an expected one.

And every question with ``answer_contains`` is scored on whether a page it opened holds the answer:

- answer_on_page@k: share of them with a page among the first k opened whose text holds every
  string (a wiki that routes to a page stating the answer serves an agent that reads pages).

Refusals are the answer's. Every figure is also reported per question ``type``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..compile.searchindex.chunks import split_ref
from ..core.config import Fields, load_yaml
from ..core.errors import ConfigError
from .ask import Answer, Lookup
from .fuse import MODES

REPORT_VERSION = 2


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected: tuple[str, ...]
    type: str = ""
    answer_contains: tuple[str, ...] = ()
    answer_field: str = ""
    pages: tuple[str, ...] = ()  # wiki pages that should answer it (KB-relative)

    @property
    def answerable(self) -> bool:
        return bool(self.expected)

    @property
    def scores_answer(self) -> bool:
        return bool(self.answer_contains or self.answer_field)


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
        contains = item.get("answer_contains", [])
        answer_field = item.get("answer_field", "")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{path}: question '{qid}' has no question text")
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            raise ConfigError(
                f"{path}: question '{qid}': expected must be a list of 'source:id[#anchor]' strings"
            )
        if not isinstance(contains, list) or not all(isinstance(c, (str, int, float)) for c in contains):
            raise ConfigError(f"{path}: question '{qid}': answer_contains must be a list of strings")
        if not isinstance(answer_field, str):
            raise ConfigError(f"{path}: question '{qid}': answer_field must be a field name")
        pages = item.get("page", [])
        pages = [pages] if isinstance(pages, str) else pages
        if not isinstance(pages, list) or not all(isinstance(p, str) and p.strip() for p in pages):
            raise ConfigError(f"{path}: question '{qid}': page must be a wiki page path or a list of them")
        if qid in seen:
            raise ConfigError(f"{path}: two questions have id '{qid}'; ids must be unique")
        seen.add(qid)
        out.append(
            Question(
                qid,
                text.strip(),
                tuple(expected),
                str(item.get("type") or ""),
                tuple(str(c) for c in contains if str(c).strip()),
                answer_field.strip(),
                tuple(p.strip().removeprefix("./") for p in pages),
            )
        )
    return out


def contains(text: str, wanted: str) -> bool:
    """Whether ``text`` holds ``wanted``, ignoring case and runs of white space; a digit at either
    end of ``wanted`` must not continue into another digit or decimal ('10' ∉ '100', '1.10')."""
    pattern = r"\s+".join(re.escape(part) for part in wanted.split())
    if wanted[:1].isdigit():
        pattern = r"(?<![\d.,])" + pattern
    if wanted[-1:].isdigit():
        pattern += r"(?![\d]|[.,]\d)"
    return re.search(pattern, text, re.IGNORECASE) is not None


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
    type: str = ""
    answer: str = ""  # the answer's text, citations aside ('' when refused)
    cited: list[str] = field(default_factory=list)  # source:id#anchor of every citation
    answer_correct: bool | None = None  # None: the question carries nothing to score an answer by
    string_recall: float | None = None
    cited_gold: bool | None = None
    field_stated: bool | None = None
    missing: list[str] = field(default_factory=list)  # answer_contains strings the answer lacks
    pages: list[str] = field(default_factory=list)  # expected wiki pages
    opened: list[str] = field(default_factory=list)  # the wiki pages the lookup opened, in order
    page_routed: bool | None = None  # an expected page among the first k opened
    page_first: bool | None = None  # the first page opened is an expected one
    answer_on_page: bool | None = None  # a page among the first k opened holds every string

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    @property
    def problems(self) -> list[str]:
        """What went wrong, in words ('' nothing): a refusal missed or made, files not found, an
        answer lacking strings or not citing an expected file."""
        if not self.expected:
            return [] if self.refused else ["not refused"]
        if self.refused:
            return ["refused"]
        out = []
        if (self.file_recall or 0.0) < 1.0:
            out.append(f"recall {self.file_recall or 0.0:.2f}")
        if self.missing:
            out.append(f"answer lacks {self.missing}")
        if self.cited_gold is False:
            out.append("answer cites no expected file")
        if self.page_routed is False:
            out.append(f"routed to {self.opened[:3]}, not {self.pages}")
        return out

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
            **({"type": self.type} if self.type else {}),
            "answer": self.answer,
            "cited": self.cited,
            **(
                {
                    "answer_correct": self.answer_correct,
                    "string_recall": self.string_recall,
                    "cited_gold": self.cited_gold,
                    "missing": self.missing,
                }
                if self.answer_correct is not None
                else {}
            ),
            **({"field_stated": self.field_stated} if self.field_stated is not None else {}),
            "opened": self.opened,
            **(
                {"pages": self.pages, "page_routed": self.page_routed, "page_first": self.page_first}
                if self.pages
                else {}
            ),
            **({"answer_on_page": self.answer_on_page} if self.answer_on_page is not None else {}),
        }


@dataclass
class EvalReport:
    mode: str
    k: int
    cases: list[Case]
    notes: list[str] = field(default_factory=list)  # e.g. why matching by meaning is off

    @property
    def summary(self) -> dict:
        ms = sorted(c.ms for c in self.cases)
        return {
            "mode": self.mode,
            "k": self.k,
            **self.scores(self.cases),
            "latency_ms_p50": round(percentile(ms, 50), 2),
            "latency_ms_p95": round(percentile(ms, 95), 2),
        }

    def scores(self, cases: list[Case]) -> dict:
        """Retrieval, refusal and answer figures over ``cases`` (answer figures only when some
        question carries strings or a field to score its answer by)."""
        answerable = [c for c in cases if c.expected]
        unanswerable = [c for c in cases if not c.expected]
        scored = [c for c in answerable if c.answer_correct is not None]
        fields = [c for c in scored if c.field_stated is not None]
        out = {
            "questions": len(cases),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            f"file_recall@{self.k}": mean([c.file_recall or 0.0 for c in answerable]),
            f"section_recall@{self.k}": mean([c.section_recall or 0.0 for c in answerable]),
            "mrr": mean([c.rr or 0.0 for c in answerable]),
            "correct_refusal": mean([float(c.refused) for c in unanswerable]),
            "false_refusal": mean([float(c.refused) for c in answerable]),
        }
        if scored:
            out["answer_accuracy"] = mean([float(bool(c.answer_correct)) for c in scored])
            out["string_recall"] = mean([c.string_recall or 0.0 for c in scored])
            out["cited_gold"] = mean([float(bool(c.cited_gold)) for c in scored])
        if fields:
            out["field_stated"] = mean([float(bool(c.field_stated)) for c in fields])
        routed = [c for c in cases if c.page_routed is not None]
        if routed:
            out[f"page_routed@{self.k}"] = mean([float(bool(c.page_routed)) for c in routed])
            out["page_routed@1"] = mean([float(bool(c.page_first)) for c in routed])
        on_page = [c for c in cases if c.answer_on_page is not None]
        if on_page and any(c.opened for c in cases):
            out[f"answer_on_page@{self.k}"] = mean([float(bool(c.answer_on_page)) for c in on_page])
        return out

    @property
    def by_type(self) -> dict[str, dict]:
        """The same figures per question type (questions without one are 'untyped')."""
        types: dict[str, list[Case]] = {}
        for c in self.cases:
            types.setdefault(c.type or "untyped", []).append(c)
        if len(types) < 2:
            return {}
        return {t: self.scores(cs) for t, cs in sorted(types.items())}

    def metric(self, name: str) -> float:
        value = self.summary.get(f"{name}@{self.k}", self.summary.get(name))
        return float(value or 0.0)

    def as_dict(self) -> dict:
        return {
            "schema_version": REPORT_VERSION,
            "summary": self.summary,
            "notes": self.notes,
            "by_type": self.by_type,
            "cases": [c.as_dict() for c in self.cases],
        }


def mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


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


def score_answer(q: Question, answer: Answer, resolver: RefResolver, lookup: Lookup) -> dict:
    """Answer figures for one question (see the module docstring); {} when it has none to score."""
    if not q.expected or not q.scores_answer:
        return {}
    text = "" if answer.refused else answer.plain
    missing = [s for s in q.answer_contains if not contains(text, s)]
    want = {got[0] for got in map(resolver.resolve, q.expected) if got}
    cited_gold = any(split_ref(c)[0] in want for s in answer.sentences for c in s.cites)
    out = {
        "missing": missing,
        "string_recall": 1 - len(missing) / len(q.answer_contains) if q.answer_contains else 1.0,
        "cited_gold": cited_gold,
        "answer_correct": not answer.refused and not missing and cited_gold,
    }
    if q.answer_field:
        values = [lookup.docs[p].meta.get(q.answer_field) for p in sorted(want) if p in lookup.docs]
        values = [str(v) for v in values if v not in (None, "", [])]
        out["field_stated"] = bool(values) and all(contains(text, v) for v in values)
    return out


def score_pages(q: Question, opened: list[str], root: Path, k: int) -> dict:
    """Routing figures for one question (see the module docstring)."""
    out: dict = {"opened": opened[:k]}
    if q.pages:
        out |= {"pages": list(q.pages), "page_routed": bool(set(q.pages) & set(opened[:k]))}
        out["page_first"] = bool(opened) and opened[0] in q.pages
    if q.expected and q.answer_contains:
        texts = (_page_text(root, p) for p in opened[:k])
        out["answer_on_page"] = any(all(contains(t, s) for s in q.answer_contains) for t in texts)
    return out


def _page_text(root: Path, page: str) -> str:
    """A wiki page's text with its Markdown links reduced to their labels ('' when unreadable)."""
    try:
        text = (root / page.partition("#")[0]).read_text("utf-8")
    except OSError:
        return ""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)


def run_eval(
    root: Path,
    questions: list[Question],
    mode: str = "index",
    k: int = 5,
    lookup: Lookup | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Run every question through the lookup of ``mode``, score the first ``k`` refs, and score the
    answer given from that same context."""
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
            answer = lookup.answer(q.question, mode, found=found)
            ms = (time.perf_counter() - started) * 1000
            fr, sr, rr, unresolved = score_case(q, found.refs, resolver, k)
            cases.append(
                Case(
                    q.id,
                    q.question,
                    list(q.expected),
                    [lookup.ref_label(r) for r in found.refs[:k]],
                    answer.refused,
                    found.evidence,
                    fr,
                    sr,
                    rr,
                    ms,
                    unresolved,
                    q.type,
                    "" if answer.refused else answer.plain,
                    [lookup.ref_label(c) for s in answer.sentences for c in s.cites],
                    **score_answer(q, answer, resolver, lookup),
                    **score_pages(q, list(found.pages), root, k),
                )
            )
            if progress:
                progress(n, len(questions))
        return EvalReport(mode, k, cases, [n for n in [lookup.index.semantic_note] if n])
    finally:
        if own:
            lookup.close()


__all__ = ["EvalReport", "Question", "load_questions", "run_eval"]
