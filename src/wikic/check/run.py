"""``wikic check``: lint the whole knowledge base.

The orchestrator ``check`` gathers the state once (``state.gather``: what it keeps of layer 1, the
plan, each page's frontmatter), then walks the pages one at a time through the rules that read a
page (``PAGE_RULES``), keeping what the rules over the whole KB read of each (``KB.note``), and
then runs those (``KB_RULES``): a KB's texts are never all held at once. A rule is a plain function
that yields ``Finding`` values; nothing here prints or writes. Rules and their severities are listed in
``findings.RULES``: errors are problems a compiled KB never has (exit 1), warnings are worth a look.

One module per rule family:

- ``links``: broken-link, index-dangling, orphan-page, unindexed-page, dead-end-page,
  index-only-page;
- ``citations``: uncited-sentence, unsupported-citation (also a fact restated with another value
  than its field), superseded-citation;
- ``integrity``: stale-page, layer0-tampered, hand-edited-generated;
- ``coverage``: uncovered-source, duplicate-page;
- ``contradictions``: contradiction (fields, numbers, and the tools or variants sources name);
- ``versions``: unresolved-supersedes;
- ``safety``: unsafe-markup, suspicious-instruction;
- ``loss``: unreadable-source, symlink, wiki-shrank.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from ..compile.coverage import Coverage, cited_texts, measure
from ..core.fsutil import require_kb
from . import cache
from .cited import rule_citations
from .contradictions import Claims, quantities, rule_contradictions
from .findings import ERROR, RULES, WARNING, CheckReport, Finding, format_report
from .integrity import rule_hand_edited, rule_layer0, rule_stale
from .loss import rule_shrink, rule_symlinks, rule_unreadable
from .markup import rule_instructions, rule_markup
from .pages import Statement, WikiPage, read_page, wiki_pages
from .placement import rule_duplicates, rule_uncovered
from .reachability import rule_links, rule_reachability
from .state import KB, gather
from .supersedes import rule_versions

PAGE_RULES = (rule_links, rule_citations, rule_markup, rule_instructions)  # (kb, page): a page at a time
KB_RULES = (
    rule_reachability,
    rule_stale,
    rule_uncovered,
    rule_duplicates,
    rule_layer0,
    rule_hand_edited,
    rule_versions,
    rule_shrink,
    rule_unreadable,
    rule_symlinks,
)  # (kb): the whole KB, from what gather and the walk over the pages kept


def check(root: Path, full: bool = False) -> CheckReport:
    """Run every rule over the KB at ``root``; when it reads exactly what the last check read, the
    findings are that check's (see ``cache``), unless ``full``."""
    started = time.perf_counter()
    require_kb(root)
    read = cache.kb_digest(root)
    report = None if full else cache.load(root, read)
    if report is None:
        report = run_rules(root, full)
        cache.save(root, read, report)
    report.seconds = time.perf_counter() - started
    return report


def run_rules(root: Path, full: bool = False) -> CheckReport:
    """Every rule over the KB at ``root``, findings errors first (``full``: see ``gather``)."""
    claims = Claims()
    kb = gather(root, full, readers=(claims.add,))
    report = CheckReport(pages=len(kb.content_pages), sources=len(kb.docs))
    report.findings.extend(walk_pages(kb))
    report.statements = kb.statements
    for rule in KB_RULES:
        report.findings.extend(rule(kb))
    report.findings.extend(rule_contradictions(kb, claims))
    compiled = kb.compiled_coverage()
    if compiled is not None:  # the wiki is as the last compile measured it
        report.coverage = Coverage.from_dict(compiled)
    elif kb.plan is not None:
        cited = cited_texts(kb.cited_texts())
        report.coverage = measure(kb.texts.values(), cited, kb.plan.reasons, kb.superseded_by)
    report.findings.sort(key=lambda f: (f.severity != ERROR, f.path, f.line or 0, f.rule, f.message))
    return report


def walk_pages(kb: KB) -> Iterator[Finding]:
    """The findings of ``PAGE_RULES`` on each page, read one at a time and let go after."""
    for page in kb.read_pages():
        kb.note(page)
        for rule in PAGE_RULES:
            yield from rule(kb, page)
        kb.verifier.forget()  # what was worked out of the texts this page cites


__all__ = [
    "ERROR",
    "Claims",
    "KB",
    "KB_RULES",
    "PAGE_RULES",
    "RULES",
    "WARNING",
    "CheckReport",
    "Finding",
    "Statement",
    "WikiPage",
    "check",
    "format_report",
    "gather",
    "quantities",
    "read_page",
    "rule_contradictions",
    "wiki_pages",
]
