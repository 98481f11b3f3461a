"""``wikic check``: lint the whole knowledge base.

The orchestrator ``check`` gathers everything once (layer-1 documents, the plan, the wiki pages,
layer-0 integrity) and then runs each rule as a plain function over that state. A rule yields
``Finding`` values; nothing here prints or writes. Rules and their severities are listed in
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
from pathlib import Path

from ..compile.coverage import Coverage, of_pages
from ..core.fsutil import require_kb
from . import cache
from .cited import rule_citations
from .contradictions import quantities, rule_contradictions
from .findings import ERROR, RULES, WARNING, CheckReport, Finding, format_report
from .integrity import rule_hand_edited, rule_layer0, rule_stale
from .loss import rule_shrink, rule_symlinks, rule_unreadable
from .markup import rule_instructions, rule_markup
from .pages import Statement, WikiPage, read_page, wiki_pages
from .placement import rule_duplicates, rule_uncovered
from .reachability import rule_links, rule_reachability
from .state import KB, gather
from .supersedes import rule_versions

RULE_FUNCTIONS = (
    rule_links,
    rule_citations,
    rule_reachability,
    rule_stale,
    rule_uncovered,
    rule_duplicates,
    rule_contradictions,
    rule_layer0,
    rule_hand_edited,
    rule_versions,
    rule_markup,
    rule_instructions,
    rule_shrink,
    rule_unreadable,
    rule_symlinks,
)


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
    kb = gather(root, full)
    report = CheckReport(pages=len(kb.content_pages), sources=len(kb.docs))
    report.statements = sum(len(p.statements) for p in kb.content_pages)
    for rule in RULE_FUNCTIONS:
        report.findings.extend(rule(kb))
    if kb.compiled_coverage is not None:  # the wiki is as the last compile measured it
        report.coverage = Coverage.from_dict(kb.compiled_coverage)
    elif kb.plan is not None:
        report.coverage = of_pages(kb.docs.values(), kb.content_pages, kb.plan.reasons, kb.superseded_by)
    report.findings.sort(key=lambda f: (f.severity != ERROR, f.path, f.line or 0, f.rule, f.message))
    return report


__all__ = [
    "ERROR",
    "KB",
    "RULES",
    "RULE_FUNCTIONS",
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
    "wiki_pages",
]
