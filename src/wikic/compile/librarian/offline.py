"""The offline librarian: deterministic, no network, extractive.

Pages are assembled from quoted source sentences and minimally templated structured fields, so
every sentence is supported by construction (and still verified like any other backend's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from ...core.bm25 import tokens
from ...core.facts import facts as field_facts
from ...core.markdown import Section, plain_inline, unnumbered
from ...core.models import SourceDoc
from ...core.words import listing
from ..draft import SOURCE_LABEL, Block, Cell, Citation, Draft, Sentence, relative
from ..gather import FACET_HEADINGS, FACETS, MAX_LIST, WHOLE_FACETS, about_units
from ..guides import PHASE_TITLES
from ..pageplan import CONTENTS_PREFIX
from ..safety import suspicious
from ..timeline import quantity
from ..versions import current_view
from .base import Failure, PageJob, Usage
from .extract import (
    aliases,
    compared_facts,
    comparison_table,
    dated_title,
    described_section,
    device_facts,
    facts_comparison,
    facts_table,
    filed_under,
    home_blocks,
    in_context,
    keywords,
    naming_sentences,
    pick_lead,
    section_content,
    self_contained,
    stands_alone,
    subject_sentences,
    summary_of,
    superseded_notes,
    taxonomy_fields,
)


class OfflineLibrarian:
    name = "offline"
    model = "extractive-143"  # bumped when what it extracts changes, so pages are rewritten
    deterministic = True
    can_repair = False

    def __init__(self) -> None:
        self.usage = Usage()

    def write(self, jobs: list[PageJob], progress: Callable[[int], None] | None = None) -> list[Draft | None]:
        drafts = []
        for job in jobs:
            drafts.append(write_page(job))
            if progress:
                progress(1)
        return drafts

    def repair(self, job: PageJob, draft: Draft, failures: list[Failure]) -> Draft | None:
        return None


def write_page(job: PageJob) -> Draft:
    kind = job.spec.type
    if kind == "device":
        return _device(job)
    if kind == "comparison":
        return _comparison(job)
    if kind == "guide":
        return _guide(job)
    if kind == "hub":
        return _hub(job)
    if kind == "glossary":
        return _glossary(job)
    if kind == "changes":
        return _changes(job)
    if kind == "entity":
        return _entity(job)
    if kind == "directory":
        return _directory(job)
    return _topic(job)


DERIVED_TYPES = (
    "hub",
    "glossary",
    "changes",
    "directory",
)  # pages made from the plan, the same for every backend


def current_docs(job: PageJob) -> list[SourceDoc]:
    """The page's current documents, without the sections a newer document replaces."""
    return [current_view(d, job.superseded_by) for p, d in job.docs.items() if p not in job.superseded_by]


def older_versions(job: PageJob, doc: SourceDoc) -> list[SourceDoc]:
    """Documents on this page that ``doc`` replaces, directly or through a chain, newest first;
    a section it replaces comes as its document reduced to that section."""
    olds = job.replaced.get(doc.path, [])
    return sorted(olds, key=lambda d: str(d.meta.get("updated_at", "")), reverse=True)


def fact_settings(job: PageJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(show, hide): the frontmatter fields a page shows as facts (``facts:`` in wiki.yaml)."""
    cfg = job.spec.config.get("facts") or {}
    return tuple(cfg.get("show") or ()), tuple(cfg.get("hide") or ())


def fact_units(job: PageJob) -> dict[str, str]:
    """The units of fields whose names do not say them (``facts.units`` in wiki.yaml)."""
    return dict((job.spec.config.get("facts") or {}).get("units") or job.spec.config.get("units") or {})


def _finish(
    job: PageJob, body: list[Block], lead: list[Sentence] | None = None, names=(), opening=(), summary=""
) -> Draft:
    """A draft that opens with what the page is: the plan's ``about`` line (a guide's or a
    comparison's purpose, a topic's contents; the schema's words, shown as such), then ``lead``
    sentences quoted from the body (they stay where they are). An ``opening`` (a topic's overview,
    shown whole) comes before the about line. The summary comes from both (or from ``summary``,
    what the page's index line says instead), the keywords from the page's own words."""
    about = job.spec.config.get("about") or ""
    purpose = (job.spec.config.get("guide") or {}).get("purpose") or ""  # when the whole line is long
    lead = list(lead or ())
    blocks = [*opening, *([Block("about", text=about)] if about else [])] + (
        [Block("para", sentences=tuple(lead))] if lead else []
    )
    blocks += body
    # 'Arduino Firmware: Stall Detection Hardware · …', not a line of headings that names nothing
    described = (
        f"{job.spec.title}: {about.removeprefix(CONTENTS_PREFIX)}"
        if about.startswith(CONTENTS_PREFIX)
        else about
    )
    opening = next((b.sentences[0].text for b in body[:1] if b.kind == "para"), "")
    return Draft(
        job.spec.title,
        summary_of([summary] if summary else [s.text for s in lead] + [described, purpose, opening]),
        page_keywords(job, blocks, names),
        tuple(blocks),
        job.related,
    )


MIN_SAID = 2  # times a page says a word, at least, for it to be one of its keywords (headings: three)


def page_keywords(job: PageJob, blocks: list[Block], names=()) -> tuple[str, ...]:
    """Up to eight words an agent would search for: the page's subject names, then the words of
    its entries' headings and sentences that are frequent here and rare elsewhere. Fact tables are
    not mined (their values include every alias a record lists), nor are names of people. An
    entry's heading is level 2, or 3 on a guide in phases (under 'What to do' …)."""
    level = 3 if any(b.kind == "heading" and b.text in PHASE_TITLES.values() for b in blocks) else 2
    entries = [
        b.text
        for b in blocks
        if b.kind == "heading"
        and b.level == level
        and b.text not in FIXED_HEADINGS
        and not b.text.startswith(FIXED_PREFIXES)
    ]
    texts = [job.spec.title, *entries, *entries, *entries]  # the page's entries (a crop, an FAQ) weigh thrice
    # as read: a link's target ('../entries/…') is no word of the page
    texts += [
        plain_inline(s.text) for b in blocks if b.kind in ("para", "bullets", "steps") for s in b.sentences
    ]
    return keywords(texts, n=KEYWORDS, extra=tuple(names), vocabulary=job.vocabulary, said=MIN_SAID)


KEYWORDS = 8
# the wiki's own headings (not the sources'): they say nothing about one page's subject
GLOSSARY_TERMS = "Terms"
GLOSSARY_SUBJECTS = "Subjects with a page of their own"
FIXED_HEADINGS = (
    "Specifications",
    "In the knowledge base",
    "At a glance",
    "Elsewhere in the knowledge base",
    "Filed under",
    GLOSSARY_TERMS,
    GLOSSARY_SUBJECTS,
    *PHASE_TITLES.values(),
    *FACETS,
)
FIXED_PREFIXES = tuple(h.partition("{}")[0] for h in FACET_HEADINGS.values() if "{}" in h)


def _topic(job: PageJob) -> Draft:
    """Each member source is at home here: rendered whole under its own heading, with its fact
    list, and followed by what its older versions said."""
    blocks: list[Block] = []
    members = job.spec.config.get("members") or list(job.docs)
    docs = [
        current_view(job.docs[p], job.superseded_by)
        for p in members
        if p in job.docs and p not in job.superseded_by
    ]
    show, hide = fact_settings(job)
    units = fact_units(job)
    filed = []
    opening: list[Block] = []  # the overview that says what the page is, under no heading of its own
    for doc in docs:
        taxonomy = taxonomy_fields(doc)
        if doc.path == job.spec.config.get("opening") and not opening:
            # the namesake's opening opens the page; its own sections follow, level with the others
            shown = home_blocks(doc, 1, show, hide + taxonomy, units)
            at = next((n for n, b in enumerate(shown) if b.kind == "heading"), len(shown))
            opening = shown[:at]
            blocks += shown[at:] + superseded_notes(older_versions(job, doc), doc)
        else:
            shown = home_blocks(doc, 2, show, hide + taxonomy, units)
            shown += superseded_notes(older_versions(job, doc), doc)
            blocks.append(Block("heading", text=dated_title(doc), level=2))
            blocks.extend(shown)
        kept = set(taxonomy) - set(hide)
        filed.append((doc, [f for f in field_facts(doc, show, hide, units) if f.key in kept]))
    tables = filed_under(filed)
    if tables:  # categories and tags once for the page, not after every entry
        blocks += [Block("heading", text="Filed under", level=2), *tables]
    return _finish(job, blocks, opening=opening)


def _entity(job: PageJob) -> Draft:
    """One reference entry (a crop, a plant) at home on its own page: all of it (its fields as a
    fact list with their units, every section), what its older versions said, and the sentences
    of other sources that name it, quoted. It opens with its own opening paragraph when that says
    what the entry is; else a lead quotes the sentence that does."""
    path = job.spec.config["members"][0]
    doc = current_view(job.docs[path], job.superseded_by)
    show, hide = fact_settings(job)
    body = home_blocks(doc, 1, show, hide, fact_units(job)) + superseded_notes(older_versions(job, doc), doc)
    quoted = (job.spec.config.get("mentions") or {}).get(path) or []
    sentences = tuple(Sentence(text, (Citation(p, a),)) for p, a, text in quoted if p in job.docs)
    if sentences:
        body += [
            Block("heading", text="Elsewhere in the knowledge base", level=2),
            Block("bullets", sentences=sentences),
        ]
    if body and body[0].kind == "para" and described_section(doc) is not None:
        lead: list[Sentence] = []  # the record's own description opens the page, whole
    else:
        body, lead = opening_first(body, job)
    if not lead and not (body and body[0].kind == "para") and job.spec.config.get("filed"):
        # an entry of fields only: the plan says what it is (its fact list follows; no lead repeats it)
        job = replace(
            job, spec=replace(job.spec, config={**job.spec.config, "about": job.spec.config["filed"]})
        )
    draft = _finish(job, body, lead, names=(job.spec.title,))
    # an entry is looked up by its names (its title and the other names its record gives it), not
    # by the words of its description ('grown on logs' is no reason to open a mushroom's page)
    names = [job.spec.title, *aliases(doc)]
    return replace(
        draft,
        summary=entry_summary(job.spec.title, body),
        keywords=keywords(names, n=KEYWORDS, extra=tuple(dict.fromkeys(names))),
    )


def entry_summary(title: str, body: list[Block]) -> str:
    """An entry's index line says what its page holds, from its fact labels and headings ('Carrot:
    binomial name, common names, height (cm) … and description'), so that a question is sent
    there for the entry it names, not for a word of its description."""
    labels = [r[0].text for b in body if b.kind == "table" and b.header == ("Fact", "Value") for r in b.rows]
    heads = [
        b.text
        for b, after in zip(body, [*body[1:], None], strict=True)
        if b.kind == "heading"
        and b.level == 2
        and b.text not in FIXED_HEADINGS
        and not (after is not None and after.kind == "table" and after.header == ("Fact", "Value"))
    ]  # the heading of the fact list says no more than its labels
    held = [x[:1].lower() + x[1:] for x in dict.fromkeys([*labels, *heads])]
    if not held:
        return title
    return summary_of([f"{title}: {listing(held)}."])


def facts_sentence(table: Block, rows: int = 3) -> list[Sentence]:
    """The first rows of a fact list as one cited sentence ('Binomial name: Ocimum basilicum;
    Height: 60; Row spacing: 30')."""
    found = [(label.text, value) for label, value in table.rows[:rows] if value.cites]
    if not found:
        return []
    cites = tuple(dict.fromkeys(c for _, v in found for c in v.cites))
    # the label as the source writes it: 'Height: 25', not 'Height (cm): 25' (the unit is the schema's)
    said = [(re.sub(r"\s*\([^()]{1,8}\)$", "", label), v) for label, v in found]
    return [Sentence("; ".join(f"{label}: {v.text}" for label, v in said), cites)]


# 'Also called Tuscan kale, lacinato kale has …' reads on its own; 'It is …' does not
_NAMES_ITSELF = re.compile(r"^(?:also|often|sometimes)\s+(?:called|known)\b", re.IGNORECASE)


def opening_first(body: list[Block], job: PageJob) -> tuple[list[Block], list[Sentence]]:
    """An entry's body with its opening paragraph (the text before its first heading) moved above
    its fact tables, and the lead: none when that paragraph opens with a sentence that reads on
    its own (it is the lead), else the sentence ``pick_lead`` quotes from the body."""
    first_heading = next((i for i, b in enumerate(body) if b.kind == "heading"), len(body))
    opening = next((i for i in range(first_heading) if body[i].kind == "para"), None)
    first = body[opening].sentences[0].text if opening is not None else ""
    safe = opening is not None and not any(suspicious(s.text) for s in body[opening].sentences)
    if first and safe and (self_contained(first, job.spec.title) or _NAMES_ITSELF.match(first)):
        return [body[opening]] + body[:opening] + body[opening + 1 :], []
    return body, pick_lead(body, job.spec.title, job.vocabulary, limit=1)


def _directory(job: PageJob) -> Draft:
    """A group's entries, each linked to its page with the sentence that opens it (or its first
    facts), in title order."""
    show, hide = fact_settings(job)
    items = []
    for path, page in job.spec.config["listed"]:
        doc = job.docs.get(path)
        if doc is None:
            continue
        doc = current_view(doc, job.superseded_by)
        entry = replace(job, spec=replace(job.spec, title=doc.title))
        blocks, opening = opening_first(entry_opening(doc, show, hide, fact_units(job)), entry)
        if blocks and blocks[0].kind == "para" and (not opening or described_section(doc) is not None):
            opening = [blocks[0].sentences[0]]  # its opening paragraph reads on its own
        if not opening:  # an entry of fields only: its first fact
            table = next((b for b in blocks if b.kind == "table"), None)
            opening = facts_sentence(table) if table is not None else []
        link = f"[{doc.title}]({relative(page, job.spec.path)})"
        if opening:
            items.append(Sentence(f"{link} — {opening[0].text}", opening[0].cites))
    return _finish(job, [Block("bullets", sentences=tuple(items))] if items else [])


def entry_opening(doc: SourceDoc, show, hide, units) -> list[Block]:
    """What an entry's page opens with, without rendering all of it: its long text fields, its
    fact list and its first section (what ``home_blocks`` puts first)."""
    first = described_section(doc) or next((s for s in doc.sections if section_content(doc, s)), None)
    kept = replace(doc, sections=(first,) if first else ())
    return home_blocks(kept, 1, show, hide, units)


def _device(job: PageJob) -> Draft:
    """The device's spec pages are at home here, whole, after a specifications table; then what
    every other source says about it, by facet (set-up, use, troubleshooting …), quoted in whole
    units, each followed by a link to where it stands, labelled with its heading. The lead quotes
    the sentence that says what the device is."""
    device = job.spec.config["device"]
    names = tuple(device.get("match") or ()) + (device["title"],)
    spec_paths = [p for p in job.spec.config.get("spec_paths", ()) if p in job.docs]
    facts = device_facts(device, current_docs(job))
    show, hide = fact_settings(job)
    shown = hide + tuple(k for k, _, _ in facts)
    body: list[Block] = []
    for path in spec_paths:
        doc = current_view(job.docs[path], job.superseded_by)
        body.extend(home_blocks(doc, 1, show, shown, fact_units(job)))
        body.extend(superseded_notes(older_versions(job, doc), doc))
    opening: list[Block] = []
    has: list[Sentence] = []
    if body:
        body, lead = opening_first(body, job)
        opening, body = (body[:1], body[1:]) if not lead else ([], body)
    else:  # no spec page: the sentence of another source that says what the device is, if any; a
        # sentence of which it is the subject, saying what it has ('FarmBot Genesis kits include
        # rotary encoders …'), after the line that says what the page holds
        others = [d for d in current_docs(job) if d.path not in spec_paths]
        lead = naming_sentences(names, others)
        has = [] if lead else subject_sentences(names, others)
    table = facts_table(in_context(facts, job.docs, names, set(spec_paths)))
    own = opening + body  # the device's own pages: its keywords come from these
    gathered, tables = gathered_blocks(job, device)
    if table is not None:
        specs = gathered.pop("Specifications", [])  # other sources' specifications join the table's
        body = [Block("heading", text="Specifications", level=2), table, *specs, *body]
    body = opening + body
    for facet in FACETS:
        if gathered.get(facet):
            body += [
                Block("heading", text=FACET_HEADINGS[facet].format(device["title"]), level=2),
                *gathered[facet],
            ]
    quoted = {path for _, path, _ in job.spec.config.get("gathered", ())}
    others = [d for d in current_docs(job) if d.path not in spec_paths and d.path not in quoted]
    listed = [(h[0], d.title) for d in others if (h := job.nav.home(d.path)) is not None][:MORE_SOURCES]
    listed = list(dict.fromkeys(tables + listed))
    if listed:  # sources about the device that quote nothing naming it: where to read them
        body += [Block("heading", text="In the knowledge base", level=2), Block("links", links=tuple(listed))]
    # its index line says what the page holds, not the one thing the lead says it has
    about = (job.spec.config.get("about") or "") if has else ""
    draft = _finish(job, body, lead or has, names=(device["title"],), summary=about)
    # keywords: its names and what its own pages cover ('water tank', 'pods and plant height'),
    # not what others say of it in passing
    heads = [b.text.lower() for b in own if b.kind == "heading" and len(b.text.split()) <= 4]
    names = (device["title"], *device.get("match", ()), *heads)
    return replace(draft, keywords=page_keywords(job, own, names=names))


MORE_SOURCES = 10  # sources about a device listed by title when none of their sentences names it


def gathered_blocks(job: PageJob, device: dict) -> tuple[dict[str, list[Block]], list[tuple[str, str]]]:
    """What the device's other sources say about it, by facet: each section's units under its
    heading (and its document's title), then a link to the page where it is shown whole; and
    the sections that are only a long table (a packing list, a pin table), as links to where
    they are shown whole: a device page is read to the end, a table of 25 rows is looked up."""
    by_facet: dict[str, list[Block]] = {}
    brief: dict[str, list[Sentence]] = {}
    brief_homes: dict[str, dict[str, str]] = {}  # where those sentences stand, page by page
    tables: list[tuple[str, str]] = []
    # what a newer source changed is history, which the statement's home notes as such; a page
    # that gathers what holds of the device leaves it out ('… still triggers at 20%' of the Sprout 3)
    stale = {" ".join(o[0].split()) for o in job.nav.outdated}
    for facet, path, anchor in job.spec.config.get("gathered", ()):
        if path in job.superseded_by or path not in job.docs:
            continue
        doc = current_view(job.docs[path], job.superseded_by)
        section = doc.section(anchor)
        units = about_units(doc, section, device, facet) if section is not None else []
        units = [u for u in (_without(u, stale) for u in units) if u is not None]
        home = _home(job, doc, anchor)
        heading = _shown_heading(doc, section, device) if section is not None else doc.title
        if home is not None and any(_long_table(u) for u in units):
            units = [u for u in units if not _long_table(u)]
            if not [u for u in units if u.kind != "heading"]:
                tables.append((home[0], heading))
                continue
        if not units:
            continue
        single = len(units) == 1 and units[0].kind == "para" and len(units[0].sentences) == 1
        if single and facet not in WHOLE_FACETS:  # a step keeps its heading: it names what to do
            if not stands_alone(units[0].sentences[0].text, device["title"]):
                continue  # 'It does not cover cracks …' away from its warranty, 'I cook a lot …'
            brief.setdefault(facet, []).append(units[0].sentences[0])
            if home is not None:
                brief_homes.setdefault(facet, {}).setdefault(home[0].partition("#")[0], home[1])
            continue
        blocks = by_facet.setdefault(facet, [])
        blocks += _headed(job, doc, anchor, heading, 3, units)
    for facet, said in brief.items():  # a sentence in passing needs no heading and trail of its own
        by_facet.setdefault(facet, []).extend(
            [Block("heading", text=IN_PASSING, level=3), Block("bullets", sentences=tuple(said))]
        )
        pages = tuple((brief_homes.get(facet) or {}).items())
        if pages:
            by_facet[facet].append(Block("links", text="In context", links=pages))
    return by_facet, tables


def _without(block: Block, said: set[str]) -> Block | None:
    """A paragraph or list less the sentences in ``said``; None when nothing is left."""
    if block.kind not in ("para", "bullets") or not said:
        return block
    kept = tuple(s for s in block.sentences if " ".join(s.text.split()) not in said)
    if len(kept) == len(block.sentences):
        return block
    return replace(block, sentences=kept) if kept else None


def _shown_heading(doc: SourceDoc, section: Section, device: dict) -> str:
    """A gathered section's heading on the device page ('Packing list (Express)')."""
    heading = doc.title if not section.heading or section.heading == doc.title else section.heading
    return _about(section, heading, (device["title"], *device.get("match", ())))


def _long_table(block: Block) -> bool:
    return block.kind == "table" and len(block.rows) > MAX_LIST


IN_PASSING = "Other mentions"


def _headed(
    job: PageJob, doc: SourceDoc, anchor: str, heading: str, level: int, units: list[Block], title: str = ""
) -> list[Block]:
    """A source's section under its own heading, kept short for a reader to scan: the document's
    title goes on a sub-line, a trail to where the section is shown whole ('From: Assembly › High
    Level Overview'), not into the heading ('Tracks (High Level Overview)'); a section headed with
    the title itself ends with that link instead. Without a home, the title stays in the heading."""
    home = _home(job, doc, anchor)
    if heading == doc.title:
        return [Block("heading", text=heading, level=level), *units, *_in_context(home)]
    heading = unnumbered(heading)  # one step shown alone: its number placed it in a procedure not shown
    if home is None:
        return [Block("heading", text=f"{heading} ({doc.title})", level=level), *units]
    trail = [(home[0].partition("#")[0], home[1])] if home[1] != doc.title else []
    source = Block("links", text=SOURCE_LABEL, links=(*trail, (home[0], title or doc.title)))
    return [Block("heading", text=heading, level=level), source, *units]


_VERSION = re.compile(r"\bv?\d+(?:\.\d+)*\+?(?!\w)")
_KIT = re.compile(r"(?i)\b(?:kits?|models?|versions?|owners|users|bots?|devices?|only)\b")  # 'Genesis kits'


def _about(section, heading: str, names: tuple[str, ...]) -> str:
    """A section headed with the device's name alone ('Genesis' under 'Step 5: Try a wired
    Ethernet connection'), read on that device's page, under the heading it is a variant of: 'Try
    a wired Ethernet connection (Genesis)', 'Packing list (Express)', 'Insert the microSD card into
    the Raspberry Pi (Genesis kits)'. Any other heading is kept."""
    if len(section.path) < 2:
        return heading
    rest = " ".join(plain_inline(heading).split())
    for name in sorted(names, key=len, reverse=True):
        rest = re.sub(rf"(?i)\b(?:farmbot\s+)?{re.escape(name)}\b", " ", rest)
    if _KIT.sub(" ", _VERSION.sub(" ", rest)).strip():
        return heading  # it says more than which model ('Results of Camera Testing …')
    return f"{unnumbered(section.path[-2])} ({heading})"


def _home(job: PageJob, doc: SourceDoc, anchor: str) -> tuple[str, str] | None:
    """Where a section is shown whole (its document's home when the section has none of its own)."""
    return job.nav.home(doc.path, anchor) or job.nav.home(doc.path)


def _in_context(home: tuple[str, str] | None) -> list[Block]:
    return [Block("links", text="See in context", links=(home,))] if home is not None else []


def _comparison(job: PageJob) -> Draft:
    comp = job.spec.config["comparison"]
    fields = tuple(job.spec.config.get("fields") or comp["fields"])
    if comp["of"] == "devices":
        columns, rows = compared_facts(job.spec.config["devices"], list(job.docs.values()), fields)
        table = facts_comparison(rows, tuple(columns))
    else:
        table = comparison_table([(d.title, d) for d in job.docs.values()], fields, fact_units(job))
    # its index line: what it sets side by side, not the rows it leaves out
    shown = job.spec.config.get("summary") or ""
    return _finish(job, [table], names=[r[0].text for r in table.rows][:3], summary=shown)


def table_lead(table: Block, rows: int = 2) -> list[Sentence]:
    """The first rows of a comparison, each as one cited sentence of its filled cells
    ('Alpine Strawberry — Difficulty: medium; Light hours: 14'); a row of a fact table as its
    fact ('Product: express')."""
    out = []
    if len(table.header) == 2 and table.header[1] == "Value":
        for label, value in table.rows[:rows]:
            out.append(Sentence(f"{label.text}: {value.text}", value.cites))
        return out
    for row in table.rows[:rows]:
        parts = [f"{h}: {c.text}" for h, c in zip(table.header[1:], row[1:], strict=False) if c.cites]
        cites = tuple(dict.fromkeys(x for c in row[1:] for x in c.cites))
        if parts:
            out.append(Sentence(f"{row[0].text} — " + "; ".join(parts), cites))
    return out


def _guide(job: PageJob) -> Draft:
    """The sections the plan chose, each quoted whole (every step, item and table row), in task
    order under phase headings when there are several phases. Consecutive sections of one
    document are shown as one run, under its title when it holds several (a procedure's steps),
    and followed by a link to where the document is shown in context. A cross-device table, when
    the plan made one, comes first."""
    cfg = job.spec.config
    phases = cfg.get("phases") or ["do"] * len(cfg["sections"])
    staged = len(set(phases)) > 1
    blocks: list[Block] = []
    table = guide_table(cfg.get("table"))
    if table is not None:
        blocks += [Block("heading", text="At a glance", level=2), table]
    runs: list[tuple[str, SourceDoc, list]] = []  # (phase, document, its sections in order)
    for (path, anchor), phase in zip(cfg["sections"], phases, strict=False):
        doc = job.docs.get(path)
        section = doc.section(anchor) if doc is not None else None
        if section is None or not (section_content(doc, section) or section.heading):
            continue  # a heading with nothing of its own stands over its parts ('Step 1: Add plants')
        if runs and runs[-1][0] == phase and runs[-1][1].path == path:
            runs[-1][2].append(section)
        else:
            runs.append((phase, doc, [section]))
    shown_phase = ""
    for phase, doc, sections in runs:
        sections.sort(key=doc.sections.index)  # two units of one document: in its own order
        if staged and phase != shown_phase:
            blocks.append(Block("heading", text=PHASE_TITLES[phase], level=2))
            shown_phase = phase
        only = (cfg.get("only") or {}).get(f"{doc.path}#{sections[0].anchor}")
        if only and len(sections) == 1:  # the steps of an older source that still hold, and no more
            units = _only(section_content(doc, sections[0]), set(only))
            heading = sections[0].heading or doc.title
            blocks += _headed(
                job, doc, sections[0].anchor, heading, 3 if staged else 2, units, dated_title(doc)
            )
            continue
        blocks += without_dangling(_guide_run(job, doc, sections, 3 if staged else 2))
    # its index line: its purpose and what it holds ('Installing, setting up and connecting. In
    # this guide: Construct the Gantry · …'), cut to length; a short purpose alone told nothing
    about = job.spec.config.get("about") or ""
    return _finish(job, blocks, names=asked_words(job, blocks), summary=about)


def without_dangling(blocks: list[Block]) -> list[Block]:
    """A guide's quoted run less a paragraph's last sentence that introduces what follows ('This is
    the list of the 32 possible diagnosis codes …:') when nothing of it follows on the guide: the
    list is in sections the guide does not quote, and its topic page, linked below, holds it."""
    out: list[Block] = []
    for n, b in enumerate(blocks):
        after = blocks[n + 1].kind if n + 1 < len(blocks) else "end"
        if (
            b.kind == "para"
            and after in ("heading", "links", "end")
            and b.sentences[-1].text.rstrip().endswith(":")
        ):
            b = replace(b, sentences=b.sentences[:-1])
            if not b.sentences:
                continue
        out.append(b)
    return out


def asked_words(job: PageJob, blocks: list[Block]) -> tuple[str, ...]:
    """A guide's words for what it is asked (its query and purpose in the schema, in their order)
    that the page shows: what an agent looking for it would type ('vacation', 'trip'), before the
    words its quoted sections happen to use often ('culprit', 'guarantee')."""
    guide = job.spec.config.get("guide") or {}
    shown = set(tokens(" ".join([job.spec.config.get("about") or "", job.spec.title])))
    for b in blocks:
        shown.update(t for x in (b.text, *(s.text for s in b.sentences)) for t in tokens(plain_inline(x)))
    asked = tokens(f"{guide.get('query') or ''} {guide.get('purpose') or ''}")
    return tuple(t for t in dict.fromkeys(asked) if t in shown and len(t) > 2 and t.isalpha())


def _only(blocks: list[Block], texts: set[str]) -> list[Block]:
    """The prose of ``blocks`` cut down to the sentences in ``texts``, each kept whole."""
    out = []
    for b in blocks:
        kept = tuple(s for s in b.sentences if s.text in texts) if b.kind == "para" else ()
        if kept:
            out.append(replace(b, sentences=kept))
    return out


def _guide_run(job: PageJob, doc: SourceDoc, sections: list, base: int) -> list[Block]:
    """One document's sections on a guide: under its title when several stand side by side (the
    steps of a procedure), else under the section's own heading with the document's title on a
    sub-line (see ``_headed``); then a link to where the document is shown in context."""
    top = min(s.level for s in sections)
    heads = [s for s in sections if s.level == top]
    first = sections[0]
    units = section_content(doc, first)
    anchor = first.anchor if units else ""  # a heading over its parts has no place of its own on its home
    if len(heads) == 1 and first.level == top and first.heading and first.heading != doc.title:
        return _headed(job, doc, anchor, first.heading, base, units) + _guide_sections(
            doc, sections[1:], base, top, heads
        )
    out = _guide_sections(doc, sections, base, top, heads)
    return out + _in_context(_home(job, doc, anchor))


def _guide_sections(doc: SourceDoc, sections: list, base: int, top: int, heads: list) -> list[Block]:
    """Sections of one document, each under its heading (under the title when several stand side
    by side)."""
    out: list[Block] = []
    if len(heads) > 1:
        out.append(Block("heading", text=doc.title, level=base))
        base += 1
    for s in sections:
        if len(heads) > 1 and s.level == top and (not s.heading or s.heading == doc.title):
            out += section_content(doc, s)  # the document's opening, under its title already shown
            continue
        if s.level > top or len(heads) > 1:
            heading, level = s.heading or doc.title, base + min(2, s.level - top)
        elif not s.heading or s.heading == doc.title:
            heading, level = doc.title, base
        else:
            heading, level = f"{s.heading} ({doc.title})", base
        out += [Block("heading", text=heading, level=level), *section_content(doc, s)]
    return out


def guide_table(table: dict | None) -> Block | None:
    """The plan's cross-device table: a row per device, a column per quantity, each cell quoted
    and cited ('—' where a device's sources do not say)."""
    if not table:
        return None
    rows = []
    for title, cells in table["rows"]:
        row = [Cell(title)]
        for cell in cells:
            row.append(Cell(cell[0], (Citation(cell[1], cell[2]),)) if cell else Cell("—"))
        rows.append(tuple(row))
    return Block("table", header=("Model", *table["columns"]), rows=tuple(rows))


def _hub(job: PageJob) -> Draft:
    """An overview of a product line: what each model is (where a source says so) and a link to
    each model's page."""
    lead: list[Sentence] = []
    links = []
    for path, title, *found in job.spec.config["models"]:
        if found:
            doc_path, anchor, text = found
            lead.append(Sentence(text, (Citation(doc_path, anchor),)))
        links.append((path, title))
    body = [Block("heading", text="Models", level=2), Block("links", links=tuple(links))]
    draft = _finish(job, body, lead, names=[t for _, t, *_ in job.spec.config["models"]])
    titles = [title for _, title in links]
    return replace(draft, summary=f"The {listing(titles)}: what each is, with a link to its page."[:160])


def _glossary(job: PageJob) -> Draft:
    """Terms the sources define, A to Z: each with its definition (the source's own words after
    'is'), cited; the terms without a page of their own first, then those with one, linked (a
    reader looking up a word of the trade does not wade through every crop)."""
    pages = job.spec.config.get("pages") or {}
    terms: list[Sentence] = []  # the words of the trade, first
    subjects: list[Sentence] = []  # then what has a page of its own (a crop, a device)
    for term, path, anchor, what in job.spec.config["entries"]:
        href = pages.get(term)
        shown = f"[{term}]({relative(href, job.spec.path)})" if href else term
        (subjects if href else terms).append(Sentence(f"**{shown}**: {what}", (Citation(path, anchor),)))
    items = terms + subjects
    body = [Block("bullets", sentences=tuple(items))] if items else []
    if terms and subjects:
        body = [
            Block("heading", text=GLOSSARY_TERMS, level=2),
            Block("bullets", sentences=tuple(terms)),
            Block("heading", text=GLOSSARY_SUBJECTS, level=2),
            Block("bullets", sentences=tuple(subjects)),
        ]
    draft = _finish(job, body)
    names = [_term(item) for item in items] or [""]
    return replace(
        draft,
        summary=f"{len(items)} terms the sources define, from {min(names, key=str.lower)} to {max(names, key=str.lower)}."[
            :160
        ],
    )


def _term(item: Sentence) -> str:
    return plain_inline(item.text.split("**")[1])


def _changes(job: PageJob) -> Draft:
    """What changed, fact by fact, newest first: the values in order, then every statement of
    them with its date, each cited. The plan's opening line names every change (the page has no
    lead: one change's line would repeat the first of them)."""
    blocks: list[Block] = []
    for chain in job.spec.config["chains"]:
        values = " → ".join(quantity(v, chain["unit"]) for v in chain["values"])
        newest = job.docs.get(chain["statements"][0][0])
        statements = chain["statements"]
        sentences = tuple(
            Sentence(f"**{date or 'undated'}**: {text}", (Citation(path, anchor),))
            for path, anchor, text, date in statements
        )
        blocks.append(
            Block("heading", text=f"{values}: {newest.title if newest else ''}".rstrip(": "), level=2)
        )
        if sentences:
            blocks.append(Block("bullets", sentences=sentences))
    draft = _finish(job, blocks)
    n = len(job.spec.config["chains"])
    return replace(
        draft, summary=f"{n} fact{'s' if n != 1 else ''} the sources changed, newest first, each side cited."
    )
