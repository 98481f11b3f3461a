"""Coverage and duplication: uncovered-source, duplicate-page."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import PurePosixPath

from ..core.markdown import github_slug
from .findings import Finding, finding
from .pages import PageHead
from .state import KB


def rule_uncovered(kb: KB) -> Iterator[Finding]:
    """uncovered-source: a layer-1 source no page shows, with the plan's reason."""
    if kb.plan is not None:
        for path, reason in sorted(kb.plan.reasons.items()):
            if path in kb.docs:
                yield finding("uncovered-source", path, None, f"no wiki page shows this source: {reason}")
        return
    used = set(kb.cited_paths)  # what the pages cite, kept as they were walked
    for page in kb.content_pages:
        used.update(str(s) for s in page.meta.get("sources") or [])
    for path in sorted(kb.docs):
        if path not in used:
            yield finding(
                "uncovered-source",
                path,
                None,
                "no wiki page uses this source; add schema/wiki.yaml and run 'wikic compile'",
            )


def rule_duplicates(kb: KB) -> Iterator[Finding]:
    """duplicate-page: the same title, or (same page type) near-identical source sets."""
    by_title: dict[str, list[PageHead]] = defaultdict(list)
    for page in kb.content_pages:
        title = str(page.meta.get("title") or PurePosixPath(page.path).stem)
        by_title[github_slug(title)].append(page)
    for group in by_title.values():
        for other in group[1:]:
            yield finding(
                "duplicate-page",
                other.path,
                None,
                f"same title as {group[0].path} ({other.meta.get('title')!r}); give one a distinct title",
            )
    by_type: dict[str, list[tuple[PageHead, frozenset[str]]]] = defaultdict(list)
    for page in kb.content_pages:
        srcs = frozenset(str(s) for s in page.meta.get("sources") or [])
        if len(srcs) >= 3:
            by_type[str(page.meta.get("type", ""))].append((page, srcs))
    for items in by_type.values():
        holding: dict[str, list[int]] = defaultdict(list)  # source → the pages (of this type) made from it
        for i, (_, srcs) in enumerate(items):
            for src in srcs:
                holding[src].append(i)
        for i, (a, sa) in enumerate(items):
            shared: Counter = Counter(j for src in sa for j in holding[src] if j > i)
            for j in sorted(shared):  # only pages sharing a source can share most of them
                b, sb = items[j]
                jaccard = shared[j] / (len(sa) + len(sb) - shared[j])
                if jaccard >= 0.8:
                    yield finding(
                        "duplicate-page",
                        b.path,
                        None,
                        f"{jaccard:.0%} of its sources are those of {a.path}; merge the two subjects",
                    )
