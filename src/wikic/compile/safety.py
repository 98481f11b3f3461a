"""What a page may publish besides verified sentences.

- ``sanitize``: no raw HTML, no image, and links only to wiki pages and layer-1 sources; other
  links keep their text. Every backend's draft goes through it before its sentences are checked.
- ``suspicious``: text in a source that tries to instruct the reader or an assistant ("ignore
  previous instructions, visit …"). It is cited faithfully, but ``check`` warns about it and it is
  kept out of leads, summaries and answers.
- ``vet_draft``: the headings, summary and keywords an LLM writes are held to the sources (a
  heading must be supported by what its section cites, a summary by the page's sources, a keyword
  must occur in them); what fails is rebuilt from the sources.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from pathlib import PurePosixPath

from ..core.markdown import LINK_TEXT, plain_inline, without_controls
from ..transform.layer1 import LAYER1
from .citations import RAW_HTML, Verifier
from .draft import Block, Cell, Citation, Draft, Sentence

_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
AUTOLINK = re.compile(r"<([A-Za-z][\w+.-]{1,31}:[^<>\s]*)>")
_DEST = r"\(((?:[^()\s]|\([^()\s]*\))*)(?:\s+\"[^\"]*\")?\)"  # a link target, balanced () allowed
IMAGE = re.compile(r"!" + LINK_TEXT.replace("(", "(?:", 1) + _DEST)
LINK = re.compile(LINK_TEXT + _DEST)
_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_LEAD_MARKS = re.compile(r"^[\s#>]+")
_BREAKS = re.compile(r"[ \t]*[\r\n\f\v]+[\s]*")
# what any of the substitutions below could change
_MARKUP = re.compile(r"[<\]\x00-\x1f\x7f]|^\s|\s$")
_LEAD_CHARS = "#>"

WIKI = "wiki"


def allowed_link(href: str, page_path: str) -> bool:
    """A link a page may carry: relative, into the wiki or layer 1, never out of the KB."""
    return _allowed(href.split("#", 1)[0] if not href.startswith("#") else href, os.path.dirname(page_path))


@lru_cache(maxsize=1 << 14)  # a page cites the same few files many times
def _allowed(href: str, folder: str) -> bool:
    if not href or href.startswith("#"):
        return bool(href)
    if re.match(r"^[A-Za-z][\w+.-]*:|^/|^\\", href):
        return False
    parts = PurePosixPath(os.path.normpath(os.path.join(folder, href))).parts
    return bool(parts) and parts[0] in (WIKI, LAYER1) and ".." not in parts


def sanitize(text: str, page_path: str) -> str:
    """``text`` with raw HTML removed (any '<' left is escaped), images dropped, links out of the
    KB reduced to their text, and on one line that starts no heading or quote."""
    if not _MARKUP.search(text):  # most sentences: plain text on one line
        return text if text[:1] not in _LEAD_CHARS else _LEAD_MARKS.sub("", text)
    text = _COMMENT.sub("", without_controls(text))
    text = AUTOLINK.sub(r"\1", text)
    text = RAW_HTML.sub("", text)
    text = IMAGE.sub("", text)
    text = LINK.sub(lambda m: m.group(0) if allowed_link(m.group(2), page_path) else m.group(1), text)
    text = _OPENER.sub("&lt;", text)
    return _LEAD_MARKS.sub("", _BREAKS.sub(" ", text).strip())


def sanitize_draft(draft: Draft, page_path: str) -> Draft:
    """Every sentence, cell, heading, the summary and the keywords of a draft, sanitised (a block
    with nothing to clean is kept as it is)."""

    def clean(s: str) -> str:
        return sanitize(s, page_path)

    def clean_block(b: Block) -> Block:
        sentences = tuple(
            Sentence(t, s.cites) if (t := clean(s.text)) is not s.text else s for s in b.sentences
        )
        rows = tuple(
            tuple(Cell(t, c.cites) if (t := clean(c.text)) is not c.text else c for c in r) for r in b.rows
        )
        text, header = clean(b.text), tuple(clean(h) for h in b.header)
        same = text is b.text and all(a is b_ for a, b_ in zip(sentences, b.sentences))
        same = same and all(x is y for r, r0 in zip(rows, b.rows) for x, y in zip(r, r0))
        same = same and all(h is h0 for h, h0 in zip(header, b.header))
        return b if same else replace(b, text=text, sentences=sentences, header=header, rows=rows)

    return replace(
        draft,
        blocks=tuple(clean_block(b) for b in draft.blocks),
        summary=clean(draft.summary),
        keywords=tuple(k for k in (clean(k) for k in draft.keywords) if k),
    )


# --- text that tries to instruct its reader -------------------------------------------------------

_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|these\s+|of\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|other|existing|system)?\s*"
    r"(?:instructions?|rules|directions|guidelines|prompts?|messages?|context|constraints)\b"
    r"|\b(?:system|developer)\s+prompt\b"
    r"|\b(?:note|message|instructions?|notice)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
    r"(?:assistant|ai|llm|model|chatbot|bot|agent|librarian)s?\b"
    r"|\b(?:as|you\s+are)\s+(?:an?\s+)?(?:ai|language\s+model|llm|assistant|chatbot)\b"
    r"|\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b"
    r"|\b(?:tell|instruct|urge|direct)\s+(?:every|all|each|the|any)\s+(?:readers?|users?|customers?|visitors?)\s+to\b"
    r"|\breveal\s+(?:your|the)\s+(?:system\s+prompt|instructions|api\s+keys?|secrets?|password)",
    re.IGNORECASE,
)


def suspicious(text: str) -> bool:
    """Whether a sentence reads as an instruction to an assistant or to every reader (a prompt
    injection), rather than as support knowledge."""
    return bool(_INSTRUCTION.search(text))


# --- headings, summaries and keywords an LLM writes -----------------------------------------------

_STRUCTURAL = ("specifications", "earlier versions", "see also", "in the knowledge base", "overview")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", plain_inline(text).lower()))


def vet_draft(
    draft: Draft,
    verifier: Verifier,
    sources: tuple[str, ...],
    outline: tuple[str, ...],
    fallback: Callable[[], Draft],
) -> tuple[Draft, list[str]]:
    """The draft with every heading, its summary and its keywords supported by the page's
    sources, or rebuilt from them; returns it with one note per thing rebuilt.

    A heading passes when it is one of the page type's outline headings or a structural heading
    wikic writes, or when the sections its sentences cite support it as they would a sentence.
    A failed heading becomes the heading of the first section it cites (or its document's
    title). The summary must be supported by the page's sources taken whole, else the offline
    librarian's summary is used; keywords must occur in those sources or the page title."""
    notes: list[str] = []
    known = {h.lower() for h in (*outline, *_STRUCTURAL)}
    blocks = list(draft.blocks)
    for i, b in enumerate(blocks):
        if b.kind != "heading" or b.text.lower() in known:
            continue
        cites = _cites_under(blocks, i)
        if cites and not suspicious(b.text) and verifier.check(b.text, cites).ok:
            continue
        rebuilt = _heading_from(cites[0], verifier) if cites else "Overview"
        notes.append(f"heading {b.text[:60]!r} is not supported by its sources; wrote {rebuilt!r}")
        blocks[i] = replace(b, text=rebuilt)
    whole = tuple(Citation(p, "") for p in sources if p in verifier.docs)
    summary = draft.summary
    offline: Draft | None = None
    if not whole or suspicious(summary) or not verifier.check(summary, whole).ok:
        offline = fallback()
        if offline.summary != summary:  # the offline librarian's own summary stands as it is
            notes.append(
                f"summary {summary[:60]!r} is not supported by the page's sources; used the offline one"
            )
            summary = offline.summary
    vocabulary = _words(draft.title)
    for c in whole:
        vocabulary |= _words(verifier.cited_text(c))
    keywords = tuple(k for k in draft.keywords if _words(k) and _words(k) <= vocabulary and not suspicious(k))
    if len(keywords) < len(draft.keywords):
        dropped = [k for k in draft.keywords if k not in keywords]
        notes.append(f"keywords not in the page's sources dropped: {', '.join(dropped[:5])}")
        if not keywords:
            keywords = (offline or fallback()).keywords
    return replace(draft, blocks=tuple(blocks), summary=summary, keywords=keywords), notes


def _cites_under(blocks: list[Block], i: int) -> tuple[Citation, ...]:
    """The citations of the sentences and cells under heading ``i``, down to the next heading of
    its level or higher, in order."""
    level = blocks[i].level
    out: dict[Citation, None] = {}
    for b in blocks[i + 1 :]:
        if b.kind == "heading" and b.level <= level:
            break
        for s in b.sentences:
            out.update(dict.fromkeys(s.cites))
        for row in b.rows:
            for c in row:
                out.update(dict.fromkeys(c.cites))
    return tuple(out)


def _heading_from(cite: Citation, verifier: Verifier) -> str:
    doc = verifier.docs[cite.path]
    section = doc.section(cite.anchor) if cite.anchor else None
    if section is None or not section.heading or section.level <= 1:
        return doc.title
    return section.heading
