"""Links and reachability: broken-link, index-dangling, orphan-page, unindexed-page."""

from __future__ import annotations

from collections.abc import Iterator

from ..compile.draft import Citation
from ..transform.layer1 import LAYER1
from .findings import Finding, finding
from .pages import WIKI, WikiPage
from .state import KB


def rule_links(kb: KB, page: WikiPage) -> Iterator[Finding]:
    """broken-link for pages and citations; index-dangling for index lines to missing pages."""
    for link in page.links:
        if link.is_citation or link.target.startswith(LAYER1 + "/"):
            problem = kb.verifier.resolve(Citation(link.target, link.anchor))
            if problem:
                yield finding("broken-link", page.path, link.line, f"{problem}; fix or recompile the page")
            continue
        if not link.target:
            if link.anchor and link.anchor not in page.anchors:
                yield finding("broken-link", page.path, link.line, f"#{link.anchor} is not a heading here")
            continue
        target = kb.page_by_path.get(link.target)
        if target is None and not (kb.root / link.target).exists():
            if page.is_index and link.target.startswith(WIKI + "/"):
                yield finding(
                    "index-dangling",
                    page.path,
                    link.line,
                    f"links {link.target}, which does not exist; run 'wikic compile' to rebuild the index",
                )
            else:
                yield finding("broken-link", page.path, link.line, f"links {link.href}: no such file")
            continue
        if link.anchor and target is not None and link.anchor not in target.anchors:
            yield finding(
                "broken-link",
                page.path,
                link.line,
                f"links {link.href}: #{link.anchor} is not a heading of {link.target}",
            )


def rule_reachability(kb: KB) -> Iterator[Finding]:
    """orphan-page (no inbound link, not indexed), unindexed-page, dead-end-page (links to no
    other page) and index-only-page (only the index links to it), from the links each page was
    found to have as the pages were walked (``KB.note``)."""
    indexed: set[str] = set()
    inbound: set[str] = set()
    for page in kb.pages:
        (indexed if page.is_index else inbound).update(kb.outbound[page.path])
    for page in kb.content_pages:
        if not kb.outbound[page.path]:
            yield finding(
                "dead-end-page", page.path, None, "links to no other wiki page; recompile to add its links"
            )
        if page.path in indexed:
            if page.path not in inbound:
                yield finding(
                    "index-only-page",
                    page.path,
                    None,
                    "only the index links here; no other page points to it",
                )
            continue
        if page.path not in inbound:
            yield finding(
                "orphan-page",
                page.path,
                None,
                "no page links here and the index does not list it; run 'wikic compile' or delete it",
            )
        else:
            yield finding("unindexed-page", page.path, None, "wiki/index.md does not list this page")
