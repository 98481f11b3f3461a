"""``wikic tune-index``: improve ``index.md`` lines from the questions the lookup got wrong.

1. run the eval (the agent protocol through ``index.md``) and keep the cases with file recall < 1;
2. for every page that cites an expected source, read its text, its index line and the failed
   questions;
3. write enhanced keywords (and, with an LLM backend, a summary): offline, the words found both in
   the page and in the failed questions, plus the questions' own wording as a search alias;
4. store them in ``schema/index-overrides.yaml`` (reviewable; compile applies it to every
   ``index.md`` it writes) and rebuild ``index.md`` now;
5. re-run the eval and report what changed, with the metrics before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import frontmatter
import yaml

from ..compile.citations import stem
from ..compile.draft import parse_citations
from ..compile.index import (
    OVERRIDES,
    Entry,
    apply_overrides,
    load_overrides,
    render_index,
    source_counts,
    write_index,
)
from ..compile.librarian.model import ModelRequest, Tool
from ..compile.schema import load_wiki_schema
from ..core.fsutil import atomic_write, kb_lock
from ..transform.layer1 import layer1_paths
from .ask import Lookup
from .eval import EvalReport, Question, RefResolver, run_eval
from .text import query_terms

MAX_KEYWORDS = 12  # added per page, on top of what the librarian wrote
ALIAS_WORDS = 8


@dataclass
class PageChange:
    path: str
    questions: list[str]
    added: list[str]
    summary: str = ""


@dataclass
class TuneReport:
    before: EvalReport
    after: EvalReport | None
    changes: list[PageChange] = field(default_factory=list)
    index_changed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "schema_version": 1,
            "before": self.before.summary,
            "after": self.after.summary if self.after else None,
            "changes": [
                {"page": c.path, "questions": c.questions, "keywords_added": c.added, "summary": c.summary}
                for c in self.changes
            ],
            "index_changed": self.index_changed,
        }


def wiki_entries(root: Path) -> list[Entry]:
    """Index entries of the pages on disk, from their frontmatter (as compile writes them)."""
    from ..compile.state import managed_pages

    out = []
    for path, meta in managed_pages(root).items():
        out.append(
            Entry(
                path,
                str(meta.get("type", "topic")),
                str(meta.get("title", Path(path).stem)),
                str(meta.get("summary", "")),
                tuple(str(k) for k in meta.get("keywords") or []),
            )
        )
    return out


def rebuild_index(root: Path) -> list[str]:
    """Re-render ``index.md`` from the pages and the overrides; returns the files that changed."""
    schema = load_wiki_schema(root)
    entries = apply_overrides(wiki_entries(root), load_overrides(root))
    sources = source_counts(layer1_paths(root))
    return write_index(root, render_index(entries, schema.index_budget, sources))


def pages_citing(root: Path) -> dict[str, dict[str, set[str]]]:
    """{layer-1 path: {wiki page: {anchors cited}}}."""
    from ..compile.state import managed_pages

    out: dict[str, dict[str, set[str]]] = {}
    for page in managed_pages(root):
        body = frontmatter.loads((root / page).read_text("utf-8")).content
        for line in body.split("\n"):
            for c in parse_citations(line, page):
                out.setdefault(c.path, {}).setdefault(page, set()).add(c.anchor)
    return out


def page_vocab(root: Path, page: str) -> set[str]:
    from ..compile.draft import strip_citations
    from ..core.markdown import words

    body = frontmatter.loads((root / page).read_text("utf-8")).content
    return {stem(w) for line in body.split("\n") for w in words(strip_citations(line))}


def offline_keywords(question: str, vocab: set[str]) -> list[str]:
    """Words of the question that the page also uses, then the question's wording as an alias."""
    terms = [t for t in query_terms(question) if t.isalpha() or not t.isascii()]
    shared = [t for t in terms if stem(t) in vocab]
    alias = " ".join(terms[:ALIAS_WORDS])
    return list(dict.fromkeys([*shared, alias] if alias else shared))


KEYWORD_TOOL = Tool(
    "index_entry",
    "An improved index line for one wiki page: a one-sentence summary and search keywords.",
    {
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 15},
        },
        "required": ["summary", "keywords"],
    },
)


def llm_entry(model, page_text: str, line: str, questions: list[str]) -> tuple[str, list[str]]:
    qs = "\n".join(f"- {q}" for q in questions)
    response = model.complete(
        ModelRequest(
            system=(
                "You improve one line of a wiki index so that an agent reading the index picks this page "
                "for questions like the ones given. Use only words and facts from the page.",
            ),
            user=f"<page>\n{page_text[:12000]}\n</page>\n<index_line>{line}</index_line>\n<questions>\n{qs}\n</questions>",
            tools=(KEYWORD_TOOL,),
            tool_name=KEYWORD_TOOL.name,
            max_tokens=500,
        )
    )
    args = response.tool_input or {}
    kws = [str(k).strip() for k in args.get("keywords") or [] if str(k).strip()]
    return " ".join(str(args.get("summary", "")).split()), kws


def tune_index(
    root: Path, questions: list[Question], k: int = 5, mode: str = "index", model=None
) -> TuneReport:
    lookup = Lookup(root)
    try:
        before = run_eval(root, questions, mode, k, lookup=lookup)
    finally:
        lookup.close()
    failed = [c for c in before.cases if c.expected and (c.file_recall or 0.0) < 1.0]
    report = TuneReport(before, None)
    if not failed:
        report.after = before
        return report

    lookup = Lookup(root, refresh=False)
    resolver = RefResolver(lookup)
    lookup.close()
    citing = pages_citing(root)
    wanted: dict[str, list[str]] = {}  # page → failed question ids
    texts = {q.id: q.question for q in questions}
    for case in failed:
        for ref in case.expected:
            got = resolver.resolve(ref)
            if got is None:
                continue
            path, anchor = got
            pages = citing.get(path, {})
            # the pages citing the expected section itself, else any page citing its document
            best = [p for p, anchors in pages.items() if anchor in anchors] or list(pages)
            for page in sorted(best)[:2]:
                wanted.setdefault(page, [])
                if case.id not in wanted[page]:
                    wanted[page].append(case.id)

    overrides_path = root / OVERRIDES
    with kb_lock(root):
        data = yaml.safe_load(overrides_path.read_text("utf-8")) if overrides_path.exists() else None
        data = data or {}
        pages_data = data.setdefault("pages", {})
        current = {e.path: e for e in wiki_entries(root)}
        for page, qids in sorted(wanted.items()):
            old = pages_data.get(page) or {}
            have = set(old.get("keywords") or []) | set(current[page].keywords if page in current else ())
            summary = old.get("summary", "")
            if model is not None:
                text = (root / page).read_text("utf-8")
                line = current[page].summary if page in current else ""
                summary, new = llm_entry(model, text, line, [texts[q] for q in qids])
            else:
                vocab = page_vocab(root, page)
                new = [kw for q in qids for kw in offline_keywords(texts[q], vocab)]
            added = [kw for kw in dict.fromkeys(new) if kw not in have][:MAX_KEYWORDS]
            if not added and not summary:
                continue
            entry = {
                "summary": summary,
                "keywords": [*(old.get("keywords") or []), *added],
                "questions": sorted(set(old.get("questions") or []) | set(qids)),
            }
            pages_data[page] = entry
            report.changes.append(PageChange(page, qids, added, summary))
        header = (
            "# Index enhancements written by `wikic tune-index` from failed eval questions.\n"
            "# Reviewed like code; `wikic compile` applies them to every index.md it writes.\n"
            "# pages: {wiki page: {summary: replaces the librarian's ('' keeps it), keywords: added,\n"
            "#         questions: the eval questions that motivated them}}\n"
        )
        body = yaml.safe_dump(
            {"pages": dict(sorted(pages_data.items()))}, sort_keys=False, allow_unicode=True, width=100
        )
        atomic_write(overrides_path, header + body)
        report.index_changed = rebuild_index(root)

    lookup = Lookup(root)
    try:
        report.after = run_eval(root, questions, mode, k, lookup=lookup)
    finally:
        lookup.close()
    return report


__all__ = ["TuneReport", "rebuild_index", "tune_index"]
