"""``wikic trace PAGE[:LINE]``: the lineage of wiki sentences, down to the API URL.

wiki sentence → its citations → the layer-1 section text → the layer-0 snapshot (path, sha256,
whether its hash still verifies) → the API URL it was fetched from and when. Hand-maintained
layer-1 files have no layer 0, and the trace says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core.errors import ConfigError
from ..core.fsutil import require_kb
from ..core.models import SourceDoc
from ..fetch.layer0 import record_hash
from ..transform.layer1 import LAYER1, parse_doc
from .run import Statement, WikiPage, read_page


@dataclass
class Snapshot0:
    path: str
    sha256: str
    exists: bool
    verified: bool  # the record in the file still hashes to sha256
    api_url: str = ""
    fetched_at: str = ""


@dataclass
class CitationTrace:
    citation: str  # layer1_sources/<source>/<key>.md#anchor
    layer1_path: str
    anchor: str
    problem: str = ""  # missing file or anchor
    heading: str = ""
    section_text: str = ""
    source: str = ""
    record_id: str = ""
    record_url: str = ""  # the record's own URL from layer-1 frontmatter (e.g. its web page)
    updated_at: str = ""
    hand_maintained: bool = False
    layer0: Snapshot0 | None = None


@dataclass
class SentenceTrace:
    line: int
    text: str
    kind: str
    citations: list[CitationTrace] = field(default_factory=list)


@dataclass
class TraceReport:
    page: str
    line: int | None
    sentences: list[SentenceTrace]

    def as_json(self) -> dict:
        return asdict(self)


def parse_target(target: str) -> tuple[str, int | None]:
    """'wiki/x.md:12' → ('wiki/x.md', 12); 'wiki/x.md' → ('wiki/x.md', None)."""
    m = re.match(r"^(.*?):(\d+)$", target)
    if m:
        return m.group(1), int(m.group(2))
    return target, None


def find_page(root: Path, name: str) -> Path:
    """A wiki page by KB-root-relative, wiki-relative or absolute path."""
    candidates = [Path(name), root / name, root / "wiki" / name]
    for c in candidates:
        c = c if c.is_absolute() else Path.cwd() / c
        if c.is_file() and c.suffix == ".md":
            try:
                c.resolve().relative_to(root.resolve())
            except ValueError:
                continue
            return c.resolve()
    raise ConfigError(f"{name}: no such wiki page under {root}; give a path like wiki/topics/<page>.md")


def trace(root: Path, target: str) -> TraceReport:
    root = root.resolve()
    require_kb(root)
    name, line = parse_target(target)
    page = read_page(root, find_page(root, name))
    statements = [s for s in page.statements if s.kind != "about"]  # the page's own words cite nothing
    if line is not None:
        if not 1 <= line <= len(page.lines):
            raise ConfigError(f"{page.path}: line {line} is past the end ({len(page.lines)} lines)")
        statements = [s for s in statements if s.line == line]
        if not statements:
            raise ConfigError(_no_sentence(page, line))
    docs: dict[str, SourceDoc | None] = {}
    return TraceReport(page.path, line, [_trace_statement(root, s, docs) for s in statements])


def _no_sentence(page: WikiPage, line: int) -> str:
    lines = sorted({s.line for s in page.statements})
    near = [n for n in lines if abs(n - line) <= 10][:6]
    hint = f"; sentences are on lines {', '.join(map(str, near))}" if near else ""
    return f"{page.path}:{line} holds no cited sentence or fact cell{hint}"


def _doc(root: Path, path: str, docs: dict[str, SourceDoc | None]) -> SourceDoc | None:
    if path not in docs:
        file = root / path
        docs[path] = parse_doc(root, file) if path.startswith(LAYER1 + "/") and file.is_file() else None
    return docs[path]


def _trace_statement(root: Path, st: Statement, docs: dict[str, SourceDoc | None]) -> SentenceTrace:
    out = SentenceTrace(st.line, st.text if st.kind == "sentence" else f"{st.label}: {st.text}", st.kind)
    for cite in st.cites:
        ct = CitationTrace(str(cite), cite.path, cite.anchor)
        out.citations.append(ct)
        doc = _doc(root, cite.path, docs)
        if doc is None:
            ct.problem = f"{cite.path} does not exist"
            continue
        ct.source, ct.record_id = doc.source, doc.id
        ct.record_url = str(doc.meta.get("url") or "")
        ct.updated_at = str(doc.meta.get("updated_at") or "")
        section = doc.section(cite.anchor) if cite.anchor else None
        if cite.anchor and section is None:
            ct.problem = f"#{cite.anchor} is not a heading of {cite.path}"
        elif section is not None:
            ct.heading, ct.section_text = section.heading, section.text
        else:
            ct.heading, ct.section_text = doc.title, doc.body.strip()
        layer0 = doc.meta.get("layer0")
        if doc.meta.get("generated_by") != "wikic" or not isinstance(layer0, dict):
            ct.hand_maintained = True
            continue
        ct.layer0 = _snapshot(root, str(layer0.get("path", "")), str(layer0.get("sha256", "")))
    return out


def _snapshot(root: Path, path: str, sha256: str) -> Snapshot0:
    snap = Snapshot0(path, sha256, exists=False, verified=False)
    try:
        body = json.loads((root / path).read_text("utf-8"))
    except (OSError, ValueError):
        return snap
    snap.exists = True
    if isinstance(body, dict):
        snap.api_url = str(body.get("url", ""))
        snap.fetched_at = str(body.get("fetched_at", ""))
        try:
            snap.verified = record_hash(body["record"]) == sha256 == body.get("sha256")
        except (KeyError, TypeError):
            snap.verified = False
    return snap


def format_trace(report: TraceReport, width: int = 600) -> str:
    """Human-readable lineage, one block per sentence."""
    lines: list[str] = []
    for s in report.sentences:
        lines.append(f"{report.page}:{s.line}  {s.text}")
        if not s.citations:
            lines.append("  (no citation: this sentence cannot be traced)")
        for n, c in enumerate(s.citations, 1):
            lines.append(f"  [{n}] {c.citation}")
            if c.problem:
                lines.append(f"      BROKEN: {c.problem}")
                continue
            lines.append(f"      layer 1: {c.heading or '(lead)'} ({c.source}:{c.record_id})")
            text = " ".join(c.section_text.split())
            lines.append("        > " + (text if len(text) <= width else text[: width - 1] + "…"))
            if c.hand_maintained:
                lines.append("      layer 0: none (hand-maintained layer-1 file; it has no API source)")
                continue
            snap = c.layer0
            assert snap is not None
            state = "hash verified" if snap.verified else "MISSING" if not snap.exists else "HASH MISMATCH"
            lines.append(f"      layer 0: {snap.path} {snap.sha256} ({state})")
            lines.append(f"      API URL: {snap.api_url or '?'}  fetched {snap.fetched_at or '?'}")
            if c.record_url and c.record_url != snap.api_url:
                lines.append(f"      record URL: {c.record_url}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
