"""``wikic check``: lint the whole knowledge base.

The orchestrator ``check`` gathers everything once (layer-1 documents, the plan, the wiki pages,
layer-0 integrity) and then runs each rule as a plain function over that state. A rule yields
``Finding`` values; nothing here prints or writes. Rules and their severities are listed in
``RULES``: errors are problems a compiled KB never has (exit 1), warnings are worth a look.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

import yaml

from .citations import Verifier, stem
from .draft import ANY_LINK, CITE_LINK, SUPERSEDED_MARK, Citation, parse_citations, resolve_href
from .errors import KBError
from .fsutil import sha256_tag
from .layer1 import LAYER1, load_layer1
from .markdown import STOPWORDS, anchors, code_lines, content_words, github_slug, heading, plain_inline
from .models import Snapshot, SourceDoc
from .plan import current_of
from .wikischema import WikiSchema

WIKI = "wiki"
ERROR, WARNING = "error", "warning"

RULES: dict[str, tuple[str, str]] = {
    "broken-link": (ERROR, "a link or citation whose file or anchor does not exist"),
    "uncited-sentence": (ERROR, "a prose sentence or fact table row without a citation"),
    "unsupported-citation": (ERROR, "a sentence its citations do not support"),
    "orphan-page": (ERROR, "a page with no inbound link that is not in the index"),
    "unindexed-page": (WARNING, "a page the index does not list"),
    "index-dangling": (ERROR, "an index line linking a page that does not exist"),
    "stale-page": (ERROR, "a page whose fingerprint no longer matches its sources; recompile"),
    "uncovered-source": (WARNING, "a layer-1 source no page uses"),
    "duplicate-page": (WARNING, "two pages on one subject"),
    "contradiction": (ERROR, "sources state different values for one fact, unresolved by supersession"),
    "superseded-citation": (ERROR, "a citation of an older version outside a Superseded note"),
    "layer0-tampered": (ERROR, "a layer-0 snapshot whose hash does not match"),
    "hand-edited-generated": (ERROR, "a generated layer-1 file edited by hand"),
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    path: str
    line: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.severity} [{self.rule}] {self.message}"


def finding(rule: str, path: str, line: int | None, message: str, severity: str | None = None) -> Finding:
    return Finding(rule, severity or RULES[rule][0], path, line, message)


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)
    pages: int = 0
    sources: int = 0
    statements: int = 0
    seconds: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def as_json(self) -> dict[str, list[dict]]:
        return {
            "errors": [f.as_dict() for f in self.errors],
            "warnings": [f.as_dict() for f in self.warnings],
        }


# ---------------------------------------------------------------------------------------------
# Wiki pages: frontmatter, links and the statements that need a citation


@dataclass(frozen=True)
class Statement:
    """Text that must carry a citation: a sentence (or the text before a citation run) or a fact cell.

    ``line`` is 1-based within the page file. ``in_note`` marks the quoted statement of a
    ``> **Superseded**`` note, the legitimate place to cite an older version.
    """

    line: int
    text: str
    cites: tuple[Citation, ...]
    kind: str = "sentence"  # sentence | cell
    in_note: bool = False
    label: str = ""  # cell: "<row label> / <column>"


@dataclass(frozen=True)
class Link:
    line: int
    href: str
    target: str  # KB-root-relative path ('' for a same-page anchor)
    anchor: str
    is_citation: bool


@dataclass
class WikiPage:
    path: str
    meta: dict[str, Any]
    lines: list[str]  # the whole file, split on '\n'
    body_start: int  # 0-based index of the first body line

    @property
    def body(self) -> str:
        return "\n".join(self.lines[self.body_start :])

    @property
    def managed(self) -> bool:
        return isinstance(self.meta.get("wikic"), dict)

    @property
    def is_index(self) -> bool:
        return self.path == f"{WIKI}/index.md" or self.path.startswith(f"{WIKI}/index/")

    @property
    def is_special(self) -> bool:
        return self.is_index or self.path == f"{WIKI}/log.md"

    @cached_property
    def anchors(self) -> set[str]:
        return anchors(self.body)

    @cached_property
    def links(self) -> list[Link]:
        return list(_links(self))

    @cached_property
    def statements(self) -> list[Statement]:
        return [] if self.is_special else list(_statements(self))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_page(root: Path, path: Path) -> WikiPage:
    rel = path.relative_to(root).as_posix()
    text = path.read_text("utf-8")
    lines = text.split("\n")
    meta: dict[str, Any] = {}
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                try:
                    loaded = yaml.load("\n".join(lines[1:i]), Loader=_LOADER)  # noqa: S506 - safe loader
                except yaml.YAMLError as exc:
                    raise KBError(f"{rel}: cannot read frontmatter ({exc}); fix the YAML") from None
                meta = loaded if isinstance(loaded, dict) else {}
                start = i + 1
                break
    return WikiPage(rel, meta, lines, start)


def wiki_pages(root: Path) -> list[WikiPage]:
    folder = root / WIKI
    if not folder.is_dir():
        return []
    return [
        read_page(root, p)
        for p in sorted(folder.rglob("*.md"))
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]


_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE_SPAN = re.compile(r"`[^`]*`")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_NOTE_LEAD = "> " + SUPERSEDED_MARK


def _body_lines(page: WikiPage) -> Iterator[tuple[int, str]]:
    """(1-based file line, text) of body lines outside code fences."""
    body = page.lines[page.body_start :]
    for i, line, code in code_lines(body):
        if not code:
            yield page.body_start + i + 1, line


def _links(page: WikiPage) -> Iterator[Link]:
    for n, line in _body_lines(page):
        for m in ANY_LINK.finditer(_CODE_SPAN.sub("", line)):
            href = m.group(2)
            if _EXTERNAL.match(href):
                continue
            target, _, anchor = href.partition("#")
            target = unquote(target)
            path = resolve_href(page.path, target) if target else ""
            is_cite = bool(CITE_LINK.fullmatch(m.group(0)))
            yield Link(n, href, path, unquote(anchor), is_cite)


def split_cells(row: str) -> list[str]:
    """Cells of a Markdown table row; '\\|' is a literal bar inside a cell."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def chunks(text: str, page_path: str) -> list[tuple[str, tuple[Citation, ...]]]:
    """Split a line into (text, citations) runs: each citation run covers the text before it.

    Text after the last citation that is more than punctuation comes back with no citations.
    """
    out: list[tuple[str, list[Citation]]] = []
    pos = 0
    for m in CITE_LINK.finditer(text):
        segment = text[pos : m.start()]
        cite = parse_citations(m.group(0), page_path)
        if segment.strip(" \t,;") or not out:
            out.append((segment, cite))
        else:
            out[-1][1].extend(cite)
        pos = m.end()
    tail = text[pos:]
    if re.search(r"[^\W_]", plain_inline(tail)):
        out.append((tail, []))
    return [(" ".join(plain_inline(t).split()), tuple(c)) for t, c in out if t.strip() or c]


def _is_nav(text: str) -> bool:
    """A line that is nothing but links to wiki pages (a 'See also' or link list item)."""
    links = ANY_LINK.findall(text)
    if not links or CITE_LINK.search(text):
        return False
    rest = ANY_LINK.sub("", _LIST_MARK.sub("", text))
    return not re.search(r"[^\W_]", rest)


def _statements(page: WikiPage) -> Iterator[Statement]:
    see_also_level = 0  # inside a 'See also' section of this heading level
    in_note = False
    header: list[str] = []
    prev_table = False
    lines = list(_body_lines(page))
    for idx, (n, line) in enumerate(lines):
        stripped = line.strip()
        h = heading(line)
        if h:
            level = h[0]
            if see_also_level and level <= see_also_level:
                see_also_level = 0
            if github_slug(h[1]) == "see-also":
                see_also_level = level
            in_note = prev_table = False
            continue
        if not stripped:
            in_note = prev_table = False
            continue
        if see_also_level:
            continue
        if stripped.startswith(_NOTE_LEAD):
            in_note = True  # the lead-in ("An earlier version, updated …, said:") needs no citation
            continue
        quoted = stripped.startswith(">")
        if quoted:
            stripped = stripped.lstrip(">").strip()
            if not stripped:
                continue
        if stripped.startswith("|"):
            nxt = lines[idx + 1][1] if idx + 1 < len(lines) else ""
            if _TABLE_SEP.match(stripped):
                continue
            if not prev_table and _TABLE_SEP.match(nxt.strip()):
                header, prev_table = split_cells(stripped), True
                continue
            prev_table = True
            cells = split_cells(stripped)
            row_label = plain_inline(cells[0]) if cells else ""
            for ci, cell in enumerate(cells[1:], 1):
                parts = chunks(cell, page.path)
                text = " ".join(t for t, _ in parts)
                cites = tuple(c for _, cs in parts for c in cs)
                if not text or text in ("—", "-", "–", "n/a"):
                    continue
                column = header[ci] if ci < len(header) else f"column {ci + 1}"
                yield Statement(n, text, cites, "cell", in_note and quoted, f"{row_label} / {column}")
            continue
        prev_table = False
        if stripped.startswith(("<!--", "<")) or _is_nav(stripped):
            continue
        body = _LIST_MARK.sub("", stripped)
        for text, cites in chunks(body, page.path):
            if text or cites:
                yield Statement(n, text, cites, "sentence", in_note and quoted)


# ---------------------------------------------------------------------------------------------
# The gathered state every rule reads


@dataclass
class KB:
    root: Path
    docs: dict[str, SourceDoc]
    pages: list[WikiPage]
    superseded_by: dict[str, str]
    verifier: Verifier
    schema: WikiSchema | None
    plan: Any = None  # plan.Plan, or None without a readable schema

    @cached_property
    def content_pages(self) -> list[WikiPage]:
        return [p for p in self.pages if not p.is_special]

    @cached_property
    def page_paths(self) -> set[str]:
        return {p.path for p in self.pages}


def gather(root: Path) -> KB:
    from .plan import plan, supersession
    from .wikischema import load_wiki_schema

    docs_list = load_layer1(root)
    docs = {d.path: d for d in docs_list}
    schema = None
    the_plan = None
    if (root / "schema" / "wiki.yaml").exists():
        schema = load_wiki_schema(root)
        the_plan = plan(docs_list, schema)
        superseded = the_plan.superseded_by
    else:
        superseded = supersession(docs_list)
    min_overlap = schema.min_overlap if schema else 0.6
    return KB(
        root,
        docs,
        wiki_pages(root),
        superseded,
        Verifier(docs_list, min_overlap),
        schema,
        the_plan,
    )


def check(root: Path) -> CheckReport:
    """Run every rule over the KB at ``root``."""
    started = time.perf_counter()
    kb = gather(root)
    report = CheckReport(pages=len(kb.content_pages), sources=len(kb.docs))
    report.statements = sum(len(p.statements) for p in kb.content_pages)
    for rule in (
        rule_links,
        rule_citations,
        rule_reachability,
        rule_stale,
        rule_uncovered,
        rule_duplicates,
        rule_contradictions,
        rule_layer0,
        rule_hand_edited,
    ):
        report.findings.extend(rule(kb))
    report.findings.sort(key=lambda f: (f.severity != ERROR, f.path, f.line or 0, f.rule, f.message))
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------------------------------------
# Rules


def rule_links(kb: KB) -> Iterator[Finding]:
    """broken-link for pages and citations; index-dangling for index lines to missing pages."""
    by_path = {p.path: p for p in kb.pages}
    for page in kb.pages:
        for link in page.links:
            if link.is_citation or link.target.startswith(LAYER1 + "/"):
                problem = kb.verifier.resolve(Citation(link.target, link.anchor))
                if problem:
                    yield finding(
                        "broken-link", page.path, link.line, f"{problem}; fix or recompile the page"
                    )
                continue
            if not link.target:
                if link.anchor and link.anchor not in page.anchors:
                    yield finding(
                        "broken-link", page.path, link.line, f"#{link.anchor} is not a heading here"
                    )
                continue
            exists = link.target in by_path or (kb.root / link.target).exists()
            if not exists:
                if page.is_index and link.target.startswith(WIKI + "/"):
                    yield finding(
                        "index-dangling",
                        page.path,
                        link.line,
                        f"links {link.target}, which does not exist; run 'wikic compile' to rebuild the index",
                    )
                else:
                    yield finding("broken-link", page.path, link.line, f"links {link.href}: no such file")
                continue
            target = by_path.get(link.target)
            if link.anchor and target is not None and link.anchor not in target.anchors:
                yield finding(
                    "broken-link",
                    page.path,
                    link.line,
                    f"links {link.href}: #{link.anchor} is not a heading of {link.target}",
                )


def rule_citations(kb: KB) -> Iterator[Finding]:
    """uncited-sentence, unsupported-citation and superseded-citation."""
    for page in kb.content_pages:
        uncited_rows: dict[int, list[str]] = defaultdict(list)
        for st in page.statements:
            if not st.cites:
                if st.kind == "cell":
                    uncited_rows[st.line].append(st.label)
                else:
                    yield finding(
                        "uncited-sentence",
                        page.path,
                        st.line,
                        f"no citation: {_short(st.text)!r}; cite the layer-1 section that says it",
                    )
                continue
            if any(kb.verifier.resolve(c) for c in st.cites):
                continue  # reported as broken-link
            for c in st.cites:
                newer = kb.superseded_by.get(c.path)
                if newer and not st.in_note:
                    current = current_of(c.path, kb.superseded_by)
                    yield finding(
                        "superseded-citation",
                        page.path,
                        st.line,
                        f"cites {c.path}, superseded by {current}; cite the current version "
                        f"(older ones belong in a '> {SUPERSEDED_MARK}' note)",
                    )
            result = kb.verifier.check(st.text, st.cites)
            if not result.ok:
                yield finding(
                    "unsupported-citation",
                    page.path,
                    st.line,
                    f"{_short(st.text)!r}: {result.reason}",
                )
        for line, labels in sorted(uncited_rows.items()):
            yield finding(
                "uncited-sentence",
                page.path,
                line,
                f"table cells without a citation: {', '.join(labels[:4])}"
                + (" …" if len(labels) > 4 else ""),
            )


def rule_reachability(kb: KB) -> Iterator[Finding]:
    """orphan-page (no inbound link, not indexed) and unindexed-page."""
    indexed: set[str] = set()
    inbound: set[str] = set()
    for page in kb.pages:
        for link in page.links:
            if link.target and link.target != page.path:
                (indexed if page.is_index else inbound).add(link.target)
    for page in kb.content_pages:
        if page.path in indexed:
            continue
        if page.path not in inbound:
            yield finding(
                "orphan-page",
                page.path,
                None,
                "no page links here and the index does not list it; run 'wikic compile' or delete it",
            )
        else:
            yield finding("unindexed-page", page.path, None, "wiki/index.md does not list this page")


class _Lib(SimpleNamespace):
    name: str
    model: str


def _librarian_of(meta: dict) -> _Lib:
    """The backend identity that went into a page's fingerprint."""
    info = meta.get("wikic") or {}
    backend = str(info.get("backend", "offline"))
    if backend == "offline":
        from .librarian.offline import OfflineLibrarian

        return _Lib(name=OfflineLibrarian.name, model=OfflineLibrarian.model)
    return _Lib(name=backend, model=str(info.get("model", "")))


def rule_stale(kb: KB) -> Iterator[Finding]:
    """stale-page: recompute each managed page's fingerprint from the current sources and plan."""
    if kb.plan is None or kb.schema is None:
        return
    from .compile import fingerprint, related_pages

    specs = {s.path: s for s in kb.plan.pages}
    related = related_pages(kb.plan)
    existing = {p.path: p for p in kb.content_pages}
    for page in kb.content_pages:
        if not page.managed:
            continue
        spec = specs.get(page.path)
        if spec is None:
            yield finding(
                "stale-page",
                page.path,
                None,
                "no longer planned (its sources are gone or moved); 'wikic compile' removes it",
            )
            continue
        fp = fingerprint(spec, kb.docs, kb.schema, _librarian_of(page.meta), related[spec.path])  # type: ignore[arg-type]
        if page.meta["wikic"].get("fingerprint") != fp:
            changed = _changed_inputs(page, spec, kb)
            yield finding(
                "stale-page",
                page.path,
                None,
                "out of date" + (f" ({changed})" if changed else "") + "; run 'wikic compile'",
            )
    for spec in kb.plan.pages:
        if spec.path not in existing:
            yield finding(
                "stale-page",
                spec.path,
                None,
                "planned from the sources but not compiled; run 'wikic compile'",
                WARNING,
            )


def _changed_inputs(page: WikiPage, spec: Any, kb: KB) -> str:
    old = [str(s) for s in page.meta.get("sources") or []]
    new = list(spec.sources)
    added = [p for p in new if p not in old]
    gone = [p for p in old if p not in new]
    parts = []
    if added:
        parts.append("new sources: " + ", ".join(added[:3]) + (" …" if len(added) > 3 else ""))
    if gone:
        parts.append("sources gone: " + ", ".join(gone[:3]) + (" …" if len(gone) > 3 else ""))
    if not parts:
        parts.append("a source, the schema, the rules or the librarian changed")
    return "; ".join(parts)


def rule_uncovered(kb: KB) -> Iterator[Finding]:
    used: set[str] = set()
    for page in kb.content_pages:
        used.update(str(s) for s in page.meta.get("sources") or [])
        used.update(c.path for st in page.statements for c in st.cites)
    for path in sorted(kb.docs):
        if path not in used:
            yield finding(
                "uncovered-source",
                path,
                None,
                "no wiki page uses this source; add a device match, topic rule or guide in "
                "schema/wiki.yaml, or run 'wikic compile'",
            )


def rule_duplicates(kb: KB) -> Iterator[Finding]:
    """duplicate-page: the same title, or (same page type) near-identical source sets."""
    by_title: dict[str, list[WikiPage]] = defaultdict(list)
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
    by_type: dict[str, list[tuple[WikiPage, frozenset[str]]]] = defaultdict(list)
    for page in kb.content_pages:
        srcs = frozenset(str(s) for s in page.meta.get("sources") or [])
        if len(srcs) >= 3:
            by_type[str(page.meta.get("type", ""))].append((page, srcs))
    for items in by_type.values():  # pages, not sentences: a few hundred at most
        for i, (a, sa) in enumerate(items):
            for b, sb in items[i + 1 :]:
                jaccard = len(sa & sb) / len(sa | sb)
                if jaccard >= 0.8:
                    yield finding(
                        "duplicate-page",
                        b.path,
                        None,
                        f"{jaccard:.0%} of its sources are those of {a.path}; merge the two subjects",
                    )


def rule_layer0(kb: KB) -> Iterator[Finding]:
    from .layer0 import verify

    _, problems = verify(kb.root)
    for p in problems:
        yield finding(
            "layer0-tampered",
            p.path,
            None,
            f"{p.reason}; refetch or restore it from git (never edit layer 0)",
        )


def rule_hand_edited(kb: KB) -> Iterator[Finding]:
    """A generated layer-1 file whose bytes differ from what transform wrote (or would write)."""
    from .fsutil import read_json_artifact
    from .transform import SCHEMA_VERSION, STATE

    try:
        state = read_json_artifact(kb.root / STATE, SCHEMA_VERSION) or {}
    except KBError:
        state = {}
    except Exception:  # an unreadable cache is rebuilt, never fatal
        state = {}
    written = {
        rel: e.get("sha256")
        for s in state.get("sources", {}).values()
        for rel, e in s.get("files", {}).items()
    }
    renderers: dict[str, Any] = {}
    config = None
    for path, doc in sorted(kb.docs.items()):
        if doc.meta.get("generated_by") != "wikic":
            continue
        recorded = written.get(path)
        if recorded is not None:
            if recorded != doc.sha256:
                yield finding(
                    "hand-edited-generated",
                    path,
                    None,
                    "generated by 'wikic transform' but edited since; move the edit to a hand-maintained "
                    "file or the source API, then rerun 'wikic transform'",
                )
            continue
        # No record of this file (e.g. a fresh clone: .wikic/ is not in git): render it again.
        if config is None:
            config = _load_config(kb.root)
        expected = _rerender(kb.root, doc, config, renderers)
        if expected is not None and sha256_tag(expected) != doc.sha256:
            yield finding(
                "hand-edited-generated",
                path,
                None,
                "differs from what 'wikic transform' renders from its layer-0 snapshot; rerun "
                "'wikic transform' (hand edits belong in a hand-maintained file)",
            )


def _load_config(root: Path) -> Any:
    from .config import load_sources

    try:
        return load_sources(root)
    except Exception:
        return False


def _rerender(root: Path, doc: SourceDoc, config: Any, renderers: dict[str, Any]) -> bytes | None:
    from .errors import SourceError
    from .transform import Renderer

    layer0 = doc.meta.get("layer0")
    if not config or doc.source not in config.sources or not isinstance(layer0, dict):
        return None
    try:
        body = json.loads((root / str(layer0.get("path"))).read_text("utf-8"))
        snap = Snapshot(
            doc.source,
            str(body["id"]),
            PurePosixPath(doc.path).relative_to(f"{LAYER1}/{doc.source}").with_suffix("").as_posix(),
            str(body["sha256"]),
            str(layer0.get("path")),
            str(body["url"]),
            str(body["fetched_at"]),
            body["record"],
        )
        if doc.source not in renderers:
            renderers[doc.source] = Renderer(root, config.sources[doc.source])
        return renderers[doc.source].render(snap).encode("utf-8")
    except (OSError, ValueError, KeyError, TypeError, SourceError):
        return None  # a missing or unreadable snapshot is layer0-tampered's to report


# ---------------------------------------------------------------------------------------------
# Contradictions: structured fields of one subject, and numbers with units in comparable sentences

_NOT_FACTS = {
    "title",
    "source",
    "id",
    "url",
    "updated_at",
    "published_at",
    "created_at",
    "generated_by",
    "layer0",
    "supersedes",
    "hand_maintained",
    "author",
    "slug",
    "icon",
    "image",
    "tags",
    "products",
    "category",
    "product",
    "section",
    "type",
    "device",
    "position",
    "order",
    "summary",
    "description",
    "svg_icon",
    "html_url",
}


def _fact_value(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return f"{float(value):g}"
    if isinstance(value, str):
        v = " ".join(value.split())
        if not v or len(v) > 80 or "://" in v or v.startswith("/"):
            return None
        try:
            return f"{float(v):g}"
        except ValueError:
            return v.casefold()
    return None


def _fact_fields(doc: SourceDoc) -> dict[str, tuple[str, Any]]:
    out = {}
    for key, value in doc.meta.items():
        if key in _NOT_FACTS or key.startswith("record_") or key.endswith(("_at", "_url", "_id")):
            continue
        norm = _fact_value(value)
        if norm is not None:
            out[key] = (norm, value)
    return out


def _subject_keys(doc: SourceDoc) -> list[str]:
    keys = [f"title:{github_slug(doc.title)}"]
    if not doc.id.isdigit():
        keys.append(f"id:{PurePosixPath(doc.id).stem.lower()}")
    return keys


def rule_contradictions(kb: KB) -> Iterator[Finding]:
    current = [d for p, d in sorted(kb.docs.items()) if p not in kb.superseded_by]
    yield from _field_contradictions(kb, current)
    yield from _sentence_contradictions(kb, current)


def _field_contradictions(kb: KB, docs: list[SourceDoc]) -> Iterator[Finding]:
    groups: dict[str, list[SourceDoc]] = defaultdict(list)
    for d in docs:
        for key in _subject_keys(d):
            groups[key].append(d)
    seen: set[tuple[str, str, str]] = set()
    fields = {d.path: _fact_fields(d) for d in docs}
    for members in groups.values():
        if len(members) < 2:
            continue
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if a.source == b.source:
                    continue  # one API, two records: separate subjects (versions use supersedes)
                for name in sorted(fields[a.path].keys() & fields[b.path].keys()):
                    (va, raw_a), (vb, raw_b) = fields[a.path][name], fields[b.path][name]
                    if va == vb or (a.path, b.path, name) in seen:
                        continue
                    seen.add((a.path, b.path, name))
                    yield finding(
                        "contradiction",
                        b.path,
                        _field_line(kb.root, b.path, name),
                        f"{name} is {raw_b!r} here but {raw_a!r} in {a.path} (both about {b.title!r}); "
                        "correct one, or mark the newer one with 'supersedes:'",
                    )


def _field_line(root: Path, path: str, name: str) -> int | None:
    try:
        for n, line in enumerate((root / path).read_text("utf-8").split("\n"), 1):
            if line.startswith(f"{name}:"):
                return n
    except OSError:
        pass
    return None


_UNIT_WORDS = {
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "hour": "hour",
    "hours": "hour",
    "hr": "hour",
    "hrs": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "mins": "minute",
    "second": "second",
    "seconds": "second",
    "sec": "second",
    "mm": "mm",
    "millimetre": "mm",
    "millimetres": "mm",
    "millimeter": "mm",
    "millimeters": "mm",
    "cm": "cm",
    "centimetre": "cm",
    "centimetres": "cm",
    "centimeter": "cm",
    "centimeters": "cm",
    "m": "m",
    "metre": "m",
    "metres": "m",
    "meter": "m",
    "meters": "m",
    "inch": "inch",
    "inches": "inch",
    "ft": "ft",
    "feet": "ft",
    "foot": "ft",
    "l": "l",
    "litre": "l",
    "litres": "l",
    "liter": "l",
    "liters": "l",
    "ml": "ml",
    "w": "w",
    "watt": "w",
    "watts": "w",
    "v": "v",
    "volt": "v",
    "volts": "v",
    "kg": "kg",
    "g": "g",
    "grams": "g",
    "lb": "lb",
    "lbs": "lb",
    "%": "%",
    "percent": "%",
    "°c": "°c",
    "°f": "°f",
}
_NUM = r"\d+(?:\.\d+)?"
# '60 days', '45-day', '8–10 cm', '12 to 18 hours', '$179'
_QUANTITY = re.compile(
    rf"(?<![\w.,])(?:({_NUM})\s*(?:[–-]|to)\s*)?({_NUM})(?:\s*|-)(%|°[CF]|[A-Za-z]+)(?![\w-])"
    rf"|\$\s?({_NUM})(?!\d)"
)
_MIN_SHARED, _MIN_JACCARD, _MAX_POSTING = 4, 0.6, 300


def quantities(text: str) -> dict[str, frozenset[str]]:
    """{unit: values} of the numbers with a known unit in ``text``: '45-day' → {'day': {'45'}}."""
    out: dict[str, set[str]] = defaultdict(set)
    for m in _QUANTITY.finditer(text):
        if m.group(4):
            out["usd"].add(f"{float(m.group(4)):g}")
            continue
        unit = _UNIT_WORDS.get(m.group(3).lower())
        if unit:
            out[unit].update(f"{float(v):g}" for v in m.group(1, 2) if v)
    return {u: frozenset(v) for u, v in out.items()}


@dataclass
class _Claim:
    doc: SourceDoc
    text: str
    quantities: dict[str, frozenset[str]]
    stems: frozenset[str]
    names: frozenset[str]  # capitalised names in the sentence
    subject: frozenset[str]  # ... and in its document's title


_CAPITALISED = re.compile(r"\b([A-Z][A-Za-z]+(?:[ -]?(?:v?\d+(?:\.\d+)*|XL)\b)?)")


def entities(text: str, *, title: bool = False) -> set[str]:
    """Capitalised names, with a model number where one follows: 'Grove 6', 'Express XL'.

    The first word only counts in a title, and there only with a model number or in a short title
    ('Sprout 3', 'Spinach', but not 'Longer returns and free return shipping').
    """
    found = set()
    short = len(text.split()) <= 3
    for m in _CAPITALISED.finditer(text):
        name = m.group(1).lower()
        first_ok = title and (short or any(ch.isdigit() for ch in name))
        if (m.start() > 0 or first_ok) and name not in STOPWORDS:
            found.add(name)
    return found


def _claims(doc: SourceDoc) -> Iterator[_Claim]:
    from .librarian.extract import prose_units

    subject = frozenset(entities(doc.title, title=True))
    for section in doc.sections:
        for kind, sentence in prose_units(section.text):
            qty = quantities(sentence)
            if kind != "para" or not qty or len(sentence.split()) > 60:
                continue
            stems = frozenset(stem(w) for w in content_words(sentence) if w not in _UNIT_WORDS)
            yield _Claim(doc, sentence, qty, stems, frozenset(entities(sentence)), subject)


def _same_subject(a: _Claim, b: _Claim) -> bool:
    if a.subject and b.subject and not a.subject & b.subject:
        return bool(a.names & b.subject or b.names & a.subject)
    return not (a.names and b.names and not a.names & b.names)


def _sentence_contradictions(kb: KB, docs: list[SourceDoc]) -> Iterator[Finding]:
    """Comparable sentences (same unit, mostly the same words, same subject) with different values.

    Candidate pairs come from an inverted index of word stems per unit, so the cost grows with the
    number of sentences sharing words, not with the square of all sentences. A pair is resolved
    when the later document mentions the other value (it acknowledges the change).
    """
    claims: list[_Claim] = []
    for d in docs:
        claims.extend(_claims(d))
    full_text: dict[str, dict[str, frozenset[str]]] = {}
    reported: set[tuple[str, str, str]] = set()
    postings: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, c in enumerate(claims):
        for unit in c.quantities:
            for s in c.stems:
                postings[(unit, s)].append(i)
    for i, a in enumerate(claims):
        for unit, values in a.quantities.items():
            shared: Counter[int] = Counter()
            for s in a.stems:
                plist = postings[(unit, s)]
                if len(plist) > _MAX_POSTING:
                    continue
                for j in plist:
                    if j > i:
                        shared[j] += 1
            for j, n in shared.items():
                if n < _MIN_SHARED:
                    continue
                b = claims[j]
                if b.doc.path == a.doc.path or b.quantities[unit] & values:
                    continue
                if n / len(a.stems | b.stems) < _MIN_JACCARD:
                    continue
                if not _same_subject(a, b):
                    continue  # about different things (Sprout 3 vs Grove 6)
                key = tuple(sorted((a.doc.path, b.doc.path))) + (unit,)
                if key in reported or _acknowledged(kb, a, b, unit, full_text):
                    continue
                reported.add(key)  # type: ignore[arg-type]
                older, newer = sorted((a, b), key=lambda c: str(c.doc.meta.get("updated_at", "")))
                yield finding(
                    "contradiction",
                    newer.doc.path,
                    _sentence_line(kb.root, newer),
                    f"says {_fmt(newer.quantities[unit], unit)} ({_short(newer.text, 90)!r}) but "
                    f"{older.doc.path} says {_fmt(older.quantities[unit], unit)} "
                    f"({_short(older.text, 90)!r}); if one replaces the other, add 'supersedes:' to it",
                    WARNING,
                )


def _acknowledged(kb: KB, a: _Claim, b: _Claim, unit: str, cache: dict) -> bool:
    """True when either document also states the other's value (e.g. 'replaces the 45-day policy')."""
    for this, other in ((a, b), (b, a)):
        q = cache.get(this.doc.path)
        if q is None:
            q = cache[this.doc.path] = quantities(plain_inline(this.doc.body))
        if q.get(unit, frozenset()) & other.quantities[unit]:
            return True
    return False


def _sentence_line(root: Path, claim: _Claim) -> int | None:
    words = claim.text.split()[:5]
    if not words:
        return None
    try:
        lines = (root / claim.doc.path).read_text("utf-8").split("\n")
    except OSError:
        return None
    needle = words[0]
    for n, line in enumerate(lines, 1):
        if needle in line and all(w.strip("*_`") in plain_inline(line) for w in words[1:3]):
            return n
    return None


def _fmt(values: frozenset[str], unit: str) -> str:
    vals = " / ".join(sorted(values, key=float))
    return f"${vals}" if unit == "usd" else f"{vals} {unit}"


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------


def format_report(report: CheckReport) -> str:
    """Human-readable findings, errors first, then a one-line summary."""
    lines = [str(f) for f in report.findings]
    by_rule = Counter(f.rule for f in report.findings)
    summary = (
        f"checked {report.pages} pages, {report.statements} statements and {report.sources} sources "
        f"in {report.seconds:.2f}s: {len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    )
    if by_rule:
        summary += " (" + ", ".join(f"{r} {n}" for r, n in sorted(by_rule.items())) + ")"
    return "\n".join([*lines, summary]) + "\n"
