"""The offline librarian: deterministic, no network, extractive.

Pages are assembled from quoted source sentences and minimally templated structured fields, so
every sentence is supported by construction (and still verified like any other backend's).
"""

from __future__ import annotations

from collections.abc import Callable

from ..draft import Block, Draft
from ..models import SourceDoc
from ..plan import current_of
from .base import Failure, PageJob, Usage
from .extract import (
    comparison_table,
    device_facts,
    facts_comparison,
    facts_table,
    home_blocks,
    keywords,
    mentions,
    section_blocks,
    superseded_notes,
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
    return [d for p, d in job.docs.items() if p not in job.superseded_by]


def older_versions(job: PageJob, doc: SourceDoc) -> list[SourceDoc]:
    """Documents on this page that ``doc`` replaces, directly or through a chain, newest first."""
    olds = [
        d
        for p, d in job.docs.items()
        if p in job.superseded_by and current_of(p, job.superseded_by) == doc.path
    ]
    return sorted(olds, key=lambda d: str(d.meta.get("updated_at", "")), reverse=True)


def fact_settings(job: PageJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(show, hide): the frontmatter fields a page shows as facts (``facts:`` in wiki.yaml)."""
    cfg = job.spec.config.get("facts") or {}
    return tuple(cfg.get("show") or ()), tuple(cfg.get("hide") or ())


def _topic(job: PageJob) -> Draft:
    """Each member source is at home here: rendered whole under its own heading, with its fact
    list, and followed by what its older versions said."""
    blocks: list[Block] = []
    members = set(job.spec.config.get("members") or job.docs)
    docs = [d for d in current_docs(job) if d.path in members]
    if docs and all(dated_title(d) != d.title for d in docs):  # posts: newest first
        docs.sort(key=lambda d: dated_title(d)[-11:-1], reverse=True)
    show, hide = fact_settings(job)
    for doc in docs:
        blocks.append(Block("heading", text=dated_title(doc), level=2))
        blocks.extend(home_blocks(doc, 2, show, hide))
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
    """The device's spec pages are at home here, whole, after a specifications table; other
    sources are quoted where they name the device."""
    device = job.spec.config["device"]
    names = tuple(device.get("match") or ()) + (device["title"],)
    spec_paths = [p for p in job.spec.config.get("spec_paths", ()) if p in job.docs]
    facts = device_facts(device, list(job.docs.values()))
    show, hide = fact_settings(job)
    shown = hide + tuple(k for k, _, _ in facts)
    blocks: list[Block] = []
    table = facts_table(facts)
    if table is not None:
        blocks += [Block("heading", text="Specifications", level=2), table]
    for path in spec_paths:
        doc = job.docs[path]
        blocks.extend(home_blocks(doc, 1, show, shown))
        blocks.extend(superseded_notes(older_versions(job, doc)))
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
