"""The offline librarian: deterministic, no network, extractive.

Pages are assembled from quoted source sentences and minimally templated structured fields, so
every sentence is supported by construction (and still verified like any other backend's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...core.models import SourceDoc
from ..draft import Block, Citation, Draft, Sentence
from ..pageplan import current_of
from ..versions import current_view, section_key, section_view, superseded_anchors
from .base import Failure, PageJob, Usage
from .extract import (
    comparison_table,
    dated_title,
    device_facts,
    facts_comparison,
    facts_table,
    home_blocks,
    keywords,
    naming_sentences,
    section_content,
    summary_of,
    superseded_notes,
    take_lead,
)


class OfflineLibrarian:
    name = "offline"
    model = "extractive-1"
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
    return _topic(job)


DERIVED_TYPES = ("hub", "glossary", "changes")  # pages made from the plan, the same for every backend


def current_docs(job: PageJob) -> list[SourceDoc]:
    """The page's current documents, without the sections a newer document replaces."""
    return [current_view(d, job.superseded_by) for p, d in job.docs.items() if p not in job.superseded_by]


def older_versions(job: PageJob, doc: SourceDoc) -> list[SourceDoc]:
    """Documents on this page that ``doc`` replaces, directly or through a chain, newest first;
    a section it replaces comes as its document reduced to that section."""
    olds = []
    for p, d in job.docs.items():
        if p in job.superseded_by and current_of(p, job.superseded_by) == doc.path:
            olds.append(d)
        for anchor in sorted(superseded_anchors(p, job.superseded_by)):
            if current_of(section_key(p, anchor), job.superseded_by) == doc.path:
                olds.append(section_view(d, anchor))
    return sorted(olds, key=lambda d: str(d.meta.get("updated_at", "")), reverse=True)


def fact_settings(job: PageJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(show, hide): the frontmatter fields a page shows as facts (``facts:`` in wiki.yaml)."""
    cfg = job.spec.config.get("facts") or {}
    return tuple(cfg.get("show") or ()), tuple(cfg.get("hide") or ())


def _finish(job: PageJob, body: list[Block], lead: list[Sentence] | None = None, names=()) -> Draft:
    """A draft with its lead first (taken from the body when not given), a summary from the lead
    and keywords from the page's own words."""
    if lead is None:
        lead, body = take_lead(body, job.spec.title, job.vocabulary)
    if not lead:  # a page of fields and tables: its first table's first row, as one cited sentence
        table = next((b for b in body if b.kind == "table"), None)
        lead = table_lead(table, rows=1) if table is not None else []
    blocks = ([Block("para", sentences=tuple(lead))] if lead else []) + body
    return Draft(
        job.spec.title,
        summary_of([s.text for s in lead]),
        page_keywords(job, blocks, names),
        tuple(blocks),
        job.related,
    )


def page_keywords(job: PageJob, blocks: list[Block], names=()) -> tuple[str, ...]:
    """Up to eight words an agent would search for: the page's subject names, then the words of
    its headings and sentences that are frequent here and rare elsewhere. Fact tables are not
    mined (their values include every alias a record lists), nor are names of people."""
    entries = [
        b.text for b in blocks if b.kind == "heading" and b.level == 2 and b.text not in FIXED_HEADINGS
    ]
    texts = [job.spec.title, *entries, *entries, *entries]  # the page's entries (a crop, an FAQ) weigh thrice
    texts += [s.text for b in blocks if b.kind in ("para", "bullets", "steps") for s in b.sentences]
    return keywords(texts, n=KEYWORDS, extra=tuple(names), vocabulary=job.vocabulary)


KEYWORDS = 8
FIXED_HEADINGS = ("Specifications", "In the knowledge base")


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
    for doc in docs:
        blocks.append(Block("heading", text=dated_title(doc), level=2))
        blocks.extend(home_blocks(doc, 2, show, hide))
        blocks.extend(superseded_notes(older_versions(job, doc), doc))
    return _finish(job, blocks)


def _device(job: PageJob) -> Draft:
    """The device's spec pages are at home here, whole, after a specifications table; the other
    sources about it are listed with a link to where each is shown whole."""
    device = job.spec.config["device"]
    names = tuple(device.get("match") or ()) + (device["title"],)
    spec_paths = [p for p in job.spec.config.get("spec_paths", ()) if p in job.docs]
    facts = device_facts(device, current_docs(job))
    show, hide = fact_settings(job)
    shown = hide + tuple(k for k, _, _ in facts)
    body: list[Block] = []
    for path in spec_paths:
        doc = current_view(job.docs[path], job.superseded_by)
        body.extend(home_blocks(doc, 1, show, shown))
        body.extend(superseded_notes(older_versions(job, doc), doc))
    lead, body = take_lead(body, job.spec.title, job.vocabulary)
    if not lead:  # no spec page: a sentence of another source that says what the device is
        lead = naming_sentences(names, [d for d in current_docs(job) if d.path not in spec_paths])
    table = facts_table(facts)
    if table is not None:
        body = [Block("heading", text="Specifications", level=2), table, *body]
    related = [d for d in current_docs(job) if d.path not in spec_paths]
    listed = [h for d in related if (h := job.nav.home(d.path)) is not None]
    if listed:
        body += [Block("heading", text="In the knowledge base", level=2), Block("links", links=tuple(listed))]
    return _finish(job, body, lead, names=(device["title"],))


def _comparison(job: PageJob) -> Draft:
    comp = job.spec.config["comparison"]
    fields = tuple(job.spec.config.get("fields") or comp["fields"])
    if comp["of"] == "devices":
        docs = list(job.docs.values())
        rows = []
        for device in job.spec.config["devices"]:
            facts = {k: (v, c) for k, v, c in device_facts(device, docs)}
            rows.append((device["title"], facts))
        table = facts_comparison(rows, fields)
    else:
        table = comparison_table([(d.title, d) for d in job.docs.values()], fields)
    draft = _finish(job, [table], table_lead(table), names=[r[0].text for r in table.rows][:3])
    return replace(draft, summary=summary_of([comp.get("purpose") or "", draft.summary]))


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
    """The best-matching sections in order, each quoted only as far as its first sentence or
    item, with a link to where it is shown whole."""
    blocks: list[Block] = []
    for path, anchor in job.spec.config["sections"]:
        doc = job.docs[path]
        section = doc.section(anchor)
        if section is None:
            continue
        body = _first_units(section_content(doc, section), GUIDE_UNITS)
        if not body:
            continue
        heading = (
            doc.title
            if not section.heading or section.heading == doc.title
            else f"{section.heading} ({doc.title})"
        )
        blocks += [Block("heading", text=heading, level=2), *body]
        home = job.nav.home(path, anchor) or job.nav.home(path)
        if home is not None:
            blocks.append(Block("links", text="Read it whole", links=(home,)))
    draft = _finish(job, blocks)
    return replace(draft, summary=summary_of([job.spec.config["guide"].get("purpose") or "", draft.summary]))


GUIDE_UNITS = 1


def _first_units(blocks: list[Block], limit: int) -> list[Block]:
    """The first ``limit`` sentences or list items of a section's blocks (tables and code left to
    the section's home)."""
    out: list[Block] = []
    left = limit
    for b in blocks:
        if left <= 0:
            break
        if b.kind in ("para", "bullets", "steps") and b.sentences:
            out.append(Block(b.kind, sentences=b.sentences[:left]))
            left -= len(out[-1].sentences)
    return out


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
    return _finish(job, body, lead, names=[t for _, t, *_ in job.spec.config["models"]])


def _glossary(job: PageJob) -> Draft:
    """Terms the sources define, A to Z: each with its definition (the source's own words after
    'is'), cited, and a link to where the term's source is shown whole."""
    items = []
    for term, path, anchor, what in job.spec.config["entries"]:
        items.append(Sentence(f"**{term}**: {what}", (Citation(path, anchor),)))
    lead = items[:1]
    body = [Block("bullets", sentences=tuple(items[1:]))] if len(items) > 1 else []
    draft = _finish(job, body, lead)
    return replace(
        draft,
        summary=f"{len(items)} terms the sources define, from {items[0].text.split('**')[1]} to "
        f"{items[-1].text.split('**')[1]}."[:160],
    )


def _changes(job: PageJob) -> Draft:
    """What changed, fact by fact, newest first: the values in order, then every statement of
    them with its date, each cited. The newest change statement opens the page."""
    blocks: list[Block] = []
    lead: list[Sentence] = []
    for chain in job.spec.config["chains"]:
        values = " → ".join(quantity(v, chain["unit"]) for v in chain["values"])
        newest = job.docs.get(chain["statements"][0][0])
        statements = chain["statements"]
        if not lead and newest is not None:  # 'What is the return policy?: 30 days → 45 days (2026-01-15).'
            path, anchor, _, date = statements[0]
            lead = [Sentence(f"{newest.title.rstrip('?.!')}: {values} ({date}).", (Citation(path, anchor),))]
        sentences = tuple(
            Sentence(f"**{date or 'undated'}**: {text}", (Citation(path, anchor),))
            for path, anchor, text, date in statements
        )
        blocks.append(
            Block("heading", text=f"{values}: {newest.title if newest else ''}".rstrip(": "), level=2)
        )
        if sentences:
            blocks.append(Block("bullets", sentences=sentences))
    draft = _finish(job, blocks, lead)
    n = len(job.spec.config["chains"])
    return replace(
        draft, summary=f"{n} fact{'s' if n != 1 else ''} the sources changed, newest first, each side cited."
    )


def quantity(value: str, unit: str) -> str:
    """'15', '%' → '15%'; '45', 'day' → '45 days'; '12', 'usd' → '$12'."""
    if unit == "%":
        return f"{value}%"
    if unit == "usd":
        return f"${value}"
    plural = unit + (
        "s" if value != "1" and unit in ("day", "week", "month", "year", "hour", "minute", "second") else ""
    )
    return f"{value} {plural}"
