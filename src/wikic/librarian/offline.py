"""The offline librarian: deterministic, no network, extractive.

Pages are assembled from quoted source sentences and minimally templated structured fields, so
every sentence is supported by construction (and still verified like any other backend's).
"""

from __future__ import annotations

from collections.abc import Callable

from ..draft import Block, Draft
from ..models import SourceDoc
from ..plan import current_of
from ..versions import current_view, section_key, section_view, superseded_anchors
from .base import Failure, PageJob, Usage
from .extract import (
    comparison_table,
    device_facts,
    facts_comparison,
    facts_table,
    keywords,
    lead_section,
    mention_blocks,
    mentions,
    section_blocks,
    superseded_notes,
)

SECTIONS_PER_SOURCE = 10
UNITS_PER_SECTION = 2


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
    return _topic(job)


PUBLISHED_FIELDS = ("published_at", "published", "date")


def dated_title(doc: SourceDoc) -> str:
    """A dated source (a post, a release note) is headed with its date, so a reader sees which of
    two posts is newer; undated reference entries keep their plain title."""
    for name in PUBLISHED_FIELDS:
        value = doc.meta.get(name)
        if value:
            return f"{doc.title} ({str(value)[:10]})"
    return doc.title


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


def doc_blocks(
    doc: SourceDoc,
    level: int,
    sections: int = SECTIONS_PER_SOURCE,
    units: int = UNITS_PER_SECTION,
    skip_title_heading: bool = True,
) -> list[Block]:
    blocks: list[Block] = []
    used = 0
    for section in doc.sections:
        body = section_blocks(doc, section, units)
        if not body:
            continue
        if section.heading and not (
            skip_title_heading and section.level == 1 and section.heading == doc.title
        ):
            blocks.append(Block("heading", text=section.heading, level=min(6, level)))
        blocks.extend(body)
        used += 1
        if used >= sections:
            break
    return blocks


def _topic(job: PageJob) -> Draft:
    blocks: list[Block] = []
    members = set(job.spec.config.get("members") or job.docs)
    docs = [d for d in current_docs(job) if d.path in members]
    if docs and all(dated_title(d) != d.title for d in docs):  # posts: newest first
        docs.sort(key=lambda d: dated_title(d)[-11:-1], reverse=True)
    mentions = job.spec.config.get("mentions") or {}
    for doc in docs:
        blocks.append(Block("heading", text=dated_title(doc), level=2))
        blocks.extend(doc_blocks(doc, level=3))
        found = [(job.docs[p], job.docs[p].section(a), text) for p, a, text in mentions.get(doc.path, ())]
        blocks.extend(mention_blocks(doc, [(d, s, t) for d, s, t in found if s is not None]))
        blocks.extend(superseded_notes(older_versions(job, doc)))
    titles = [d.title for d in docs]
    summary = f"{job.spec.title}: {'; '.join(titles)}"
    return Draft(
        job.spec.title,
        summary,
        keywords(_page_text(blocks), docs=docs, vocabulary=job.vocabulary),
        tuple(blocks),
        job.related,
    )


def _device(job: PageJob) -> Draft:
    device = job.spec.config["device"]
    names = tuple(device.get("match") or ()) + (device["title"],)
    refs = device.get("sources") or ()
    spec_paths = [p for p, d in job.docs.items() if any(d.answers_to(r) for r in refs)]
    specs = {p: current_view(job.docs[p], job.superseded_by) for p in spec_paths}
    blocks: list[Block] = []
    for path in spec_paths:
        lead = lead_section(specs[path])
        if lead is not None:
            blocks.extend(section_blocks(specs[path], lead, 3))
    table = facts_table(device_facts(device, current_docs(job)))
    if table is not None:
        blocks += [Block("heading", text="Specifications", level=2), table]
    for path in spec_paths:
        doc = specs[path]
        lead = lead_section(doc)
        for section in doc.sections:
            if section is lead or section.level < 2:
                continue
            body = section_blocks(doc, section, 3)
            if body:
                blocks += [Block("heading", text=section.heading, level=2), *body]
    related = [d for d in current_docs(job) if d.path not in spec_paths]
    if related:
        blocks.append(Block("heading", text="In the knowledge base", level=2))
        for doc in related:
            about = [s for s in doc.sections if mentions(s.heading + " " + s.text, names)] or doc.sections
            body: list[Block] = []
            for section in about[:3]:
                body.extend(section_blocks(doc, section, 3))
            if body:
                blocks += [Block("heading", text=doc.title, level=3), *body]
            blocks.extend(superseded_notes(older_versions(job, doc)))
    titles = [d.title for d in related]
    summary = f"{device['title']}: specifications, and what the sources say about it: " + "; ".join(titles)
    return Draft(
        job.spec.title,
        summary,
        keywords(_page_text(blocks), extra=names, docs=list(job.docs.values()), vocabulary=job.vocabulary),
        tuple(blocks),
        job.related,
    )


def _comparison(job: PageJob) -> Draft:
    comp = job.spec.config["comparison"]
    fields = tuple(comp["fields"])
    if comp["of"] == "devices":
        docs = list(job.docs.values())
        rows = []
        for device in job.spec.config["devices"]:
            facts = {k: (v, c) for k, v, c in device_facts(device, docs)}
            rows.append((device["title"], facts))
        table = facts_comparison(rows, fields)
        names = [t for t, _ in rows]
    else:
        table = comparison_table([(d.title, d) for d in job.docs.values()], fields)
        names = [d.title for d in job.docs.values()]
    purpose = comp.get("purpose") or f"Compares {', '.join(fields)}."
    summary = f"{purpose} Rows: {'; '.join(names)}"
    return Draft(
        job.spec.title,
        summary,
        keywords(names, extra=fields, vocabulary=job.vocabulary),
        (table,),
        job.related,
    )


def _guide(job: PageJob) -> Draft:
    guide = job.spec.config["guide"]
    blocks: list[Block] = []
    for path, anchor in job.spec.config["sections"]:
        doc = job.docs[path]
        section = doc.section(anchor)
        if section is None:
            continue
        body = section_blocks(doc, section, 4)
        if not body:
            continue
        heading = (
            doc.title
            if not section.heading or section.heading == doc.title
            else f"{doc.title}: {section.heading}"
        )
        blocks += [Block("heading", text=heading, level=2), *body]
    titles = list(dict.fromkeys(job.docs[p].title for p, _ in job.spec.config["sections"] if p in job.docs))
    return Draft(
        job.spec.title,
        f"{guide['purpose']} Draws on: {'; '.join(titles)}",
        keywords([guide["query"], guide["title"], *_page_text(blocks)], vocabulary=job.vocabulary),
        tuple(blocks),
        job.related,
    )


def _page_text(blocks: list[Block] | tuple[Block, ...]) -> list[str]:
    """Headings and sentences of a draft, for choosing its keywords."""
    out = []
    for b in blocks:
        if b.text:
            out.append(b.text)
        out += [x.text for x in b.sentences]
    return out
