"""Planning: decide which wiki pages exist and which layer-1 sources feed each.

The plan is deterministic and cheap, so it is recomputed on every compile; a page's spec (its
sources and config) is part of its fingerprint. One subject gets one page: a page is keyed by its
type and slug, and every source is routed to the pages it touches, or reported as unplaced.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from . import versions
from .bm25 import BM25, tokens
from .fsutil import canonical_json, sha256_tag
from .librarian.extract import MentionIndex, aliases, device_facts, has_quotable, mentions
from .markdown import github_slug
from .models import SourceDoc
from .wikischema import Comparison, Device, Guide, TopicRule, WikiSchema


@dataclass(frozen=True)
class PageSpec:
    type: str
    slug: str
    title: str
    path: str  # wiki/<folder>/<slug>.md
    sources: tuple[str, ...]  # layer-1 paths the page is made from
    config: dict = field(default_factory=dict, compare=False)  # entity/guide/comparison/topic settings

    @property
    def spec_hash(self) -> str:
        return sha256_tag(canonical_json([self.type, self.slug, self.title, self.sources, self.config]))


@dataclass
class Plan:
    pages: list[PageSpec]
    unplaced: list[str]
    superseded_by: dict[str, str]  # layer-1 path → path of the document that replaces it


def slugify(text: str) -> str:
    return github_slug(text).strip("-_")[:80] or "page"


def current_of(path: str, superseded_by: dict[str, str]) -> str:
    seen = set()
    while path in superseded_by and path not in seen:
        seen.add(path)
        path = superseded_by[path]
    return path


def supersession(docs: list[SourceDoc], chains: tuple = ()) -> dict[str, str]:
    """Map each superseded document (or ``path#anchor`` section) to the document that replaces it:
    ``supersedes`` in frontmatter and the schema's ``versions`` chains (see ``versions.py``)."""
    return versions.supersession(docs, chains)


def resolve_ref(ref: str, docs: list[SourceDoc]) -> SourceDoc | None:
    """``source:id`` (or ``source:key``, or ``source:file.md``) → document."""
    return next((d for d in docs if d.answers_to(ref)), None)


def device_sources(device: Device, docs: list[SourceDoc], superseded: dict[str, str]) -> list[SourceDoc]:
    """The device's spec pages, then the sources about it: listed in ``products``, named in the
    title, or named at least twice in the body; best first, at most 20."""
    specs = [d for d in (resolve_ref(r, docs) for r in device.sources) if d is not None]
    names = device.match or (device.title,)
    scored = []
    for d in docs:
        if d in specs or d.path in superseded or mentions(d.title, device.exclude):
            continue
        products = d.meta.get("products")
        listed = isinstance(products, list) and device.id in products
        in_title = bool(mentions(d.title, names))
        count = mentions(d.body, names)
        if listed or in_title or count:
            scored.append((not in_title, not listed, -count, d.path, d))
    scored.sort(key=lambda t: t[:4])
    strong = [t for t in scored if not t[0] or not t[1] or t[2] <= -2]
    scored = strong or scored  # a device named only in passing still gets its few mentions
    return specs + [t[-1] for t in scored[:20]]


def comparison_rows(comp: Comparison, docs: list[SourceDoc]) -> list[SourceDoc]:
    pool = [d for d in docs if d.source == comp.of]
    if comp.rows:
        wanted = set(comp.rows)
        pool = [d for d in pool if d.id in wanted or d.key in wanted]
    for key, want in comp.where.items():

        def ok(d: SourceDoc, key: str = key, want: object = want) -> bool:
            value = d.meta.get(key)
            return want in value if isinstance(value, list) else str(value) == str(want)

        pool = [d for d in pool if ok(d)]
    return sorted(pool, key=lambda d: d.title.lower())


def guide_sections(guide: Guide, docs: list[SourceDoc], superseded: dict[str, str]) -> list[tuple[str, str]]:
    """The best (path, anchor) sections for a guide's query, at most two per document."""
    pool = [
        (d, s)
        for d in docs
        if (not guide.sources or d.source in guide.sources) and d.path not in superseded
        for s in d.sections
        if s.text.strip() and not versions.is_superseded(d.path, s.anchor, superseded)
    ]
    if not pool:
        return []
    index = BM25([f"{d.title} {' '.join(s.path)} {s.text}" for d, s in pool])
    chosen: list[tuple[str, str]] = []
    per_doc: Counter = Counter()
    for i, _ in index.top(f"{guide.query} {guide.title}", len(pool)):
        d, s = pool[i]
        if per_doc[d.path] >= 2:
            continue
        per_doc[d.path] += 1
        chosen.append((d.path, s.anchor))
        if len(chosen) >= guide.limit:
            break
    return chosen


def _group_value(d: SourceDoc, field_name: str) -> str:
    value = d.meta.get(field_name)
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value).strip() if value not in (None, "") else ""


_NOT_CATEGORIES = {"title", "source", "id", "url", "slug", "description", "summary", "body", "supersedes"}
_DATE_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _category(value: object) -> str | None:
    """A frontmatter value as a category label, or None when it cannot be one (numbers, dates,
    paths and URLs, long text); a list counts by its first item."""
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, bool) or not isinstance(value, str):
        return None
    value = value.strip()
    if len(value) > 60 or "://" in value or value.startswith("/") or _DATE_LIKE.match(value):
        return None
    return value


def group_field(docs: list[SourceDoc], target: int = 12) -> str:
    """The frontmatter field that best splits ``docs`` into topic groups, or '' when none does.

    A candidate is a categorical text field (not bookkeeping, numbers, dates or URLs) that at least
    half the records carry, with 2 to n/3 distinct values. The best one covers the most records in
    groups closest to ``target`` records each: coverage × exp(−|ln(mean group size / target)|).
    """
    if len(docs) < 4:
        return ""
    names = sorted({k for d in docs for k in d.meta})
    best, best_score = "", 0.0
    for name in names:
        if name in _NOT_CATEGORIES or name.startswith(("record_", "layer0", "generated_by")):
            continue
        if name.endswith(("_at", "_url", "_id", "_date")):
            continue
        multi = sum(1 for d in docs if isinstance(d.meta.get(name), list) and len(d.meta[name]) > 1)
        if multi * 2 > len(docs):
            continue  # mostly several values each (tags): the first one is no category
        values = [_category(d.meta.get(name)) for d in docs]
        if any(v is None and name in d.meta for v, d in zip(values, docs, strict=True)):
            continue  # some value is not categorical: a number, a date, a long text
        present = [v for v in values if v]
        distinct = len(set(present))
        coverage = len(present) / len(docs)
        if coverage < 0.5 or not 2 <= distinct <= max(2, len(docs) // 3):
            continue
        score = coverage * math.exp(-abs(math.log(len(present) / distinct / target)))
        if score > best_score + 1e-9:
            best, best_score = name, score
    return best


def _cluster_terms(docs: list[SourceDoc]) -> dict[str, str]:
    """Group documents without a group field by their most distinctive shared title word."""
    df = Counter(t for d in docs for t in set(tokens(d.title)))
    out = {}
    for d in docs:
        shared = [t for t in set(tokens(d.title)) if 2 <= df[t] < max(3, len(docs) // 2)]
        out[d.path] = max(shared, key=lambda t: (df[t], t)) if shared else ""
    return out


def topic_groups(
    rule: TopicRule, docs: list[SourceDoc], superseded: dict[str, str]
) -> list[tuple[str, list[SourceDoc]]]:
    pool = [d for d in docs if d.source == rule.source and d.path not in superseded and has_quotable(d)]
    groups: dict[str, list[SourceDoc]] = defaultdict(list)
    terms = _cluster_terms(pool) if not rule.group_by else {}
    for d in pool:
        groups[_group_value(d, rule.group_by) if rule.group_by else terms[d.path]].append(d)
    out = []
    titles = _group_titles(sorted(groups), rule.titles)
    for value in sorted(groups):
        members = sorted(groups[value], key=lambda d: (d.title.lower(), d.path))
        title = titles[value]
        chunks = [members[i : i + rule.max_sources] for i in range(0, len(members), rule.max_sources)]
        for n, chunk in enumerate(chunks, 1):
            part = title
            if len(chunks) > 1:
                part = f"{title} {n}: {chunk[0].title} to {chunk[-1].title}"
            out.append((part, chunk))
    return out


def _group_titles(values: list[str], configured: dict[str, str]) -> dict[str, str]:
    """Readable titles for group values: configured ones, else the last path segment, widened
    with its parent segments while two values would share a title."""

    def words_of(value: str, depth: int) -> str:
        parts = [p for p in value.split("/") if p][-depth:]
        return " ".join(parts).replace("-", " ").replace("_", " ").strip().capitalize() or "Other"

    out: dict[str, str] = {}
    depth = {v: 1 for v in values}
    for _ in range(6):
        out = {v: configured.get(v) or words_of(v, depth[v]) for v in values}
        counts = Counter(out.values())
        clashes = [v for v in values if counts[out[v]] > 1 and v not in configured]
        if not clashes:
            break
        for v in clashes:
            depth[v] += 1
    return out


def plan(docs: list[SourceDoc], schema: WikiSchema) -> Plan:
    superseded = supersession(docs, schema.versions)
    pages: list[PageSpec] = []
    used: set[str] = set()
    folders = {name: t.folder for name, t in schema.page_types.items()}

    def add(type_: str, slug: str, title: str, sources: list[str], config: dict) -> PageSpec:
        spec = PageSpec(type_, slug, title, f"wiki/{folders[type_]}/{slug}.md", tuple(sources), config)
        pages.append(spec)
        used.update(sources)
        return spec

    def with_older(paths: list[str]) -> list[str]:
        """Append the older versions each document supersedes, so the page can note them."""
        out = list(paths)
        for old, new in sorted(superseded.items()):
            old = old.partition("#")[0]  # a superseded section: its document
            if current_of(new, superseded) in paths and old not in out:
                out.append(old)
        return out

    device_specs = []
    for device in schema.devices:
        srcs = [d.path for d in device_sources(device, docs, superseded)]
        if srcs:
            device_specs.append(
                add(
                    "device",
                    device.id,
                    device.title,
                    with_older(srcs),
                    {"device": device.__dict__, "spec_sources": list(device.sources)},
                )
            )
    for comp in schema.comparisons:
        if comp.of == "devices":
            # Rows are devices; the sources are those that state a compared fact about one.
            by_path = {d.path: d for d in docs}
            wanted = set(comp.fields)
            srcs: list[str] = []
            for spec in device_specs:
                current = [versions.current_view(by_path[p], superseded) for p in spec.sources]
                facts = device_facts(spec.config["device"], [d for d in current if d.path not in superseded])
                srcs += [c.path for k, _, c in facts if k in wanted and c.path not in srcs]
            if srcs:
                add(
                    "comparison",
                    comp.id,
                    comp.title,
                    srcs,
                    {"comparison": comp.__dict__, "devices": [s.config["device"] for s in device_specs]},
                )
            continue
        rows = comparison_rows(comp, docs)
        if rows:
            add("comparison", comp.id, comp.title, [d.path for d in rows], {"comparison": comp.__dict__})
    for guide in schema.guides:
        sections = guide_sections(guide, docs, superseded)
        if sections:
            srcs = list(dict.fromkeys(p for p, _ in sections))
            add(
                "guide",
                guide.id,
                guide.title,
                with_older(srcs),
                {"guide": guide.__dict__, "sections": [list(s) for s in sections]},
            )
    # One subject, one page: groups of different sources with the same title share a page.
    topics: dict[str, tuple[str, list[str], list[str], dict[str, list]]] = {}
    for rule in schema.topics:
        index = None
        if rule.mentions:
            index = MentionIndex(
                [
                    versions.current_view(d, superseded)
                    for d in docs
                    if d.source != rule.source and d.path not in superseded
                ]
            )
        for title, members in topic_groups(rule, docs, superseded):
            slug = slugify(title.split(":", 1)[0])  # "Herbs 2: Basil to Mint" → stable slug "herbs-2"
            entry = topics.setdefault(slug, (title, [], [], {}))
            entry[1].extend(d.path for d in members)
            entry[2].append(rule.source)
            for d in members if index else ():
                found = index.find([d.title, *aliases(d)], d.path, rule.mentions)
                if found:
                    entry[3][d.path] = [[m.path, sec.anchor, text] for m, sec, text in found]
    for slug, (title, members, sources, quoted) in topics.items():
        cited = [m[0] for ms in quoted.values() for m in ms]
        config = {"topic": sources, "members": members, "mentions": quoted}
        add("topic", slug, title, list(dict.fromkeys(with_older(members) + cited)), config)
    unplaced = sorted(d.path for d in docs if d.path not in used)
    return Plan(pages, unplaced, superseded)
