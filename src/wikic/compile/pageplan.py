"""Planning: decide which wiki pages exist and which layer-1 sources feed each.

The plan is deterministic and cheap, so it is recomputed on every compile; a page's spec (its
sources and config) is part of its fingerprint. One subject gets one page: a page is keyed by its
type and slug, and every source is routed to the pages it touches, or reported as unplaced.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..core.bm25 import tokens
from ..core.errors import ConfigError
from ..core.facts import (
    TAXONOMY,
    field_label,
    for_staff,
    is_bookkeeping,
    is_unknown,
    label,
    prose_fields,
    restated_field,
)
from ..core.facts import facts as field_facts
from ..core.fsutil import canonical_json, sha256_tag
from ..core.markdown import STOPWORDS, github_slug, is_navigation, plain_inline, readable, unnumbered
from ..core.models import SourceDoc
from ..core.pool import Jobs, each, now
from ..core.words import FIRST_PERSON, listing
from . import grouping, guides, versions
from .corpus import Corpus
from .disagreements import Disagreement, disagreements
from .gather import (
    FACETS,
    MAX_LIST,
    about_units,
    gather,
    without_spec_restatements,
)
from .librarian.extract import (
    _IMAGE,
    MentionIndex,
    Vocabulary,
    aliases,
    compared_facts,
    dated_title,
    is_title_section,
    mentions,
    naming_sentences,
    prose_units,
    self_contained,
    without_opening,
)
from .links import (
    COMMON_SHARE,
    Names,
    Target,
    backlinks,
    is_name,
    key_of,
    leads_on,
    listed_titles,
    outline_anchors,
    outline_of,
    rank_see_also,
    reading_order,
    source_links,
    unique_titles,
)
from .schema import SINGLE_PAGE_TYPES, Comparison, Device, Guide, TopicRule, WikiSchema
from .timeline import Timeline, quantity, sentences_of, timeline
from .versions import current_of


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

    @property
    def about(self) -> str:
        """What the plan says the page is (the schema's words, which a page may show as such): its
        contents or purpose, or for an entry, where it is filed (shown when its record has no prose)."""
        return self.config.get("about") or self.config.get("filed") or ""


@dataclass
class Plan:
    pages: list[PageSpec]
    unplaced: list[str]
    superseded_by: dict[str, str]  # layer-1 path → path of the document that replaces it
    homes: dict[str, str] = field(default_factory=dict)  # layer-1 path → the page showing all of it
    reasons: dict[str, str] = field(default_factory=dict)  # unplaced layer-1 path → why
    anchors: dict[str, str] = field(default_factory=dict)  # path (or path#anchor) → anchor on its home
    links: dict[str, dict] = field(default_factory=dict)  # page → {subject name key: links.Target}
    titled: dict[str, dict] = field(default_factory=dict)  # page → {title key: Target}, linked as whole items
    own: dict[str, list] = field(default_factory=dict)  # page → the name keys of its own subject
    see_also: dict[str, tuple[str, ...]] = field(default_factory=dict)
    backlinks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # page path → title
    timeline: Timeline = field(default_factory=Timeline)  # facts newer sources changed
    disputes: list[Disagreement] = field(default_factory=list)  # sources naming different things for one job
    proper: frozenset = frozenset()  # subject names that link only where written as names (links.Names)
    words: frozenset = frozenset()  # of those, common words (not devices): never linked in a table cell
    compounds: dict = field(default_factory=dict)  # longer names a one-word name is part of (links.Names)
    source_links: dict = field(default_factory=dict)  # layer-1 path → its links to other sources
    notes: list[str] = field(default_factory=list)  # configured pages left out, and why
    vocabulary: Vocabulary | None = field(default=None, repr=False)  # word frequencies, for keywords

    @functools.cached_property
    def subject_pages(self) -> frozenset[str]:
        """The pages that are each about one subject: a device's, an entry's."""
        return frozenset(s.path for s in self.pages if s.type in ("entity", "device"))

    def target(self, path: str, anchor: str = "") -> Target | None:
        """Where a source (or one of its sections) is shown whole: its home, at its heading."""
        home = self.homes.get(current_of(path, self.superseded_by))
        if home is None:
            return None
        key = f"{path}#{anchor}" if anchor else path
        return Target(home, self.anchors.get(key) or self.anchors.get(path, ""))


def slugify(text: str) -> str:
    return github_slug(text).strip("-_")[:80] or "page"


def supersession(docs: list[SourceDoc], chains: tuple = ()) -> dict[str, str]:
    """Map each superseded document (or ``path#anchor`` section) to the document that replaces it:
    ``supersedes`` in frontmatter and the schema's ``versions`` chains (see ``versions.py``)."""
    return versions.supersession(docs, chains)


def resolve_ref(ref: str, docs: list[SourceDoc]) -> SourceDoc | None:
    """``source:id`` (or ``source:key``, or ``source:file.md``) → document."""
    return next((d for d in docs if d.answers_to(ref)), None)


def device_sources(device: Device, docs: list[SourceDoc], superseded: dict[str, str]) -> list[SourceDoc]:
    """The device's spec pages, then the sources about it: listed in ``products``, named in the
    title, or named at least twice in the body; best first, at most 20. What the source files
    for its staff (the factory's packing list) is no owner's."""
    specs = [d for d in (resolve_ref(r, docs) for r in device.sources) if d is not None]
    names = device.match or (device.title,)
    scored = []
    for d in docs:
        if d in specs or d.path in superseded or mentions(d.title, device.exclude) or for_staff(d):
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


def _labels_field(docs: list[SourceDoc]) -> str:
    """A field most documents fill with several short labels (their tags), or ''."""
    from ..core.facts import NAME_FIELDS

    counts: Counter = Counter()
    for d in docs:
        for k, v in d.meta.items():
            if (
                k not in NAME_FIELDS
                and isinstance(v, list)
                and v
                and all(isinstance(x, str) and len(x) <= 40 for x in v)
            ):
                counts[k] += 1
    found = [k for k, n in counts.items() if n * 2 >= len(docs)]
    return max(found, key=lambda k: (counts[k], k)) if found else ""


def _cluster_terms(docs: list[SourceDoc]) -> dict[str, str]:
    """Group documents without a group field by subject: the first of their labels (tags) that
    another document shares, else their first label; without labels, by their most distinctive
    shared title word (not one most titles use, like a brand name). A document with none stands
    alone, titled by itself."""
    field_name = _labels_field(docs)
    if field_name:
        df = Counter(str(x).strip() for d in docs for x in set(d.meta.get(field_name) or []))
        out = {}
        for d in docs:
            labels = [str(x).strip() for x in d.meta.get(field_name) or [] if str(x).strip()]
            shared = [x for x in labels if 2 <= df[x] <= max(2, len(docs) // 2)]
            out[d.path] = shared[0] if shared else (labels[0] if labels else "")
        return _alone(out, docs)
    df = Counter(t for d in docs for t in set(tokens(d.title)))
    out = {}
    for d in docs:
        shared = [t for t in set(tokens(d.title)) if 2 <= df[t] < max(3, len(docs) * 3 // 10)]
        out[d.path] = max(shared, key=lambda t: (df[t], t)) if shared else ""
    return _alone(out, docs)


POOLED = 5  # documents sharing no subject share one page (titled by their titles) up to this many


def _alone(terms: dict[str, str], docs: list[SourceDoc]) -> dict[str, str]:
    """Documents that share no subject with another stay on one page while they are few (its
    title names them); more stand alone, each titled by itself (no catch-all page)."""
    alone = [d for d in docs if not terms[d.path]]
    if len(alone) > POOLED:
        terms.update({d.path: f"/{d.title}" for d in alone})
    return terms


def topic_groups(
    rule: TopicRule, pool: list[SourceDoc], by_meaning: bool = True
) -> list[tuple[str, list[SourceDoc], str, str]]:
    """The topic pages of one rule over the documents it homes: (title, members, group value,
    slug).
    Folders are corrected by subject (``grouping.folder_groups``); a group too large for a page is
    split by the words its members' titles share, then, if still too large, into numbered parts."""
    pool = [d for d in pool if d.source == rule.source]
    groups: dict[str, list[SourceDoc]] = defaultdict(list)
    terms = _cluster_terms(pool) if not rule.group_by else {}
    for d in pool:
        groups[_group_value(d, rule.group_by) if rule.group_by else terms[d.path]].append(d)
    intro: dict[str, SourceDoc] = {}
    subjects: set[str] | None = None
    if rule.group_by and any("/" in v for v in groups):
        cap = int(rule.max_sources * grouping.SPLIT_SLACK)
        groups, intro, subjects = grouping.folder_groups(groups, cap, by_meaning)
    out = []
    unnamed = label(rule.source)
    if rule.group_by and any(groups) and "" in groups:
        unnamed = f"{unnamed} without {label(rule.group_by).lower()}"
    titles = _group_titles(sorted(groups), rule.titles, unnamed, groups, intro, subjects)
    if not rule.group_by and "" in groups and "" not in rule.titles:
        titles[""] = grouping.listed_title(groups[""])  # a few documents of no shared subject
    for value in sorted(groups):
        first = [intro[value]] if value in intro else []
        rest = sorted((d for d in groups[value] if d not in first), key=lambda d: (d.title.lower(), d.path))
        for title, members in grouping.split_by_subject(titles[value], first + rest, rule.max_sources):
            # "Herbs 2: Basil to Mint" keeps the stable slug "herbs-2", "Tubing: barbs 2: …" the slug
            # "tubing-barbs-2"; the few documents of no shared subject keep the source's slug
            base = slugify(unnamed) if value == "" and not rule.group_by else ""
            out += [
                (t, chunk, value, base or slugify(stem))
                for t, stem, chunk in _parts(title, members, rule.max_sources)
            ]
    return out


def _parts(title: str, members: list[SourceDoc], limit: int) -> list[tuple[str, str, list[SourceDoc]]]:
    """A group still too large for one page in numbered parts of even size: (title, the title
    without its span, members) of each ('Herbs 2: Basil to Mint', 'Herbs 2', …)."""
    if len(members) <= limit * grouping.SPLIT_SLACK:
        return [(title, title, members)]
    parts = -(-len(members) // limit)  # as few pages as fit, of even size
    cuts = [len(members) * i // parts for i in range(parts + 1)]
    chunks = [members[a:b] for a, b in zip(cuts, cuts[1:])]
    out = []
    for n, chunk in enumerate(chunks, 1):
        span = (
            chunk[0].title if chunk[0].title == chunk[-1].title else f"{chunk[0].title} to {chunk[-1].title}"
        )
        out.append((f"{title} {n}: {span}", f"{title} {n}", chunk))
    return out


_VERSION_SEGMENT = re.compile(r"^v?\d+(?:[._]\d+)*$", re.IGNORECASE)


def _group_titles(
    values: list[str],
    configured: dict[str, str],
    unnamed: str = "Other",
    members: dict[str, list[SourceDoc]] | None = None,
    intro: dict[str, SourceDoc] | None = None,
    subjects: set[str] | None = None,
) -> dict[str, str]:
    """Readable titles for group values: configured ones, else the title of the document that
    introduces the folder ('Drivetrain', 'Bill of Materials'), else the last path segment (version
    segments such as 'v1.1' skipped) when its words are what the members talk about, written as
    the members write them ('farmbot os' → 'FarmBot OS', 'bom' → 'BOM'), else the members' own
    titles ('Getting Started, Demo the App and …'). Two values that would share a title are
    widened with their parent segments. A value with no words left is titled by its one member,
    else ``unnamed`` (the source's name for a default rule)."""
    members = members or {}
    intro = intro or {}

    def words_of(value: str, depth: int) -> str:
        parts = [p for p in value.split("/") if p and not _VERSION_SEGMENT.match(p)][-depth:]
        text = " ".join(parts).replace("-", " ").replace("_", " ").strip()
        docs = members.get(value, [])
        if value in intro and depth == 1:
            return intro[value].title
        if not text:
            return docs[0].title if len(docs) == 1 and value else unnamed
        # 'docs', 'intro': where a page was filed, not what it is about
        filed = value not in subjects if subjects is not None else not grouping.is_subject(parts[-1], docs)
        if "/" in value and depth == 1 and filed:
            return grouping.listed_title(docs)
        return written_as(text, docs)

    out: dict[str, str] = {}
    depth = {v: 1 for v in values}
    named_by: dict[str, str] = {}  # value → a title naming its members, when its own clashes
    for _ in range(6):
        out = {v: configured.get(v) or named_by.get(v) or words_of(v, depth[v]) for v in values}
        counts = Counter(out.values())
        clashes = [v for v in values if counts[out[v]] > 1 and v not in configured]
        if not clashes:
            break
        # two folders introduced by a 'Troubleshooting' page: the larger keeps the title, the
        # others say what they hold ('Troubleshooting: Picking Up Seeds, Water Pressure and …')
        introduced = [v for v in clashes if v in intro and v not in named_by and depth[v] == 1]
        largest = {
            out[v]: max((x for x in introduced if out[x] == out[v]), key=lambda x: (len(members[x]), x))
            for v in introduced
        }
        for v in clashes:
            if v in introduced and largest[out[v]] != v:
                rest = [d for d in members[v] if d is not intro[v]] or members[v]
                named_by[v] = f"{out[v]}: {grouping.listed_title(rest)}"
            elif v not in named_by and (v not in introduced or largest[out[v]] != v):
                depth[v] += 1
    return out


def written_as(text: str, docs: list[SourceDoc]) -> str:
    """``text`` as a title, each word cased as the documents write it: their titles' casing
    ('FarmBot', 'OS'), or capitals for a short word their bodies only write in capitals ('BOM')."""
    forms: dict[str, Counter] = defaultdict(Counter)
    for d in docs:
        for w in re.findall(r"[\w'’.-]+", d.title):
            forms[w.lower()][w] += 1
    out = []
    for i, word in enumerate(text.split()):
        seen = [f for f, _ in forms[word.lower()].most_common() if f != f.lower() and f != f.capitalize()]
        if seen:
            out.append(seen[0])  # an inner capital: 'FarmBot', 'OS'
        elif (
            len(word) <= 4
            and word.isalpha()
            and any(
                re.search(rf"\b{word.upper()}\b", d.body) and not re.search(rf"\b{word.lower()}\b", d.body)
                for d in docs
            )
        ):
            out.append(word.upper())
        else:
            out.append(word.capitalize() if i == 0 else word.lower())
    return " ".join(out)


RESERVED = ("wiki/index.md", "wiki/log.md")  # and wiki/index/, the sub-indexes


class _Pages:
    """The page list as the plan grows it: each page added once, under its type's folder."""

    def __init__(self, schema: WikiSchema, superseded: dict[str, str]):
        self.folders = {name: t.folder for name, t in schema.page_types.items()}
        # the glossary's and the change list's files are theirs even in a run that writes neither
        self.kept = {self.path_of(t, t): t for t in SINGLE_PAGE_TYPES if t in self.folders}
        self.superseded = superseded
        self.pages: list[PageSpec] = []
        self.paths: dict[str, PageSpec] = {}
        self.homes: dict[str, str] = {}  # layer-1 path → the page that shows it whole

    def path_of(self, type_: str, slug: str) -> str:
        folder = self.folders[type_]
        return f"wiki/{folder}/{slug}.md" if folder else f"wiki/{slug}.md"

    def add(self, type_: str, slug: str, title: str, sources: list[str], config: dict) -> PageSpec:
        path, n, base = self.path_of(type_, slug), 1, slug
        while (same := self.paths.get(path)) is not None and same.type == type_:
            n += 1  # two pages of one name and type (a directory beside a topic): the second is -2
            slug = f"{base}-{n}"
            path = self.path_of(type_, slug)
        taken = self.paths.get(path)
        kept = self.kept.get(path, type_) != type_
        if taken is not None or kept or path in RESERVED or path.startswith("wiki/index/"):
            what = f"the {self.kept[path]} page" if kept else "a file wikic maintains"
            what = f"the {taken.type} page '{taken.slug}'" if taken else what
            raise ConfigError(
                f"schema/wiki.yaml: the {type_} page '{slug}' would be written to {path}, over {what}; "
                "rename it or give its page type another folder"
            )
        spec = PageSpec(type_, slug, title, path, tuple(sources), config)
        self.pages.append(spec)
        self.paths[path] = spec
        return spec

    def with_older(self, paths: list[str]) -> list[str]:
        """Append the older versions each document supersedes, so the page can note them."""
        out = list(paths)
        for old, new in sorted(self.superseded.items()):
            old = old.partition("#")[0]  # a superseded section: its document
            if current_of(new, self.superseded) in paths and old not in out:
                out.append(old)
        return out


def plan(docs: list[SourceDoc], schema: WikiSchema, jobs: Jobs = 1) -> Plan:
    """Every page of the wiki and the sources each is made from, in a fixed order: devices,
    comparisons, guides, topics (the home of every other source), device families; then what
    the whole KB yields (the timeline, disagreements, the change list, the glossary, links).
    ``jobs`` processes read the documents' text where each is read on its own."""
    superseded = supersession(docs, schema.versions)
    pages = _Pages(schema, superseded)
    facts_config = {
        "show": list(schema.facts_show),
        "hide": list(schema.facts_hide),
        "units": schema.facts_units,
    }
    device_specs = plan_devices(pages, schema, docs, facts_config)
    notes = plan_comparisons(pages, schema, docs, device_specs)
    corpus = Corpus(docs, superseded, jobs, guides.asked_words(list(schema.guides)))
    tl = timeline(docs, superseded, corpus.said, corpus.stems)
    linked = source_links(docs)
    plan_guides(pages, schema, docs, tl, device_specs, linked, jobs, corpus.counted)
    homed = {p for s in device_specs for p in s.config["spec_paths"]}
    reasons: dict[str, str] = {}
    pool = topic_pool(docs, superseded, homed, reasons)
    plan_topics(pages, schema, docs, pool, facts_config, linked)
    for old, new in superseded.items():
        home = pages.homes.get(current_of(new, superseded))
        if home is not None:
            pages.homes[old] = home  # an older version is quoted, whole, in a note where its successor lives
    for d in docs:
        if d.path not in pages.homes and d.path not in reasons:
            reasons[d.path] = (
                "superseded by a document that has no home" if d.path in superseded else "no rule"
            )
    plan_hubs(pages, docs, device_specs)
    the_plan = Plan(pages.pages, sorted(reasons), superseded, pages.homes, reasons, notes=notes, timeline=tl)
    the_plan.compounds = corpus.compounds
    the_plan.source_links = shown_links(docs, linked)
    the_plan.vocabulary = corpus.vocabulary
    plan_kb_wide(the_plan, pages, corpus)
    return the_plan


def plan_devices(
    pages: _Pages, schema: WikiSchema, docs: list[SourceDoc], facts_config: dict
) -> list[PageSpec]:
    """One page per configured device that some source is about; its spec pages live there."""
    device_specs = []
    for device in schema.devices:
        found = device_sources(device, docs, pages.superseded)
        if not found:
            continue
        specs = [d.path for d in found if any(d.answers_to(r) for r in device.sources)]
        specs = [
            p for p in specs if p not in pages.homes
        ]  # a spec page shared by two devices lives on the first
        sources = pages.with_older(specs) + [d.path for d in found if d.path not in specs]
        peers = [[d.title, *d.match] for d in schema.devices if d is not device]
        config = {
            "device": {**device.__dict__, "others": [n for p in peers for n in p], "peers": peers},
            "spec_sources": list(device.sources),
            "spec_paths": specs,
        }
        current = [versions.current_view(d, pages.superseded) for d in found]
        gathered = gather(config["device"], current, set(specs))
        by_path = {d.path: d for d in current}
        spec_docs = [by_path[p] for p in specs if p in by_path]
        config["gathered"] = without_spec_restatements(gathered, config["device"], spec_docs, by_path)
        names = (*device.match, device.title)
        if not specs and not naming_sentences(names, [d for d in current if d.path not in specs]):
            config["about"] = device_about(device.title, config["gathered"])
        spec = pages.add("device", device.id, device.title, sources, {**config, "facts": facts_config})
        device_specs.append(spec)
        pages.homes.update(dict.fromkeys(specs, spec.path))
    return device_specs


def plan_comparisons(
    pages: _Pages, schema: WikiSchema, docs: list[SourceDoc], device_specs: list[PageSpec]
) -> list[str]:
    """A comparison of devices (by the facts their sources state) or of a source's records (by
    their fields); notes for comparisons left out because no row has a value."""
    by_path = {d.path: d for d in docs}
    notes = []
    for comp in schema.comparisons:
        if comp.of == "devices":
            # Rows are devices; the sources are those that state a compared fact about one.
            own = dict.fromkeys(
                p for spec in device_specs for p in spec.sources
            )  # each device's, in its order
            current = [versions.current_view(by_path[p], pages.superseded) for p in own]
            current = [d for d in current if d.path not in pages.superseded]
            devices = [spec.config["device"] for spec in device_specs]
            _, rows = compared_facts(devices, current, comp.fields)
            srcs = list(dict.fromkeys(c.path for _, facts in rows for _, c in facts.values()))
            silent = [d for d, (_, facts) in zip(devices, rows, strict=True) if not facts]
            if srcs:
                about = shown = comparison_about(comp, comp.fields)
                if silent:  # a row of dashes says nothing: say so once instead
                    about += f" The sources state none of these for the {_names_text([d['title'] for d in silent])}."
                about += _little_said(devices, rows)
                config = {"comparison": comp.__dict__, "devices": devices, "about": about, "summary": shown}
                pages.add("comparison", comp.id, comp.title, srcs, config)
            continue
        rows = comparison_rows(comp, docs)
        known = [f for f in comp.fields if any(not is_unknown(d.meta.get(f)) for d in rows)]
        if rows and known:  # a column no row knows (all 0 or empty) says nothing, nor does such a row
            told = [d for d in rows if any(not is_unknown(d.meta.get(f)) for f in known)]
            about = shown = comparison_about(comp, known)
            if len(told) < len(rows):
                about += f" Their records give none of these for {_names_text([d.title for d in rows if d not in told])}."
            # the index line says what the table shows, not which rows it leaves out
            config = {"comparison": comp.__dict__, "fields": known, "about": about, "summary": shown}
            if schema.facts_units:
                config["units"] = schema.facts_units
            pages.add("comparison", comp.id, comp.title, [d.path for d in told], config)
        elif rows:
            notes.append(
                f"comparison '{comp.id}': none of its {len(rows)} rows has a value for {', '.join(comp.fields)}; not written"
            )
    return notes


SPARSE = 3  # a row that fills this share of a comparison's columns, or less, is said to be sparse


def _little_said(devices: list[dict], rows: list) -> str:
    """' For the FarmBot Genesis the sources state only required hardware and calibration object.':
    a row mostly of dashes said nothing of why (review N: 'the comparison doesn't compare')."""
    columns = {label for _, facts in rows for label in facts}
    out = ""
    for device, (_, facts) in zip(devices, rows, strict=True):
        if facts and len(facts) * SPARSE <= len(columns):
            said = listing(
                [" ".join(w if w.isupper() else w.lower() for w in label.split()) for label in facts]
            )
            out += f" For the {device['title']} the sources state only {said}."
    return out


SILENT_NAMED = 8  # rows a comparison leaves out for want of values, named at most; past that counted


def _names_text(names: list[str]) -> str:
    """'A, B and C'; 'A, B … H and 4 more' past ``SILENT_NAMED``."""
    return listing(names, SILENT_NAMED)


def device_about(title: str, gathered: list[list[str]]) -> str:
    """What a device page holds when no source says what the device is: 'What the sources say
    about the FarmBot Express XL: set-up and use.'"""
    facets = [
        f if f.isupper() or f[1:].islower() is False else f.lower()
        for f in FACETS
        if any(g[0] == f for g in gathered)
    ]
    said = listing(facets)
    return f"What the sources say about the {title}" + (f": {said}." if said else ".")


def comparison_about(comp: Comparison, fields: list[str] | tuple[str, ...]) -> str:
    """What a comparison shows: its ``purpose`` in wiki.yaml, else its columns ('Spread, height
    and sowing method, side by side.')."""
    if comp.purpose:
        return comp.purpose
    labels = [field_label(f) if "_" in f or f.islower() else f for f in fields]
    listed = listing([*labels[:-1], labels[-1].lower()]) if len(labels) > 1 else labels[0]
    of = "each model" if comp.of == "devices" else f"each of the {label(comp.of).lower()} listed"
    return f"{listed[:1].upper()}{listed[1:]} of {of}, side by side."


CONTENTS = 6  # entries named in a topic page's contents line when it has more than CONTENTS_ALL
CONTENTS_ALL = 9  # up to this many, every entry is named ('· and 2 more' hid two of eight)
CONTENTS_PREFIX = "On this page: "


def contents_line(titles: list[str]) -> str:
    """A topic page's opening line: the entries it holds, by their titles ('On this page: How
    long does a full water tank last? · …'), all of them when they are few, else the first few
    and how many more."""
    shown = [" ".join(t.split()) for t in titles[: len(titles) if len(titles) <= CONTENTS_ALL else CONTENTS]]
    more = len(titles) - len(shown)
    return CONTENTS_PREFIX + " · ".join(shown) + (f" · and {more} more" if more > 0 else "")


def topic_about(
    title: str, members: list[SourceDoc], purpose: str = "", opening: SourceDoc | None = None
) -> str:
    """A topic page's opening line: what it covers, by its entries' titles ('Watering: how long
    does a full water tank last? · …'), or by the headings of its one entry when that entry is
    the page's namesake ('Seeds: Pelleted seeds · Vining crops'); never a count of records. The
    namesake among several entries is not listed ('Troubleshooting: Troubleshooting · …'). With
    the group's ``purpose`` in wiki.yaml, that comes first, the entries after it ('On this
    page: …'); so they do after an ``opening`` overview, which says what the page is."""
    line = _entries_line(title, members)
    if opening is not None and not purpose and line.startswith(f"{title}: "):
        return CONTENTS_PREFIX + line.removeprefix(f"{title}: ")
    if not purpose:
        return line
    return (
        f"{purpose} {CONTENTS_PREFIX}{line.removeprefix(f'{title}: ')}"
        if line.startswith(f"{title}: ")
        else purpose
    )


OVERVIEW = 5  # sentences and items, at most, of a topic's namesake that opens the page


def overview(title: str, members: list[SourceDoc]) -> SourceDoc | None:
    """The entry that introduces a topic's others, which opens the page in place of a line of
    their titles: the page's namesake (the 'Maintenance' article among the maintenance ones), when
    it is short prose ('In the following sections we'll go over maintenance tips …') in one
    section (or in its description when its body says nothing, or in the opening over its other
    sections, which follow it on the page): no steps, table or code a reader would look for
    under its own heading. 'Getting Started' repeated its title as a heading over its opening."""
    named = [d for d in members if d.title.casefold() == title.casefold()]
    if len(named) != 1:
        return None
    said = [s.text for s in named[0].sections if s.text.strip() and not is_navigation(s.text)]
    if not said:  # a record whose prose is its description ('Tech specs for the electronics …')
        said = [text for _, text in prose_fields(named[0])]
    elif len(said) > 1:  # its opening, over sections of its own that follow it on the page
        first = named[0].sections[0]
        said = [first.text] if is_title_section(named[0], first) and first.text.strip() else said
    elif len(members) < 2:
        return None  # the page's one entry, all of it prose: it is shown as it is
    if len(said) != 1 or re.search(r"^\s*(\||\d+[.)]\s|```)", said[0], re.M):
        return None
    units = prose_units(said[0])
    return named[0] if 0 < len(units) <= OVERVIEW else None


def _entries_line(title: str, members: list[SourceDoc]) -> str:
    titles = [d.title for d in members]
    others = [t for t in titles if t.casefold() != title.casefold()]
    if others and len(others) < len(titles):
        titles = others
    if titles == [title]:
        heads = [s.heading for s in members[0].sections if s.heading and s.heading != title]
        titles = list(dict.fromkeys(" ".join(plain_inline(h).split()) for h in heads))
        if not titles:
            return f"The {title} {record_noun(members[0].source)}, shown whole."
    return f"{title}: " + contents_line(titles).removeprefix(CONTENTS_PREFIX)


def record_noun(source: str) -> str:
    """What one record of a source is called: 'article' (articles), 'FAQ entry' (faq)."""
    name = source.replace("_", " ").replace("-", " ")
    if len(name) > 3 and name.endswith("s"):
        return name[:-1]
    return f"{name.upper() if len(name) <= 3 else name} entry"


def guide_covers(sections: list[tuple[str, str]], by_path: dict[str, SourceDoc]) -> str:
    """What a guide holds, by the headings a reader finds on it in task order ('In this guide:
    Before you leave · Vacation mode: up to 21 days · Typical refill intervals · …'): a section
    quoted alone by its heading, several of one document (a procedure's steps) by its title.
    With the guide's purpose, a lead that covers the page."""
    runs: list[tuple[str, list[str]]] = []
    for path, anchor in sections:
        if runs and runs[-1][0] == path:
            runs[-1][1].append(anchor)
        else:
            runs.append((path, [anchor]))
    heads = []
    for path, anchors in runs:
        doc = by_path.get(path)
        section = doc.section(anchors[0]) if doc is not None and len(anchors) == 1 else None
        if doc is not None:
            shown = unnumbered(section.heading) if section and section.heading else doc.title
            heads.append(" ".join(plain_inline(shown).split()))
    return "In this guide: " + contents_line(list(dict.fromkeys(heads))).removeprefix(CONTENTS_PREFIX)


GUIDES_IN_PROCESSES = 2000  # sections from which guides are planned in processes of their own


def plan_guides(
    pages: _Pages,
    schema: WikiSchema,
    docs: list[SourceDoc],
    tl: Timeline,
    device_specs: list[PageSpec],
    linked: dict | None = None,
    jobs: Jobs = 1,
    counted: dict[str, tuple[int, dict[str, int]]] | None = None,
) -> None:
    """A page for each guide that finds sections to quote; ``jobs`` processes plan the guides
    (each text is read here first, once, and shared with them; ``counted``: the documents read
    for the guides' words already, ``corpus.Corpus.counted``)."""
    by_path = {d.path: d for d in docs}
    leads = {d.path: nxt for d in docs if (nxt := leads_on(d, linked or {}))}  # 'What's next?'
    pointing: dict[str, set[str]] = defaultdict(set)  # a section → the documents its links lead to
    for path, found in (linked or {}).items():
        for anchor, _, to, _, _ in found:
            pointing[f"{path}#{anchor}"].add(to)

    devices = [
        (
            s.config["device"],
            [versions.current_view(by_path[p], pages.superseded) for p in s.config["spec_paths"]],
        )
        for s in device_specs
    ]
    sources = entry_sources(schema, docs)
    entries = {d.path for d in docs if d.source in sources}
    jobs = jobs if sum(len(d.sections) for d in docs) >= GUIDES_IN_PROCESSES else 1
    # here, not in processes: what it reads of each section (its sentences, its blocks) is then
    # known to the processes forked later, and only a few indexes would come back from them
    quotable = guides.quotable_sections(docs, pages.superseded) if schema.guides else []
    read = guides.Counted(list(schema.guides), counted)  # each text read once for every guide
    if now(jobs) > 1:
        read.read_all(quotable, jobs)

    def one(guide: Guide) -> guides.GuidePlan:
        return guides.plan_guide(
            guide,
            docs,
            pages.superseded,
            tl,
            devices,
            schema.semantic,
            entries,
            quotable,
            leads,
            read,
            pointing,
        )

    for guide, found in zip(schema.guides, each(one, list(schema.guides), jobs), strict=True):
        if found.sections:
            srcs = list(dict.fromkeys([p for p, _ in found.sections] + found.table_sources))
            config = {
                "guide": guide.__dict__,
                "sections": [list(s) for s in found.sections],
                "phases": found.phases,
                "about": f"{guide.purpose} " + guide_covers(found.sections, by_path),
            }
            if found.only:
                config["only"] = found.only
            if found.table:
                config["table"] = found.table
            pages.add("guide", guide.id, guide.title, pages.with_older(srcs), config)


def own_sources(spec: PageSpec) -> set[str]:
    """The sources a page is made of, less those it quotes only for a sentence that names its
    entry ('Elsewhere in the knowledge base'): a bed-layout article that mentions squash relates the
    Kabocha Squash page to no guide that quotes the same article."""
    mentioned = {p for found in (spec.config.get("mentions") or {}).values() for p, _, _ in found}
    return set(spec.sources) - mentioned


def topic_pool(
    docs: list[SourceDoc], superseded: dict[str, str], homed: set[str], reasons: dict[str, str]
) -> list[SourceDoc]:
    """The documents a topic page must home: current, not a device's spec page, with something
    to show (those with nothing get a reason instead)."""
    pool: list[SourceDoc] = []
    for d in docs:
        if d.path in superseded or d.path in homed:
            continue
        if not has_content(d):
            reasons[d.path] = "no text and no fields to show"
            continue
        pool.append(d)
    return pool


ENTITY_MENTIONS = 3  # sentences of other sources quoted on an entry's page, by default


def reference_entries(docs: list[SourceDoc]) -> bool:
    """Whether a source reads like an encyclopedia: ten or more entries with short names and numeric
    fields (species, parts, materials), rather than articles or questions."""
    if len(docs) < 10:
        return False
    numbers = sorted(
        sum(
            1
            for k, v in d.meta.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not is_bookkeeping(k)
        )
        for d in docs
    )
    lengths = sorted(len(d.title.split()) for d in docs)
    return numbers[len(docs) // 2] >= 2 and lengths[len(docs) // 2] <= 4


def entry_sources(schema: WikiSchema, docs: list[SourceDoc]) -> set[str]:
    """The sources whose records get a page each: configured with ``entity_pages``, else those
    that read as reference entries."""
    configured = {r.source: r.entity_pages for r in schema.topics if r.entity_pages is not None}
    by_source: dict[str, list[SourceDoc]] = defaultdict(list)
    for d in docs:
        by_source[d.source].append(d)
    return {
        s
        for s, ds in by_source.items()
        if configured.get(s, reference_entries(ds) if s not in configured else False)
    }


def plan_topics(
    pages: _Pages,
    schema: WikiSchema,
    docs: list[SourceDoc],
    pool: list[SourceDoc],
    facts_config: dict,
    linked: dict | None = None,
) -> None:
    """Every other document is homed on a topic page: by its source's rule, or by a default rule
    that groups the source by its most informative field (else by shared title words). One
    subject, one page: groups of different sources with the same title share a page. A source of
    reference entries (a crop encyclopedia) gets a page per entry and a directory per group."""
    superseded = pages.superseded
    topics: dict[str, tuple[str, list[str], list[str], dict[str, list]]] = {}
    family: dict[str, str] = {}
    purposes: dict[str, str] = {}  # per topic page, what wiki.yaml says it covers
    directories: list[tuple[str, str, list[SourceDoc], dict]] = []
    for rule in topic_rules(schema.topics, pool):
        own = [d for d in pool if d.source == rule.source]
        entities = rule.entity_pages if rule.entity_pages is not None else reference_entries(own)
        mentions = rule.mentions or (ENTITY_MENTIONS if entities else 0)
        index = None
        if mentions:
            current = [d for d in docs if d.source != rule.source and d.path not in superseded]
            index = MentionIndex([versions.current_view(d, superseded) for d in current])
        for title, members, value, slug in topic_groups(
            replace(rule, max_sources=1 << 30) if entities else rule, pool, schema.semantic
        ):
            quoted = {}
            for d in members if index else ():
                found = index.find([d.title, *aliases(d)], d.path)
                if found:  # what its own record says already, another source's words for it add nothing
                    said = guides.sayings(d)
                    found = [m for m in found if not guides.restated(m[2], said)][:mentions]
                if found:
                    quoted[d.path] = [[m.path, sec.anchor, text] for m, sec, text in found]
            if entities:
                directories.append((title, rule.source, members, quoted))
                continue
            if all(dated_title(d) != d.title for d in members):  # posts: newest first
                members = sorted(members, key=lambda d: dated_title(d)[-11:-1], reverse=True)
            else:  # in the order the sources lead a reader on ('What's next?'), else as grouped,
                members = reading_order(members, linked or {})  # the page's namesake first: its overview
                members = sorted(members, key=lambda d: d.title.casefold() != title.casefold())
            # 'v15/app/plants' belongs with 'v15/app/photos': one family of the source's structure
            family.setdefault(slug, f"{rule.source}:{value.rpartition('/')[0]}" if "/" in value else "")
            entry = topics.setdefault(slug, (title, [], [], {}))
            purposes.setdefault(slug, rule.purposes.get(value, ""))
            entry[1].extend(d.path for d in members)
            entry[2].append(rule.source)
            entry[3].update(quoted)
    by_path = {d.path: d for d in docs}
    for slug, (title, members, sources, quoted) in topics.items():
        config = {"topic": sources, "members": members, "mentions": quoted, "facts": facts_config}
        opening = overview(title, [by_path[p] for p in members])
        config["about"] = topic_about(title, [by_path[p] for p in members], purposes.get(slug, ""), opening)
        if opening is not None:
            config["opening"] = opening.path
        if family.get(slug):
            config["family"] = family[slug]
        spec = pages.add("topic", slug, title, pages.with_older(members), config)
        pages.homes.update(dict.fromkeys(members, spec.path))
    named = {key_of(t[0]) for t in topics.values()}
    for title, source, members, quoted in directories:  # 'Microgreens' the posts, 'Microgreens (plants)'
        title = title if key_of(title) not in named else f"{title} ({label(source).lower()})"
        plan_entries(pages, title, members, quoted, facts_config, label(source))


def plan_entries(
    pages: _Pages,
    title: str,
    members: list[SourceDoc],
    quoted: dict[str, list],
    facts_config: dict,
    kind: str,
) -> None:
    """A page per entry (its home: all of it, and what other sources say about it, quoted) and a
    directory of the group listing each entry with its opening sentence. ``kind``: what the
    entries are, by their source's name ('Crops')."""
    listed = []
    filed = f"One of the {kind.lower()} listed under {title.split(':', 1)[0]}: what its record says."
    for d in members:
        mentions = quoted.get(d.path, [])
        config = {
            "members": [d.path],
            "mentions": {d.path: mentions} if mentions else {},
            "facts": facts_config,
            "filed": filed,
        }
        sources = pages.with_older([d.path]) + sorted({m[0] for m in mentions} - {d.path})
        spec = pages.add("entity", slugify(d.title), d.title, sources, config)
        pages.homes[d.path] = spec.path
        listed.append([d.path, spec.path])
    config = {"listed": listed, "about": contents_line([d.title for d in members])}
    pages.add("directory", slugify(title.split(":", 1)[0]), title, [d.path for d in members], config)


def plan_hubs(pages: _Pages, docs: list[SourceDoc], device_specs: list[PageSpec]) -> None:
    """A hub per family of devices, each model with its defining sentence; none for a family whose
    sources say of fewer than two models what they are (it would be a list of links, which the
    index already is, under one model's sentence, which its page opens with)."""
    by_path = {d.path: d for d in docs}
    for slug, title, members in device_families(device_specs):
        found = [defining_sentence(s.config["device"], [by_path[p] for p in s.sources]) for s in members]
        if sum(1 for f in found if f) < 2:
            continue
        models = [[s.path, s.title] + (list(f) if f else []) for s, f in zip(members, found, strict=True)]
        pages.add("hub", slug, title, sorted({f[0] for f in found if f}), {"models": models})


def plan_kb_wide(the_plan: Plan, pages: _Pages, corpus: Corpus) -> None:
    """What only the whole KB shows: the change list (from the plan's timeline of changed
    statements), disagreements between sources, the glossary, and the links between pages."""
    docs, current, said = corpus.docs, corpus.current, corpus.said
    the_plan.disputes = disagreements(current, said, corpus.stems)
    chains = change_entries(the_plan.timeline)
    if chains:
        sources = sorted({s[0] for c in chains for s in c["statements"]})
        about = changes_about(chains, {d.path: d for d in docs})
        pages.add("changes", "changes", "What changed", sources, {"chains": chains, "about": about})
    terms = definitions(current, said)
    subjects = find_subjects(the_plan, docs, [key_of(e[0]) for e in terms], corpus.jobs)
    entities = [p for p in pages.pages if p.type == "entity"]
    at = {p.path for p in entities}
    reference = {key_of(p.title) for p in entities} | {
        k for k, t in subjects.names.targets.items() if t.path in at
    }
    entry_docs = frozenset(m for p in entities for m in p.config.get("members", ())[:1])
    entries = glossary(terms, subjects, frozenset(reference), entry_docs)
    if entries:
        about = "Terms the sources define, A to Z, each in its source's words; a term with a page of its own links to it."
        titled = {
            key_of(p.title): p.path for p in pages.pages if p.type in ("device", "entity", "topic", "hub")
        }
        own = {e[0]: titled[key_of(e[0])] for e in entries if key_of(e[0]) in titled}
        config = {"entries": entries, "pages": own, "about": about}
        pages.add("glossary", "glossary", "Glossary", sorted({e[1] for e in entries}), config)
    link_pages(the_plan, docs, subjects)


def section_keys(spec: PageSpec) -> list[str]:
    """The sources a page quotes or points to, as 'path' or 'path#anchor' (the sections it uses)."""
    keys = list(spec.sources)
    keys += [f"{p}#{a}" for p, a in spec.config.get("sections", ())]
    keys += [f"{p}#{a}" for _, p, a in spec.config.get("gathered", ())]
    keys += [f"{e[1]}#{e[2]}" for e in spec.config.get("entries", ())]
    keys += [f"{s[0]}#{s[1]}" for c in spec.config.get("chains", ()) for s in c["statements"]]
    keys += [f"{d[2]}#{d[3]}" for d in spec.config.get("models", ()) if len(d) > 2]
    return list(dict.fromkeys(keys))


def device_families(devices: list[PageSpec]) -> list[tuple[str, str, list[PageSpec]]]:
    """One overview per product line: devices sharing their first two title words ('FarmBot
    Express', 'FarmBot Express XL'); devices in no such line share one 'Devices' overview."""
    lines: dict[str, list[PageSpec]] = defaultdict(list)
    for d in devices:
        words = d.title.split()
        lines[
            " ".join(words[:2])
            if len(words) > 2 or any(o is not d and o.title.split()[:2] == words[:2] for o in devices)
            else ""
        ].append(d)
    out = []
    loose = lines.pop("", [])
    for name, members in sorted(lines.items()):
        if len(members) < 2:
            loose += members
            continue
        out.append((slugify(f"{name} models"), f"{name} models", members))
    if loose:
        out.append(("devices", "Devices", sorted(loose, key=lambda s: devices.index(s))))
    return out


_DEFINITION = re.compile(
    r"^(?:The\s+|An?\s+)?(?P<term>[A-Z][\w'’-]*(?:\s+[\w'’.-]+){0,3}?)\s+(?:is|are)\s+"
    r"(?P<what>(?:an?|the|one of the|our|[A-Z][\w'’-]*)\s.{10,})$"
)
GLOSSARY_MAX = 120
# what a sentence judges or ranks rather than defines ('Bolting is the number one complaint',
# 'Chives are a great companion plant'): no glossary definition
_VERDICT = re.compile(
    r"^(?:an?|the|one of the|our)\s+(?:very\s+)?(?:great|good|fun|perfect|ideal|easy|excellent|wonderful|"
    r"popular|favou?rite|best|number|first|only|main|biggest|nice|simple|useful|important|key|"
    r"preferred|recommended|default|usual)\b"  # 'Google Chrome is the preferred browser': a choice
    r"|^the\s+\w+\s+(?:most|people)\b"  # 'the plant most people start with'
    r"|;|,\s+so\b",  # a definition that runs on into advice ('a heavy feeder, so keep up the dose')
    re.IGNORECASE,
)


def defining_sentence(device: dict, docs: list[SourceDoc]) -> tuple[str, str, str] | None:
    """(path, anchor, sentence) of the first sentence, among ``docs``, that says what the device
    is, as its own page's lead, else None: neither a fact of which it is the subject ('FarmBot
    Genesis kits include rotary encoders …') nor a sentence that only mentions it ('… (for
    Express XL kits only) …') says what it is."""
    names = (device["title"], *device.get("match", ()))
    for doc in docs:
        for anchor, sentence in sentences_of(doc):
            m = _DEFINITION.match(sentence)
            if m and any(key_of(m.group("term")) == key_of(n) for n in names):
                return doc.path, anchor, sentence
    found = naming_sentences(names, docs)
    if found:
        return found[0].cites[0].path, found[0].cites[0].anchor, found[0].text
    return None


def definitions(docs: list[SourceDoc], said: dict[str, list[tuple[str, str]]]) -> list[list[str]]:
    """[term, path, anchor, definition] of every sentence that says what a named thing is
    ('Chervil is a delicate French herb …' → 'Chervil', 'a delicate French herb …')."""
    out = []
    for doc in docs:
        in_doc = list(said.get(doc.path, ()))
        for n, (anchor, sentence) in enumerate(in_doc):
            m = _DEFINITION.match(sentence)
            if not m or not self_contained(sentence):
                continue
            term = m.group("term").strip()
            if (
                term.split()[0].lower() in STOPWORDS
                or not is_name(term)
                or FIRST_PERSON.search(m.group("what"))
                or _VERDICT.search(m.group("what"))
                or _runs_on(m.group("what"))
                or _said_twice(term, anchor, in_doc[max(0, n - 2) : n + 3])
            ):
                continue
            out.append([term, doc.path, anchor, m.group("what").rstrip(".") + "."])
    return out


def _runs_on(what: str) -> bool:
    """Whether what a sentence says a thing is runs on, after a colon, into what to do ('a heavy
    root grower: after three to four months, check the tank …'): a tip, not a definition. A colon
    that says what the thing is made of stays ('the smallest garden: three pods on a slim base')."""
    _, colon, rest = what.partition(": ")
    return bool(colon) and any(
        clause.split()[0].lower() in guides.INSTRUCTIONS
        for clause in re.split(r"[,:;]\s+", rest)
        if clause.split()
    )


def _said_twice(term: str, anchor: str, near: list[tuple[str, str]]) -> bool:
    """Whether the sentences around a definition, in its section, say what ``term`` is twice ('FarmBot
    is a farmer that works and lives all day and night outside … At the same time, FarmBot is a
    precision CNC machine …'): a figure set against the plain statement, neither a definition."""
    key = key_of(term)
    found = 0
    for a, sentence in near:
        m = _DEFINITION.match(without_opening(sentence)) if a == anchor else None
        found += bool(m and key_of(m.group("term").strip()) == key)
    return found >= 2


def glossary(
    terms: list[list[str]],
    subjects: Subjects,
    entries: frozenset = frozenset(),
    entry_docs: frozenset = frozenset(),
) -> list[list[str]]:
    """The glossary: one definition per term that the wiki has a page or an entry for, or that at
    least two sources use, preferring the document whose title names the term. A reference entry
    with a page of its own (a crop, a plant: ``entries``, its name keys; ``entry_docs``, its
    documents, whose definitions of it open that page) is left to that page and its directory: a
    glossary of 105 crops and 15 words of the trade buried the trade's."""
    found: dict[tuple[str, ...], list[str]] = {}
    for term in sorted(terms, key=lambda e: e[1]):
        key = key_of(term[0])
        if key in entries or term[1] in entry_docs:
            continue
        if key in subjects.names.targets or subjects.counts[key] >= 2:
            found.setdefault(key, term)
    return sorted(found.values(), key=lambda e: e[0].lower())[:GLOSSARY_MAX]


def with_antecedent(doc: SourceDoc, anchor: str, text: str) -> str:
    """``text`` after the sentence before it in its section when it leans on that one ('That
    replaces the 45-day window …' needs '… you now have 60 days …'), else ``text``."""
    if self_contained(text):
        return text
    said = [t for a, t in sentences_of(doc) if a == anchor]
    at = said.index(text) if text in said else 0
    return f"{said[at - 1]} {text}" if at > 0 else text


def changes_about(chains: list[dict], by_path: dict[str, SourceDoc]) -> str:
    """The change list's opening line: every fact that changed, newest first, by its values and
    the title of the source that changed it last ('20% → 15%: When does the low-water alert
    trigger …? · 30 days → 45 days → 60 days: Our 2026 return policy …')."""
    heads = []
    for chain in chains:
        values = " → ".join(quantity(v, chain["unit"]) for v in chain["values"])
        newest = by_path.get(chain["statements"][0][0])
        heads.append(f"{values}: {newest.title}" if newest else values)
    return contents_line(heads)


def change_entries(tl: Timeline) -> list[dict]:
    """One entry per changed fact for wiki/changes.md, newest first: the values in order and the
    statements that give each (change statements and the older statements they outdate)."""
    out = []
    for chain in tl.chains():
        statements: dict[tuple[str, str], list[str]] = {}
        for c in reversed(chain):
            s = c.statement
            said = with_antecedent(s.doc, s.anchor, s.text)
            statements.setdefault((s.doc.path, s.text), [s.doc.path, s.anchor, said, s.date])
        for outdated in tl.outdated.values():
            for change, st in outdated.values():
                if change in chain:
                    statements.setdefault((st.doc.path, st.text), [st.doc.path, st.anchor, st.text, st.date])
        values = [chain[0].old] + [c.new for c in chain]
        ordered = sorted(statements.values(), key=lambda s: s[3], reverse=True)
        out.append({"unit": chain[0].unit, "values": values, "statements": ordered})
    return out


@dataclass
class Subjects:
    """What the wiki has a page or an entry for, and which of those names each document uses."""

    names: Names  # linkable subject names → where they live
    in_doc: dict[str, set]  # layer-1 path → name keys (linkable or not) it uses
    counts: Counter  # name key → documents using it
    titles: dict = field(default_factory=dict)  # title key → where its entry is (links.unique_titles)
    listed: dict[str, set] = field(default_factory=dict)  # layer-1 path → title keys its list items are


def find_subjects(
    the_plan: Plan, docs: list[SourceDoc], extra: list[tuple[str, ...]] = (), jobs: Jobs = 1
) -> Subjects:
    """Anchor every source's entry on its home, and scan every current document once for the
    names of devices and entries (and ``extra`` names, such as glossary terms).

    An entry page's name (a crop) links however it is written; a one-word device name ('Genesis')
    or entry title on a topic page ('Points') links only where written as a name (see ``Names``)."""
    by_path = {d.path: d for d in docs}
    anchors: dict[str, str] = {}
    entries: list[tuple[str, Target, bool]] = []  # (title, where, a thing with a page of its own)
    ids: list[tuple[str, Target, bool]] = []  # the same for entries' record ids ('italian-parsley')
    devices: dict[tuple[str, ...], Target] = {}
    proper: set[tuple[str, ...]] = set()
    for spec in the_plan.pages:
        if spec.type == "topic":
            members = [by_path[p] for p in spec.config["members"] if p in by_path]
            outline = outline_of([(dated_title(d), d) for d in members])
        elif spec.type == "entity":
            members = [by_path[p] for p in spec.config["members"] if p in by_path]
            outline = [x for x in outline_of([(d.title, d) for d in members]) if "#" in x[1]]
            anchors.update(dict.fromkeys((d.path for d in members), ""))
            entries += [(d.title, Target(spec.path), True) for d in members]
            ids += [(d.id.replace("-", " "), Target(spec.path), True) for d in members if _SLUG.match(d.id)]
        elif spec.type == "device":
            specs = [by_path[p] for p in spec.config["spec_paths"] if p in by_path]
            outline = [("Specifications", "")] + [x for x in outline_of([("", d) for d in specs]) if x[0]]
            device = spec.config["device"]
            for name in [device["title"], *device.get("match", ())]:
                key = key_of(name)
                if key:
                    devices.setdefault(key, Target(spec.path))
                    if len(key) == 1:
                        proper.add(key)
            anchors.update(dict.fromkeys((d.path for d in specs), ""))
        else:
            continue
        found = outline_anchors(spec.title, outline)
        for key, anchor in found.items():
            anchors.setdefault(key, anchor)
        if spec.type == "topic":
            entries += [(d.title, Target(spec.path, found.get(d.path, "")), False) for d in members]
    the_plan.anchors = anchors
    titled = {key_of(title) for title, _, _ in entries}  # a record's id names it where no title does:
    entries += [x for x in ids if key_of(x[0]) not in titled]  # 'italian-parsley' in a plant's companions
    by_name: dict[tuple[str, ...], list[Target]] = defaultdict(list)
    things: set[tuple[str, ...]] = set()
    for title, target, thing in entries:
        if is_name(title):
            by_name[key_of(title)].append(target)
            if thing:
                things.add(key_of(title))
    proper |= {k for k in by_name if len(k) == 1 and k not in things}
    probe = Names(
        dict.fromkeys([*devices, *by_name, *extra], Target("")), frozenset(proper), the_plan.compounds
    )
    current = [d for d in docs if d.path not in the_plan.superseded_by]
    titles = unique_titles([(title, target) for title, target, _ in entries])
    found = each(
        lambda d: (*map(probe.keys_in, scanned_text(d)), listed_titles(d.body, titles)),
        current,
        jobs,
    )
    in_doc = {d.path: said | valued for d, (said, valued, _) in zip(current, found, strict=True)}
    listed = {d.path: keys for d, (_, _, keys) in zip(current, found, strict=True) if keys}
    counts: Counter = Counter(k for keys in in_doc.values() for k in keys)
    # how many documents use a name in what they say: a plant's companions ('chives, dill') pair it
    # with others, which makes it no common word
    said_in: Counter = Counter(k for said, _, _ in found for k in said)
    names = dict(devices)
    common = max(2, COMMON_SHARE * len(current))  # a one-word name most documents use ('water')
    for key, targets in sorted(by_name.items()):  # says nothing as a link; 'Genovese Basil' does
        if len(targets) == 1 and key not in names and (len(key) > 1 or said_in[key] <= common):
            names[key] = targets[0]
    the_plan.proper = frozenset(k for k in proper if k in names)
    the_plan.words = frozenset(k for k in the_plan.proper if k not in devices)
    the_plan.compounds = Names(names, compounds=the_plan.compounds).compounds  # those of the names linked
    return Subjects(Names(names, the_plan.proper, the_plan.compounds), in_doc, counts, titles, listed)


_SLUG = re.compile(r"^[a-z][a-z]+(?:-[a-z]+)+$")  # a record id of words ('italian-parsley'), not a number


def scanned_text(doc: SourceDoc) -> tuple[str, str]:
    """What a document says that may name a subject: its title and its text (but a list of links
    only, which no page shows), then its fields' values (a plant's companions 'thai-basil, dill',
    the planters it suits 'grove-6, canopy-12'), not where it is filed ('section:
    v1.1/bom/fasteners-and-hardware')."""
    values = "\n".join(f.value for f in field_facts(doc) if f.key not in TAXONOMY and "/" not in f.value)
    body = doc.body
    if "](" in body and any(is_navigation(x.text) for x in doc.sections):  # no page shows a 'What's next?'
        body = "\n".join(f"{x.heading}\n{x.text}" for x in doc.sections if not is_navigation(x.text))
    return f"{doc.title}\n{plain_inline(body)}", values


def link_pages(the_plan: Plan, docs: list[SourceDoc], subjects: Subjects) -> None:
    """The link graph of a plan: which subject names each page links, 'See also' and backlinks
    (see ``links``)."""
    by_path = {d.path: d for d in docs}
    names = subjects.names
    links: dict[str, dict] = {}
    for spec in the_plan.pages:
        found: set = set()
        if spec.type in ("topic", "entity"):
            for p in spec.config["members"]:
                found |= subjects.in_doc.get(p, set())
            for quoted in (spec.config.get("mentions") or {}).values():
                found |= {k for _, _, text in quoted for k in names.keys_in(text)}
        elif spec.type == "device":
            for p in spec.config["spec_paths"]:
                found |= subjects.in_doc.get(p, set())
            found |= _names_quoted(names, by_path, spec)
        elif spec.type == "guide":
            found |= _names_in_sections(names, by_path, spec.config["sections"])
            found |= {key_of(row[0]) for row in (spec.config.get("table") or {}).get("rows", ())}
        elif spec.type == "hub":
            found |= {key_of(title) for _, title, *_ in spec.config["models"]}
        elif spec.type == "comparison":
            if spec.config["comparison"]["of"] == "devices":
                found |= {key_of(d["title"]) for d in spec.config["devices"]}
            else:
                found |= {key_of(by_path[p].title) for p in spec.sources if p in by_path}
        links[spec.path] = {
            k: names.targets[k]
            for k in sorted(found)
            if k in names.targets and names.targets[k].path != spec.path
        }
        own = sorted(k for k in found if k in names.targets and names.targets[k].path == spec.path)
        if own:  # its own names, which link nowhere but keep a shorter name from linking inside them
            the_plan.own[spec.path] = own
    the_plan.links = links
    the_plan.titled = {
        spec.path: {k: subjects.titles[k] for k in sorted(set().union(*keys))}
        for spec in the_plan.pages
        if (keys := [subjects.listed[p] for p in spec.sources if p in subjects.listed])
    }
    outgoing = {p: {t.path for t in ls.values()} for p, ls in links.items()}
    for spec in the_plan.pages:
        outgoing[spec.path] |= _source_link_targets(the_plan, spec)
    for spec in the_plan.pages:  # pages that point readers to where their sources are shown whole
        if spec.type in ("device", "guide", "hub", "changes"):  # the glossary links its terms' pages
            for key in section_keys(spec):
                target = the_plan.target(*key.partition("#")[::2])
                if target is not None:
                    outgoing[spec.path].add(target.path)
        if spec.type == "hub":
            outgoing[spec.path] |= {path for path, *_ in spec.config["models"]}
        if spec.type == "directory":
            outgoing[spec.path] |= {page for _, page in spec.config["listed"]}
        outgoing[spec.path] |= noted_targets(the_plan, spec)
        outgoing[spec.path] |= set((spec.config.get("pages") or {}).values())  # the glossary's terms
        outgoing[spec.path].discard(spec.path)
    series = {
        s.path: s.title.split(":", 1)[0].rstrip(" 0123456789") for s in the_plan.pages if s.type == "topic"
    }
    parts = Counter(series.values())
    series = {p: s for p, s in series.items() if parts[s] > 1}
    families = {s.path: s.config["family"] for s in the_plan.pages if s.config.get("family")}
    the_plan.see_also = rank_see_also(
        [s.path for s in the_plan.pages],
        {s.path: own_sources(s) for s in the_plan.pages},
        {p: set(ls) for p, ls in links.items()},
        outgoing,
        series,
        families,
        akin=same_subject(the_plan, by_path),
    )
    for spec in the_plan.pages:  # an overview already lists its models
        if spec.type == "hub":
            listed = {path for path, *_ in spec.config["models"]}
            the_plan.see_also[spec.path] = tuple(p for p in the_plan.see_also[spec.path] if p not in listed)
    kinds = {s.path: s.type for s in the_plan.pages}
    for spec, named in devices_named(the_plan, by_path).items():  # an entry suited to the Canopy 12
        the_plan.see_also[spec] = tuple(  # alone does not send readers to other planters
            p for p in the_plan.see_also[spec] if p in named or kinds[p] != "device"
        )
    for p, related in the_plan.see_also.items():
        outgoing[p] = outgoing[p] | set(related)
    the_plan.titles = {s.path: s.title for s in the_plan.pages}
    the_plan.backlinks = ranked_backlinks(the_plan, backlinks(outgoing), links)


AKIN = 3  # topics, at most, whose entries' titles name another topic's subject: beyond, a common word


def same_subject(the_plan: Plan, by_path: dict[str, SourceDoc]) -> dict[str, set[str]]:
    """Topic pages on one subject from different sources, each to the others: 'Returns' (two
    posts) and 'Orders and policies', which holds 'What is the return policy?'. A topic's title
    words all in an entry title of another topic (and of no more than ``AKIN`` of them) relate
    the two."""
    topics = [s for s in the_plan.pages if s.type == "topic"]
    holding: dict[str, set[str]] = defaultdict(set)  # a title word → the topics whose entries' titles hold it
    for s in topics:
        for m in s.config["members"]:
            for word in key_of(by_path[m].title) if m in by_path else ():
                holding[word].add(s.path)
    out: dict[str, set[str]] = defaultdict(set)
    for s in topics:
        subject = set(key_of(s.title))
        found = set.intersection(*(holding.get(w, set()) for w in subject)) - {s.path} if subject else set()
        if len(found) <= AKIN:
            for q in found:
                out[s.path].add(q)
                out[q].add(s.path)
    return out


def devices_named(the_plan: Plan, by_path: dict[str, SourceDoc]) -> dict[str, set[str]]:
    """Per entry page whose record's fields name devices ('suitable_devices: [canopy-12]'), the
    pages of those devices."""
    devices = {
        key_of(name): spec.path
        for spec in the_plan.pages
        if spec.type == "device"
        for name in (spec.config["device"].get("id", ""), spec.config["device"]["title"])
        if name
    }
    out: dict[str, set[str]] = {}
    for spec in the_plan.pages:
        doc = by_path.get(spec.config["members"][0]) if spec.type == "entity" else None
        values = [v for value in (doc.meta.values() if doc else ()) for v in _listed(value)]
        named = {devices[k] for v in values if (k := key_of(v)) in devices}
        if named:
            out[spec.path] = named
    return out


def _listed(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [value] if isinstance(value, str) else []


_KIN = ("guide", "device", "comparison", "hub", "topic", "directory", "entity", "glossary", "changes")


def ranked_backlinks(the_plan: Plan, found: dict[str, tuple[str, ...]], links: dict[str, dict]) -> dict:
    """The pages that link to each page, ranked for its 'Linked from': those that name it in their
    text first, then by kind (guides and device pages before topic pages and entries), then those
    whose title shares a word with its own ('Green Zebra Tomato' on the tomato's page, before the
    peppers whose companions name it), then by title. The rendering lists the first
    ``LINKED_FROM`` that the page does not link itself (which only the rendering knows: its table
    cells' links are not planned)."""
    kinds = {s.path: s.type for s in the_plan.pages}
    named = {p: {t.path for t in ls.values()} for p, ls in links.items()}
    out = {}
    for page, sources in found.items():
        own = set(key_of(the_plan.titles.get(page, "")))
        ranked = sorted(
            sources,
            key=lambda q: (
                page not in named.get(q, ()),
                _KIN.index(kinds[q]) if kinds.get(q) in _KIN else len(_KIN),
                not own & set(key_of(the_plan.titles.get(q, ""))),
                the_plan.titles.get(q, q).lower(),
                q,
            ),
        )
        out[page] = tuple(ranked)
    return out


def shown_links(docs: list[SourceDoc], linked: dict[str, tuple]) -> dict[str, tuple]:
    """The sources' own links (``links.source_links``) but those of a section no page shows, a
    list of links only ('What's next?': it orders a topic's sources, and says nothing)."""
    by_path = {d.path: d for d in docs}
    out = {}
    for path, found in linked.items():
        hidden = {s.anchor for s in by_path[path].sections if is_navigation(s.text)}
        kept = tuple(x for x in found if x[0] not in hidden)
        if kept:
            out[path] = kept
    return out


def _source_link_targets(the_plan: Plan, spec: PageSpec) -> set[str]:
    """The pages the sources' own links on a page lead to (see ``links.source_links``): of every
    section of a topic's or an entry's own sources, of the sections another page quotes, and of
    a sentence quoted alone (one naming an entry, a glossary's definition), the links it holds."""
    mentioned: dict[str, list[str]] = {}  # a section the page quotes a sentence of → those sentences
    quoted_alone = [x for found_in in (spec.config.get("mentions") or {}).values() for x in found_in]
    quoted_alone += [tuple(e[1:4]) for e in spec.config.get("entries", ()) if spec.type == "glossary"]
    for p, a, text in quoted_alone:
        mentioned.setdefault(f"{p}#{a}", []).append(" ".join(plain_inline(text).split()))
    members = set(spec.config.get("members") or ())
    whole = {p for p in spec.sources if p in members or not any(k.startswith(p + "#") for k in mentioned)}
    whole = whole if spec.type in ("topic", "entity") else set()
    quoted = set(section_keys(spec))
    out = set()
    for path in spec.sources:
        for anchor, _, to_path, to_anchor, lead_up in the_plan.source_links.get(path, ()):
            key = f"{path}#{anchor}"
            said = mentioned.get(key)
            shown = any(lead_up in x for x in said) if said is not None else key in quoted
            if path in whole or shown:
                target = the_plan.target(to_path, to_anchor)
                if target is not None and target.path != spec.path:
                    out.add(target.path)
    return out


def _names_in_sections(names: Names, by_path: dict[str, SourceDoc], sections) -> set:
    """The names the sections (path, anchor) use."""
    found: set = set()
    for p, a in sections:
        section = by_path[p].section(a) if p in by_path else None
        if section is not None:
            found |= names.keys_in(plain_inline(section.text))
    return found


def _names_quoted(names: Names, by_path: dict[str, SourceDoc], spec: PageSpec) -> set:
    """The names a device page uses in what it quotes of each section it gathers: what of it is
    about the device (``gather.about_units``), a long table aside (it is linked, not quoted). A
    change log's line naming the 'Raspberry Pi Zero 2 W' is no link of the Express XL's page."""
    device = spec.config["device"]
    found: set = set()
    for facet, p, a in spec.config.get("gathered", ()):
        section = by_path[p].section(a) if p in by_path else None
        for b in about_units(by_path[p], section, device, facet) if section is not None else ():
            if b.kind != "table" or len(b.rows) <= MAX_LIST:
                said = [b.text, *(x.text for x in b.sentences), *(c.text for row in b.rows for c in row)]
                found |= names.keys_in(plain_inline(" ".join(said)))
    return found


def noted_targets(the_plan: Plan, spec: PageSpec) -> set[str]:
    """The pages a page's notes link to: where the fact that superseded one of its statements is
    stated, and where a source that disagrees with one of them is shown; a note stands only under
    a statement the page quotes (``shows``)."""
    keys = section_keys(spec)
    paths = {key.partition("#")[0] for key in keys}
    shown = shows(spec, set(keys))
    quoted = _quotes(spec)
    points = [
        (change.statement.doc.path, change.statement.anchor)
        for path in paths
        for change, said in the_plan.timeline.outdated.get(path, {}).values()
        if shown(said.doc.path, said.anchor) and quoted(said.doc, said.anchor, said.text)
    ]
    points += [
        (other.doc.path, other.anchor)
        for d in the_plan.disputes
        for this, other in ((d.a, d.b), (d.b, d.a))
        if this.doc.path in paths
        and shown(this.doc.path, this.anchor)
        and quoted(this.doc, this.anchor, this.text)
    ]
    return {t.path for t in (the_plan.target(*p) for p in points) if t is not None}


def _quotes(spec: PageSpec) -> Callable[[SourceDoc, str, str], bool]:
    """Whether a page quotes a statement of a section it shows: a device page quotes its spec
    pages whole and, of another source's section, what ``gather.about_units`` takes of it; other
    pages all of it."""
    device = spec.config.get("device") if spec.type == "device" else None
    if device is None:
        return lambda doc, anchor, text: True
    own = set(spec.config.get("spec_paths", ()))
    facets = {(p, a): f for f, p, a in spec.config.get("gathered", ())}
    said: dict[tuple[str, str], set[str]] = {}

    def quoted(doc: SourceDoc, anchor: str, text: str) -> bool:
        key = (doc.path, anchor)
        if doc.path in own or key not in facets:
            return doc.path in own
        if key not in said:
            section = doc.section(anchor)
            blocks = about_units(doc, section, device, facets[key]) if section is not None else []
            said[key] = {" ".join(plain_inline(x.text).split()) for b in blocks for x in b.sentences}
        return " ".join(text.split()) in said[key]

    return quoted


def shows(spec: PageSpec, keys: set[str]) -> Callable[[str, str], bool]:
    """Whether a page quotes a section (path, anchor): a topic or an entry shows its sources
    whole, a device page its spec pages whole; other pages the sections they chose (``keys``,
    its ``section_keys``)."""
    if spec.type in ("topic", "entity"):
        return lambda path, anchor: path in spec.sources
    whole = set(spec.config.get("spec_paths", ()))
    return lambda path, anchor: path in whole or f"{path}#{anchor}" in keys


def topic_rules(configured: tuple[TopicRule, ...], pool: list[SourceDoc]) -> list[TopicRule]:
    """The configured topic rules, then a default rule for every source that has none, grouping
    it by its most informative categorical field, else by shared title words."""
    rules = list(configured)
    named = {r.source for r in configured}
    for source in sorted({d.source for d in pool} - named):
        rules.append(TopicRule(source, group_field([d for d in pool if d.source == source])))
    return rules


def has_content(doc: SourceDoc) -> bool:
    """Whether a home could show anything of the document: a field worth showing, or text with
    letters beyond the list items that restate its fields (a details list of unknown values)."""
    if field_facts(doc) or prose_fields(doc):
        return True
    for section in doc.sections:
        for line in readable(section.text).split("\n"):
            text = plain_inline(_IMAGE.sub("", line)).strip().lstrip("-*+> ").strip()
            if re.search(r"[^\W\d_]", text) and restated_field(doc, text) is None:
                return True
    return False
