"""Layer 0: write-once, content-addressed snapshots of API records, and their manifests.

Layout: ``layer0_raw/<source>/<key>@<hash12>.json`` holds one record version; it is never
rewritten. ``layer0_raw/<source>/_manifest.json`` maps record ids to their current snapshot,
marks records that vanished from the API as removed, and keeps HTTP validators per page.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import KBError, SourceError, WikicError
from ..core.fsutil import (
    atomic_write,
    canonical_json,
    read_json_artifact,
    remove_stale_temps,
    require_kb,
    sha256_tag,
    write_json_artifact,
)
from ..core.models import Record, Snapshot
from .report import FetchReport, now_iso

SCHEMA_VERSION = 1
LAYER0 = "layer0_raw"
MANIFEST = "_manifest.json"
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def record_key(record_id: str, *, nested: bool = False) -> str:
    """A file-safe key for a record id; nothing escapes the source folder and no two ids collide.

    Safe ids are kept as they are. Anything else is reduced to safe characters and suffixed with
    a hash of the original id, so ``../../x`` and ``x`` get different, contained keys. With
    ``nested`` (files sources, whose ids are relative paths) '/' separates safe sub-folders.
    """
    segments = record_id.split("/") if nested else [record_id]
    if nested:  # files sources: 'guide/setup.md' → 'guide/setup'; a clash with 'guide/setup.json' gets a hash
        segments[-1] = re.sub(r"\.(md|json)$", "", segments[-1], flags=re.I) or segments[-1]
    if all(_SAFE_SEGMENT.match(s) and not s.endswith(".") for s in segments) and len(record_id) <= 180:
        return "/".join(segments)
    cleaned = [_UNSAFE_CHARS.sub("-", s).strip(".-")[:60] for s in segments]
    cleaned = [c for c in cleaned if c] or ["record"]
    digest = hashlib.sha256(record_id.encode("utf-8")).hexdigest()[:10]
    cleaned[-1] = f"{cleaned[-1]}-{digest}"
    return "/".join(cleaned)


def record_hash(data: dict[str, Any]) -> str:
    return sha256_tag(canonical_json(data))


def snapshot_bytes(source: str, record: Record, url: str, fetched_at: str, digest: str) -> bytes:
    """The file of one record version, exactly as fetch writes it."""
    body = {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "id": record.id,
        "url": url,
        "fetched_at": fetched_at,
        "sha256": digest,
        "record": record.data,
    }
    return (json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def records_digest(records: dict[str, Any]) -> str:
    """The hash a manifest keeps of its own records, so an edit by hand shows."""
    return sha256_tag(canonical_json(records))


@dataclass
class PutResult:
    status: str  # added | changed | unchanged
    snapshot: Snapshot


class SourceStore:
    """The layer-0 folder of one source: snapshots plus manifest. Nothing is written until
    ``save()``, so a fetch that is refused (a source that shrank) changes nothing."""

    def __init__(self, root: Path, source: str):
        self.root = root
        self.source = source
        self.folder = root / LAYER0 / source
        self.manifest_path = self.folder / MANIFEST
        remove_stale_temps(self.folder)
        data = read_json_artifact(self.manifest_path, SCHEMA_VERSION) or {}
        self.records: dict[str, dict[str, Any]] = data.get("records", {})
        self.pages: dict[str, dict[str, Any]] = data.get("pages", {})
        self.layout: list[int] = data.get("layout", [])  # records per page, in order, last fetch
        # keys compared case-folded: 'Tank' and 'tank' would be one file on macOS and Windows
        self._keys = {entry["key"].casefold(): rid for rid, entry in self.records.items()}
        self._unsaved: dict[Path, bytes] = {}  # new snapshots, written by save()
        self.current_before = sum(1 for e in self.records.values() if e.get("status") == "current")
        self.repair = False  # put() restores missing or altered current snapshots
        self.repaired: list[str] = []  # snapshots it restored

    def key_for(self, record_id: str, nested: bool = False) -> str:
        entry = self.records.get(record_id)
        if entry:
            return entry["key"]
        key = record_key(record_id, nested=nested)
        owner = self._keys.get(key.casefold())
        if owner is not None and owner != record_id:  # 'a.md' vs 'a.json', 'A' vs 'a', or a hash clash
            key = f"{key}-{hashlib.sha256(record_id.encode('utf-8')).hexdigest()[:10]}"
        return key

    def put(self, record: Record, fetched_at: str, *, nested: bool = False) -> PutResult:
        """Store one fetched record: a new snapshot only for new or changed content. With
        ``self.repair``, the current snapshot of an unchanged record is rewritten when it is
        missing or not what fetch wrote (the API still serves the same content, so the bytes
        are known)."""
        digest = record_hash(record.data)
        entry = self.records.get(record.id)
        if entry and entry["sha256"] == digest and self.repair:
            self._restore(record, entry)
        if entry and entry["sha256"] == digest:
            if entry.get("status") != "current":
                entry["status"] = "current"
                entry.pop("removed", None)
                return PutResult("added", self._snapshot(record.id, entry))
            return PutResult("unchanged", self._snapshot(record.id, entry))
        key = self.key_for(record.id, nested)
        rel = f"{LAYER0}/{self.source}/{key}@{digest.split(':', 1)[1][:12]}.json"
        path = self.root / rel
        if path.exists():  # written by a run that died before saving the manifest
            data = path.read_bytes()
            try:
                body = json.loads(data)
                fetched_at, url = body["fetched_at"], body["url"]
            except (ValueError, KeyError):
                raise KBError(f"{rel}: snapshot is not readable; run 'wikic verify'") from None
        else:
            url = record.url
            data = snapshot_bytes(self.source, record, url, fetched_at, digest)
            self._unsaved[path] = data
        history = (entry or {}).get("history", [])
        if rel not in history:
            history = [*history, rel]
        new_entry = {
            "key": key,
            "sha256": digest,
            "snapshot": rel,
            "file_sha256": sha256_tag(data),
            "url": url,
            "fetched_at": fetched_at,
            "status": "current",
            "history": history,
        }
        self.records[record.id] = new_entry
        self._keys[key.casefold()] = record.id
        return PutResult("changed" if entry else "added", self._snapshot(record.id, new_entry))

    def _restore(self, record: Record, entry: dict[str, Any]) -> None:
        path = self.root / entry["snapshot"]
        try:
            if sha256_tag(path.read_bytes()) == entry.get("file_sha256"):
                return
        except OSError:
            pass
        self._unsaved[path] = snapshot_bytes(
            self.source, record, entry["url"], entry["fetched_at"], entry["sha256"]
        )
        self.repaired.append(entry["snapshot"])

    def mark_removed(self, seen: set[str], when: str) -> list[str]:
        removed = []
        for rid, entry in self.records.items():
            if rid not in seen and entry.get("status") == "current":
                entry["status"] = "removed"
                entry["removed"] = when
                removed.append(rid)
        return sorted(removed)

    def current(self) -> list[Snapshot]:
        return [
            self._snapshot(rid, e) for rid, e in sorted(self.records.items()) if e.get("status") == "current"
        ]

    def _snapshot(self, rid: str, e: dict[str, Any]) -> Snapshot:
        return Snapshot(self.source, rid, e["key"], e["sha256"], e["snapshot"], e["url"], e["fetched_at"])

    def save(self) -> bool:
        """Write the new snapshots, then the manifest that lists them."""
        for path, data in self._unsaved.items():
            atomic_write(path, data)
        self._unsaved.clear()
        return write_json_artifact(
            self.manifest_path,
            {
                "source": self.source,
                "records": self.records,
                "records_sha256": records_digest(self.records),
                "pages": self.pages,
                "layout": self.layout,
            },
            SCHEMA_VERSION,
        )

    def load(self, snap: Snapshot) -> Snapshot:
        """The snapshot with its record data read from disk; a missing, unreadable or edited
        snapshot is an error naming it, never rendered."""
        rel = snap.path
        where = f"snapshot {rel}"
        try:
            body = json.loads((self.root / rel).read_text("utf-8"))
            data = body["record"]
        except FileNotFoundError:
            raise SourceError(
                self.source, f"{where} is missing; run 'wikic fetch --repair'", record=snap.id
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceError(
                self.source,
                f"{where} is unreadable ({exc.__class__.__name__}); run 'wikic verify', then "
                "'wikic fetch --repair'",
                record=snap.id,
            ) from None
        if not isinstance(data, dict) or record_hash(data) != snap.sha256:
            raise SourceError(
                self.source,
                f"{where} does not match its hash {snap.sha256[:19]}… (edited by hand); not rendered. Run "
                "'wikic verify', then 'wikic fetch --repair'",
                record=snap.id,
            )
        return Snapshot(**{**snap.__dict__, "data": data})


def layer0_sources(root: Path) -> list[str]:
    folder = root / LAYER0
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


@dataclass(frozen=True)
class Tampered:
    path: str
    reason: str


REPAIR = "run 'wikic fetch --repair' (or restore it from git)"
RESTORE = "restore it from git: the API no longer serves this version"


def verify(root: Path) -> tuple[int, list[Tampered]]:
    """Recompute every snapshot's hash and check each manifest against its own hash and its
    snapshots; return (snapshots checked, problems found). Each problem says how to repair it."""
    require_kb(root)
    checked = 0
    problems: list[Tampered] = []
    for source in layer0_sources(root):
        folder = root / LAYER0 / source
        manifest = (folder / MANIFEST).relative_to(root).as_posix()
        snapshots = sorted(p for p in folder.rglob("*.json") if p.name != MANIFEST)
        try:
            data = read_json_artifact(folder / MANIFEST, SCHEMA_VERSION)
        except WikicError as exc:
            problems.append(Tampered(manifest, f"unreadable ({exc}); {REPAIR}"))
            data = {}
        if data is None:
            if snapshots:
                problems.append(
                    Tampered(manifest, f"missing, but {len(snapshots)} snapshots are here; {REPAIR}")
                )
            data = {}
        records: dict[str, Any] = data.get("records") or {}
        if "records_sha256" in data and data["records_sha256"] != records_digest(records):
            problems.append(
                Tampered(
                    manifest, "edited by hand: its records no longer match its hash; restore it from git"
                )
            )
        current = {e.get("snapshot"): e for e in records.values() if e.get("status") == "current"}
        known = {rel for e in records.values() for rel in e.get("history", [])}
        for rel in sorted(known):
            if not (root / rel).is_file():  # write-once means never deleted either
                checked += 1
                problems.append(
                    Tampered(
                        rel, f"listed in {MANIFEST} but missing; {REPAIR if rel in current else RESTORE}"
                    )
                )
        for path in snapshots:
            rel = path.relative_to(root).as_posix()
            checked += 1
            advice = REPAIR if rel in current else RESTORE
            try:
                raw = path.read_bytes()
                body = json.loads(raw)
                digest = record_hash(body["record"])
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(Tampered(rel, f"not a readable snapshot ({exc}); {advice}"))
                continue
            entry = current.get(rel)
            if digest != body.get("sha256"):
                problems.append(
                    Tampered(rel, f"record hash is {digest}, snapshot says {body.get('sha256')}; {advice}")
                )
            elif not path.stem.endswith("@" + digest.split(":", 1)[1][:12]):
                problems.append(Tampered(rel, f"file name does not match the record hash; {advice}"))
            elif entry is not None and (
                entry.get("file_sha256") != sha256_tag(raw)
                or entry.get("sha256") != digest
                or (entry.get("url"), entry.get("fetched_at")) != (body.get("url"), body.get("fetched_at"))
            ):
                problems.append(
                    Tampered(rel, f"differs from what fetch wrote, or its {MANIFEST} entry does; {REPAIR}")
                )
    return checked, problems


LOG = "log.md"
LOGGED_IDS = 20


def append_log(root: Path, source: str, before: int, report: FetchReport) -> None:
    """Append to ``layer0_raw/log.md`` the records a fetch marked removed, and whether
    ``--allow-shrink`` had to accept it (``report.accepted``, what fetch would have refused)."""
    path = root / LAYER0 / LOG
    try:
        old = path.read_text("utf-8")
    except FileNotFoundError:
        old = "# Fetch log\n\nOne entry per fetch that removed records from a source. Append-only.\n"
    removed = report.removed
    entry = f"\n## [{now_iso()}] fetch {source} | -{len(removed)} records ({before} → {before - len(removed)})\n\n"
    if report.accepted:
        entry += f"Accepted with --allow-shrink: {report.accepted.split('; ')[0]}.\n\n"
    entry += "".join(f"- removed {rid}\n" for rid in removed[:LOGGED_IDS])
    if len(removed) > LOGGED_IDS:
        entry += f"- … and {len(removed) - LOGGED_IDS} more\n"
    atomic_write(path, old.rstrip("\n") + "\n" + entry)
