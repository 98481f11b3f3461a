"""Coverage: how much of what layer 1 knows reaches a wiki page that cites it.

Measured the same way for the compile report and ``check --json``, independently of how pages
are written:

- a *sentence* is a sentence of at least five words in a section's prose or list items (code,
  tables, images and list items that restate a frontmatter field are not sentences); it is
  placed when its text occurs on a page, in the lines that cite its document;
- a *field* is a frontmatter field shown as a fact (``facts.facts``); it is placed when its
  shown value occurs in the lines that cite its document;
- long text fields (a description) count as sentences, unless the body already says them.

Unplaced documents (those no page shows) come from the plan, with the reason.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields

from ..core.facts import facts, prose_fields, restated_field
from ..core.markdown import (
    IMAGE_MARKUP,
    code_lines,
    is_caption,
    is_navigation,
    is_table_start,
    plain_inline,
    points_at_media,
    readable,
    split_sentences,
)
from ..core.models import SourceDoc
from .draft import as_recorded, parse_citations, record_links, strip_citations

MIN_WORDS = 5
_IMAGE = IMAGE_MARKUP
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


def _norm(text: str) -> str:
    return " ".join(plain_inline(text).split())


def doc_sentences(doc: SourceDoc) -> list[str]:
    """The sentences of at least ``MIN_WORDS`` words a document states, normalised."""
    out: list[str] = []
    for section in doc.sections:
        if is_navigation(section.text):
            continue  # a list of links: where the site goes on, which no page needs to say
        para: list[str] = []
        chunks: list[str] = []
        marked = list(code_lines(readable(section.text).split("\n")))
        in_table = False
        for i, (_, line, code) in enumerate(marked):
            stripped = line.strip().lstrip(">").strip() if line.strip().startswith(">") else line.strip()
            nxt = marked[i + 1][1] if i + 1 < len(marked) else ""
            in_table = ("|" in line) and (in_table or is_table_start(line, nxt))
            if code or not stripped or in_table:
                chunks.append(" ".join(para))
                para = []
                continue
            if is_caption(stripped, next((x[1] for x in reversed(marked[:i]) if x[1].strip()), "")):
                continue  # an image's caption: not shown, as the image is not
            m = _LIST.match(line)
            if m:
                chunks.append(" ".join(para))
                para = []
                if restated_field(doc, plain_inline(m.group(1))) is None:
                    chunks.append(m.group(1))
                continue
            para.append(stripped)
        chunks.append(" ".join(para))
        for chunk in chunks:
            said = split_sentences(_norm(_IMAGE.sub("", chunk)))
            out += [s for s in said if len(s.split()) >= MIN_WORDS and not points_at_media(s)]
    for _, text in prose_fields(doc):
        out += [s for s in split_sentences(_norm(text)) if len(s.split()) >= MIN_WORDS]
    return out


@dataclass
class SourceCoverage:
    documents: int = 0
    unplaced: int = 0
    sentences: int = 0
    sentences_placed: int = 0
    fields: int = 0
    fields_placed: int = 0


@dataclass
class Coverage:
    sources: dict[str, SourceCoverage] = field(default_factory=dict)
    unplaced: dict[str, str] = field(default_factory=dict)  # layer-1 path → why no page shows it
    missing: list[tuple[str, str]] = field(default_factory=list)  # (path, sentence or field) not placed

    def total(self) -> SourceCoverage:
        out = SourceCoverage()
        for c in self.sources.values():
            for name in out.__dataclass_fields__:
                setattr(out, name, getattr(out, name) + getattr(c, name))
        return out

    @staticmethod
    def share(placed: int, total: int) -> float:
        return placed / total if total else 1.0

    @property
    def sentence_share(self) -> float:
        t = self.total()
        return self.share(t.sentences_placed, t.sentences)

    @property
    def field_share(self) -> float:
        t = self.total()
        return self.share(t.fields_placed, t.fields)

    def summary(self) -> str:
        t = self.total()
        return (
            f"{self.sentence_share:.1%} of {t.sentences} source sentences and {self.field_share:.1%} of "
            f"{t.fields} fields reach a page; {len(self.unplaced)} unplaced source(s)"
        )

    @classmethod
    def joined(cls, parts: list[Coverage]) -> Coverage:
        """The coverage of consecutive runs of documents measured apart."""
        out = cls(unplaced=parts[0].unplaced)
        for part in parts:
            for name, c in part.sources.items():
                mine = out.sources.setdefault(name, SourceCoverage())
                for f in fields(SourceCoverage):
                    setattr(mine, f.name, getattr(mine, f.name) + getattr(c, f.name))
            out.missing += part.missing
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Coverage:
        """A coverage read back from ``as_dict`` (the first 100 of what is missing)."""
        return cls(
            {name: SourceCoverage(**c) for name, c in data["per_source"].items()},
            {u["path"]: u["reason"] for u in data["unplaced"]},
            [(m["path"], m["text"]) for m in data["missing"]],
        )

    def as_dict(self) -> dict:
        return {
            "sentences": round(self.sentence_share, 4),
            "fields": round(self.field_share, 4),
            "per_source": {name: asdict(c) for name, c in sorted(self.sources.items())},
            "unplaced": [{"path": p, "reason": r} for p, r in sorted(self.unplaced.items())],
            "missing": [{"path": p, "text": t} for p, t in self.missing[:100]],
        }


def measure(
    docs: Iterable[SourceDoc],
    cited_text: dict[str, list[str]],
    unplaced: dict[str, str],
    superseded_by: dict[str, str] | None = None,
) -> Coverage:
    """Coverage of ``docs`` given, per layer-1 path, the text of every wiki statement citing it.
    An older version's sentence also counts as placed where a newer version states it."""
    report = Coverage(unplaced=dict(unplaced))
    newer = superseded_by or {}
    for doc in docs:
        c = report.sources.setdefault(doc.source, SourceCoverage())
        c.documents += 1
        c.unplaced += doc.path in unplaced
        lines = list(cited_text.get(doc.path, ()))
        path, seen = doc.path, {doc.path}
        while path in newer and newer[path] not in seen:
            path = newer[path]
            seen.add(path)
            lines += cited_text.get(path, ())
        text = " ".join(_norm(t) for t in lines)
        for sentence in dict.fromkeys(doc_sentences(doc)):
            c.sentences += 1
            if sentence in text:
                c.sentences_placed += 1
            else:
                report.missing.append((doc.path, sentence))
        for fact in facts(doc):
            c.fields += 1
            if fact.value in text:
                c.fields_placed += 1
            else:
                report.missing.append((doc.path, f"{fact.key}: {fact.value}"))
    return report


def cited_texts(statements: Iterable[tuple[str, Iterable[str]]]) -> dict[str, list[str]]:
    """{layer-1 path: texts} from (statement text, cited paths) pairs."""
    out: dict[str, list[str]] = defaultdict(list)
    for text, paths in statements:
        for p in dict.fromkeys(paths):
            out[p].append(text)
    return out


def of_pages(
    docs: Iterable[SourceDoc],
    pages: Iterable,
    unplaced: dict[str, str],
    superseded_by: dict[str, str] | None = None,
) -> Coverage:
    """Coverage from parsed wiki pages (``lint.pages.WikiPage``): their cited statements."""
    pairs = ((st.text, [c.path for c in st.cites]) for page in pages for st in page.statements)
    return measure(docs, cited_texts(pairs), unplaced, superseded_by)


_MARKER = re.compile(r"^\s*(?:(?:[-*>|]|\d+\.)\s+)*")  # what a page puts before a line's text


def lines_of(path: str, text: str, ids: Mapping[str, str] | None = None) -> list[tuple[str, list[str]]]:
    """(text, cited layer-1 paths) of each line of a wiki page that cites a source, read as its
    text without the citations: a quicker read than the statements ``check`` parses. A table
    row whose cells list records by their pages' titles is read as their ids too (``ids``: a
    device's or an entry's page → its record's id; see ``draft.as_recorded``)."""
    pairs = []
    for line in text.split("\n"):
        if "layer1_sources/" in line:
            cited = [c.path for c in parse_citations(line, path)]
            if cited:
                line = strip_citations(line)
                pairs.append((_MARKER.sub("", line).strip(), cited))
                if ids and line.startswith("|"):  # and as the source lists the records it names
                    cells = line.strip("| ").split(" | ")
                    pairs.append(
                        (" | ".join(as_recorded(_norm(c), record_links(c, path, ids)) for c in cells), cited)
                    )
    return pairs
