"""What the search index holds: the searchable chunks of every file of a knowledge base.

Four kinds of chunk, each with a title, headings and body so BM25 can weight titles and headings
above body text:

- ``page``: every wiki page whole, plus one chunk per heading (with the citations in it);
- ``source``: every layer-1 section, carrying its heading path;
- ``doc``: every layer-1 document whole, for answers spread over its sections;
- ``index``: every ``index.md`` entry (title, keywords, summary), keyed by the page it links.

A layer-1 document's other names (``common_names``, ``aliases``…) are searched with its title, so
'rocket' finds the sections of the arugula entry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.markdown import plain_inline, split_sections
from ...transform.layer1 import frontmatter_handler, parse_doc

TYPE_CHECKING = False  # not typing's: only annotations name it
if TYPE_CHECKING:
    from ...core.models import SourceDoc


@dataclass(frozen=True)
class Chunk:
    """One searchable unit. ``path`` is the file a hit opens (for index entries, the page they link);
    ``refs`` are the layer-1 sections it stands for (``path#anchor``): a source section itself, or
    the citations inside a wiki chunk."""

    kind: str
    path: str
    anchor: str
    heading: str
    title: str
    headings: str
    body: str
    refs: tuple[str, ...] = ()
    names: str = ""  # other names of the subject, searched with the title
    page_type: str = ""  # a whole wiki page's ``type`` (entity, topic…): what it is an entry for


def source_chunks(doc: SourceDoc) -> list[Chunk]:
    """One chunk per section of a layer-1 document, then the document whole (kind ``doc``)."""
    from ...core.facts import aliases  # here: a search on a settled index indexes nothing

    names = ", ".join(n for n in aliases(doc.meta) if n.lower() != doc.title.lower())
    out = []
    for s in doc.sections:
        ref = doc.path + (f"#{s.anchor}" if s.anchor else "")
        body = plain_inline(s.text)
        if not s.anchor:
            desc = doc.meta.get("description")
            if isinstance(desc, str) and desc not in body:
                body = (desc + "\n" + body).strip()
        out.append(
            Chunk("source", doc.path, s.anchor, s.heading, doc.title, " > ".join(s.path), body, (ref,), names)
        )
    if not out:  # a file with frontmatter only is still findable by its title
        out.append(Chunk("source", doc.path, "", "", doc.title, "", "", (doc.path,), names))
    whole = "\n".join(ch.body for ch in out)
    heads = " ; ".join(s.heading for s in doc.sections if s.heading)
    out.append(Chunk("doc", doc.path, "", "", doc.title, heads, whole, (doc.path,), names))
    return out


SOURCE_LINE = "From: ["  # the sub-line naming the source a short heading quotes


def _source_headings(sections: list) -> dict[int, tuple[str, tuple[str, ...]]]:
    """A page heading kept short for readers ('Tracks', with 'From: Assembly › High Level Overview'
    on the line below) searched as the heading and its source's title ('Tracks (High Level Overview)'),
    as are the paths of the sections under it: {id(section): (heading, heading path)}."""
    out: dict[int, tuple[str, tuple[str, ...]]] = {}
    above: dict[int, tuple[str, bool]] = {}  # level → the heading in force as searched, and if renamed
    for s in sections:
        above = {lvl: v for lvl, v in above.items() if lvl < s.level}
        line = next((x for x in s.text.split("\n") if x.strip()), "")
        heading = s.heading
        if line.startswith(SOURCE_LINE):
            heading = f"{s.heading} ({plain_inline(line.rpartition(' › ')[2].removeprefix('From: '))})"
        above[s.level] = (heading, heading != s.heading)
        if any(renamed for _, renamed in above.values()):
            out[id(s)] = (heading, tuple(h for lvl, (h, _) in sorted(above.items()) if lvl > 1))
    return out


Written = tuple[dict, str, str]  # a page as its writer joined it: frontmatter (dict, YAML), body


def page_chunks(rel: str, text: str, written: Written | None = None) -> list[Chunk]:
    """A wiki page whole, then one chunk per heading; citations become ``refs``, not text.
    ``written``: the parts its writer joined into ``text`` (``workers.page_parts``), read instead of
    parsing the text again; they read the same (``test_scale``)."""
    from ..draft import cited_and_stripped

    found = _as_written(written) if written is not None else None
    if found is None:
        found = _parsed_page(text)
        if found is None:
            return []
    meta, body = found
    title = str(meta.get("title") or Path(rel).stem)
    sections = split_sections(body)
    chunks: list[Chunk] = []
    all_refs: list[str] = []
    all_text: list[str] = []
    heads: list[str] = []
    named = _source_headings(sections)
    folder = os.path.dirname(rel)
    for s in sections:
        lines = s.text.split("\n")
        refs: list[str] = []
        plain: list[str] = []
        for line in lines:
            cited, stripped = cited_and_stripped(line, folder)
            refs += cited
            plain.append(plain_inline(stripped))
        refs = list(dict.fromkeys(refs))
        text_ = "\n".join(p for p in plain if p.strip())
        if s.level == 1:  # the page title: its text joins the whole-page chunk only
            all_text.append(text_)
            all_refs += refs
            continue
        if s.heading == "See also":
            continue
        heading, path = named.get(id(s), (s.heading, s.path[1:]))
        heads.append(heading)
        all_text.append(text_)
        all_refs += refs
        if text_ or refs:
            chunks.append(Chunk("page", rel, s.anchor, heading, title, " > ".join(path), text_, tuple(refs)))
    extra = " ".join([str(meta.get("summary") or ""), " ".join(map(str, meta.get("keywords") or []))])
    whole = Chunk(
        "page",
        rel,
        "",
        "",
        title,
        " ; ".join(heads) + " " + extra,
        "\n".join(all_text),
        tuple(dict.fromkeys(all_refs)),
        page_type=str(meta.get("type") or "page"),
    )
    return [whole, *chunks]


def _parsed_page(text: str) -> tuple[dict, str] | None:
    """A page's frontmatter and body, as read from its text (None: its frontmatter cannot be read)."""
    import frontmatter
    import yaml

    try:
        post = frontmatter.loads(text, handler=frontmatter_handler())
    except (ValueError, yaml.YAMLError):
        return None
    return post.metadata, post.content


def _as_written(written: Written) -> tuple[dict, str] | None:
    """What ``_parsed_page`` reads from ``---\\n{yaml}---\\n\\n{body}``, the page its writer joined:
    the dict its YAML was dumped from and the body, stripped as the frontmatter reader strips it;
    None when a line of the YAML would end the frontmatter early (then the text is parsed)."""
    meta, head, body = written
    if frontmatter_handler().FM_BOUNDARY.search(head):
        return None
    return meta, body.strip()


_ENTRY = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<href>[^)\s]+)\)\s*(?:—\s*(?P<rest>.*))?$")


@dataclass(frozen=True)
class IndexEntry:
    path: str  # the wiki page it links, relative to the KB root
    title: str
    summary: str
    keywords: tuple[str, ...]
    line: str


def parse_index(rel: str, text: str) -> tuple[list[IndexEntry], list[str]]:
    """Entries of an index file, and the sub-index files it links (two-level indexes)."""
    from ..draft import resolve_href

    entries, subs = [], []
    for line in text.split("\n"):
        m = _ENTRY.match(line.strip())
        if not m:
            continue
        target = resolve_href(rel, m.group("href"))
        if target.startswith("wiki/index/") or target == "wiki/index.md":
            subs.append(target)
            continue
        rest = m.group("rest") or ""
        summary, _, kws = rest.partition("*Keywords:*")
        keywords = tuple(k.strip() for k in kws.split(",") if k.strip())
        entries.append(IndexEntry(target, m.group("title"), summary.strip(), keywords, line.strip()))
    return entries, subs


def read_index_entries(root: Path) -> list[IndexEntry]:
    """Every entry of ``wiki/index.md``, following a two-level index into its parts."""
    out: list[IndexEntry] = []
    todo, seen = ["wiki/index.md"], set()
    while todo:
        rel = todo.pop(0)
        if rel in seen or not (root / rel).is_file():
            continue
        seen.add(rel)
        entries, subs = parse_index(rel, (root / rel).read_text("utf-8"))
        out += entries
        todo += subs
    return out


def index_chunks(rel: str, text: str) -> list[Chunk]:
    entries, _ = parse_index(rel, text)
    return [Chunk("index", e.path, "", "", e.title, ", ".join(e.keywords), e.summary) for e in entries]


def chunks_of(
    root: Path, rel: str, kind: str, data: bytes, doc: SourceDoc | None = None
) -> tuple[list[Chunk], SourceDoc | None]:
    """The chunks of one file, and the layer-1 document it is when it is a source (``doc``: that
    document already parsed from these bytes)."""
    if kind == "source":
        doc = doc or parse_doc(root, root / rel, data)
        return source_chunks(doc), doc
    text = data.decode("utf-8", errors="replace")
    return (index_chunks(rel, text) if kind == "index" else page_chunks(rel, text)), None


def lead_ref(doc: SourceDoc) -> str:
    """The section a whole-document hit stands for when none of its sections matched the
    question: its first section (``path#`` when that section has no heading)."""
    return doc.path + (f"#{doc.sections[0].anchor}" if doc.sections else "")


def split_ref(ref: str) -> tuple[str, str]:
    """``path#anchor`` → (path, anchor); a ref without an anchor names its whole document."""
    path, _, anchor = ref.partition("#")
    return path, anchor
