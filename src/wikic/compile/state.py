"""What the last compile read and wrote (``.wikic/compile.json``), so that a no-change compile stops
after hashing its inputs; the pending log entry a killed run leaves; the facts shown, to log what
changed; and the wiki pages wikic manages."""

from __future__ import annotations

from pathlib import Path

import frontmatter
import yaml

from .. import __version__
from ..core.config import too_large
from ..core.errors import WikicError
from ..core.facts import facts
from ..core.fsutil import (
    canonical_json,
    read_json_artifact,
    read_regular,
    sha256_tag,
    walk_files,
    write_json_artifact,
)
from ..core.models import SourceDoc
from ..transform.layer1 import frontmatter_handler
from .index import log_entry
from .librarian.base import Librarian
from .pageplan import Plan
from .report import CompileReport
from .timeline import quantity

WIKI = "wiki"

STATE = ".wikic/compile.json"  # derived: lets a no-change compile stop after hashing its inputs


STATE_VERSION = 1


SCHEMA_FILES = ("wiki.yaml", "librarian.md", "index-overrides.yaml")


def managed_pages(root: Path) -> dict[str, dict]:
    """Existing wiki pages written by wikic: {path: frontmatter}."""
    out = {}
    for rel in walk_files(root, WIKI)[0]:
        if rel in ("wiki/index.md", "wiki/log.md") or rel.startswith("wiki/index/"):
            continue
        try:
            text = read_regular(root / rel).decode("utf-8")
            meta = frontmatter.loads(text, handler=frontmatter_handler()).metadata
        except (OSError, ValueError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
            continue
        if too_large(meta):
            continue
        if isinstance(meta.get("wikic"), dict):
            out[rel] = meta
    return out


def input_digest(root: Path, files: dict[str, bytes], lib: Librarian) -> str:
    """Everything a compile reads: layer-1 bytes, the schema files, backend, model and version."""
    layer1 = [(rel, sha256_tag(data)) for rel, data in files.items()]
    return sha256_tag(canonical_json([layer1, schema_hashes(root), lib.name, lib.model, __version__]))


def schema_hashes(root: Path) -> list[tuple[str, str | None]]:
    """(name, hash) of each schema file a compile reads (None: absent)."""
    return [(name, _file_hash(root / "schema" / name)) for name in SCHEMA_FILES]


def _file_hash(path: Path) -> str | None:
    try:
        return sha256_tag(read_regular(path))
    except OSError:  # absent, or a link (never followed; loading the schema says so)
        return None


def wiki_hashes(root: Path) -> dict[str, str]:
    return {
        rel: sha256_tag(read_regular(root / rel)) for rel in walk_files(root, WIKI)[0] if rel != "wiki/log.md"
    }


def load_state(root: Path) -> dict | None:
    """What the last compile read and wrote, or None (absent, unreadable or another version)."""
    try:
        return read_json_artifact(root / STATE, STATE_VERSION)
    except WikicError:
        return None


def save_state(
    root: Path,
    digest: str,
    report: CompileReport,
    pages: int,
    docs: dict[str, SourceDoc],
    pages_before: int = 0,
    plan: dict | None = None,
) -> None:
    """What this compile read and wrote, how many pages the wiki had before and after it, and
    what ``check`` reads of its plan (``plan_record``)."""
    after = pages_before + len(report.added) - len(report.removed)
    state = {
        "digest": digest,
        "outputs": wiki_hashes(root),
        "pages": pages,
        "unplaced": report.unplaced,
        "reasons": report.reasons,
        "coverage": report.coverage,
        "layer1": {p: d.sha256 for p, d in docs.items()},
        "wiki_pages": {"before": pages_before, "after": after},
        "schema": schema_hashes(root),
        "version": __version__,
        "plan": plan or {},
    }
    write_json_artifact(root / STATE, state, STATE_VERSION)


def plan_record(plan: Plan, fingerprints: dict[str, str], backend: str, model: str) -> dict:
    """What ``check`` needs of a plan, so that it need not plan again while layer 1 and the schema
    are as this compile read them: each planned page's fingerprint and sources, the superseded
    documents, the disagreements found, and what the plan says each page is about."""
    return {
        "backend": backend,
        "model": model,
        "pages": {s.path: [fingerprints.get(s.path), list(s.sources)] for s in plan.pages},
        "about": {s.path: s.about for s in plan.pages if s.about},
        "superseded_by": plan.superseded_by,
        "disputes": [
            [
                d.kind,
                d.a.doc.path,
                d.a.anchor,
                d.a.text,
                d.choice_a,
                d.b.doc.path,
                d.b.anchor,
                d.b.text,
                d.choice_b,
            ]
            for d in plan.disputes
        ],
    }


def pending_log(root: Path, state: dict | None, report: CompileReport, sources: list[str]) -> str:
    """The log entry for this compile, merged with the one a run that died before logging left
    in the state, recorded as pending before anything is written; '' when there is nothing to log.
    """
    pending = (state or {}).get("pending_log") or {}
    log = root / WIKI / "log.md"
    if pending.get("entry") and log.exists() and pending["entry"].rstrip() in log.read_text("utf-8"):
        pending = {}  # that run got as far as its log entry
    added = list(dict.fromkeys([*pending.get("added", []), *report.added]))
    changed = [p for p in dict.fromkeys([*pending.get("changed", []), *report.changed]) if p not in added]
    removed = [p for p in dict.fromkeys([*pending.get("removed", []), *report.removed]) if p not in added]
    if not (added or changed or removed):
        return ""
    counts = [report.sentences, report.verified, report.repaired, report.dropped]
    counts = [a + b for a, b in zip(counts, pending.get("counts", [0, 0, 0, 0]))]
    names = sorted(set(sources) | set(pending.get("sources", [])))
    facts_changed = list(dict.fromkeys([*pending.get("facts", []), *report.fact_changes]))
    details = [f"- fact {c}" for c in facts_changed[:LOGGED_FACTS]]
    if len(facts_changed) > LOGGED_FACTS:
        details.append(f"- … and {len(facts_changed) - LOGGED_FACTS} more changed facts")
    details += [f"- added {p}" for p in added] + [f"- changed {p}" for p in changed]
    details += [f"- removed {p}" for p in removed]
    details.append(
        f"- sentences {counts[0]}, verified {counts[1]}, repaired {counts[2]}, "
        f"dropped {counts[3]}; backend {report.backend}"
    )
    entry = log_entry(len(added), len(changed), len(removed), names, "\n".join(details))
    record_pending(
        root,
        state,
        {
            "entry": entry,
            "added": added,
            "changed": changed,
            "removed": removed,
            "counts": counts,
            "sources": names,
            "facts": facts_changed,
        },
    )
    return entry


def record_pending(root: Path, state: dict | None, pending: dict | None) -> None:
    """Store (or, with None, clear) the pending log entry; the state no longer vouches for the
    wiki, so the next compile does not take the no-change shortcut."""
    state = {k: v for k, v in (state or {}).items() if k not in ("schema_version", "pending_log")}
    state["digest"] = None
    if pending:
        state["pending_log"] = pending
    write_json_artifact(root / STATE, state, STATE_VERSION)


def changed_sources(
    state: dict | None, docs: dict[str, SourceDoc], report: CompileReport, plan: Plan
) -> list[str]:
    """Source names for the log: those whose layer-1 files changed since the last compile, or,
    without a record of it, those feeding the pages this compile wrote."""
    if state and isinstance(state.get("layer1"), dict):
        before: dict[str, str] = state["layer1"]
        paths = {p for p in docs if before.get(p) != docs[p].sha256} | (set(before) - set(docs))
        return sorted({p.split("/")[1] for p in paths if p.count("/") >= 2})
    written = set(report.added + report.changed)
    return sorted({docs[p].source for s in plan.pages if s.path in written for p in s.sources if p in docs})


FACTS = ".wikic/facts.json"  # derived: the facts the last compile showed, to log what changed


LOGGED_FACTS = 50


def current_facts(docs: list[SourceDoc], the_plan: Plan) -> dict[str, dict[str, str]]:
    """{layer-1 path: {field label: value}} of the facts every current source shows, plus, under
    the path of a change statement, the changes it states ('Low-water alert …': '20% → 15%')."""
    out = {d.path: {f.label: f.value for f in facts(d)} for d in docs if d.path not in the_plan.superseded_by}
    for c in the_plan.timeline.changes:
        s = c.statement
        out.setdefault(s.doc.path, {})[f"change: {s.doc.title}"] = (
            f"{quantity(c.old, c.unit)} → {quantity(c.new, c.unit)}"
        )
    return out


def read_facts(root: Path) -> dict[str, dict[str, str]] | None:
    try:
        data = read_json_artifact(root / FACTS, STATE_VERSION)
    except WikicError:
        return None
    return data.get("facts") if isinstance(data, dict) and isinstance(data.get("facts"), dict) else None


def fact_changes(before: dict | None, now: dict[str, dict[str, str]]) -> list[str]:
    """What changed, fact by fact, since the last compile ('crops/carrot: Row spacing 20 → 22');
    nothing on a first compile."""
    if before is None:
        return []
    out = []
    for path in sorted(set(before) | set(now)):
        old, new = before.get(path, {}), now.get(path, {})
        name = path.removeprefix("layer1_sources/").removesuffix(".md")
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if key.startswith("change: ") and key in new:
                    out.append(f"{name}: {key[8:]}: {new[key]} (stated as a change)")
                elif not key.startswith("change: "):
                    out.append(f"{name}: {key} {old.get(key, '(none)')} → {new.get(key, '(none)')}")
    return out
