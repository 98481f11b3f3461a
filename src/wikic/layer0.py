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

from .config import require_kb
from .errors import KBError
from .fsutil import (
    atomic_write,
    canonical_json,
    read_json_artifact,
    remove_stale_temps,
    sha256_tag,
    write_json_artifact,
)
from .models import Record, Snapshot

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
        # keys compared case-folded: 'Tank' and 'tank' would be one file on macOS and Windows
        self._keys = {entry["key"].casefold(): rid for rid, entry in self.records.items()}
        self._unsaved: dict[Path, bytes] = {}  # new snapshots, written by save()
        self.current_before = sum(1 for e in self.records.values() if e.get("status") == "current")

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
        digest = record_hash(record.data)
        entry = self.records.get(record.id)
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
            body = {
                "schema_version": SCHEMA_VERSION,
                "source": self.source,
                "id": record.id,
                "url": url,
                "fetched_at": fetched_at,
                "sha256": digest,
                "record": record.data,
            }
            data = (json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
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

    def load(self, snap: Snapshot) -> Snapshot:
        """The snapshot with its record data read from disk."""
        body = json.loads((self.root / snap.path).read_text("utf-8"))
        return Snapshot(**{**snap.__dict__, "data": body["record"]})

    def _snapshot(self, rid: str, e: dict[str, Any]) -> Snapshot:
        return Snapshot(self.source, rid, e["key"], e["sha256"], e["snapshot"], e["url"], e["fetched_at"])

    def save(self) -> bool:
        """Write the new snapshots, then the manifest that lists them."""
        for path, data in self._unsaved.items():
            atomic_write(path, data)
        self._unsaved.clear()
        return write_json_artifact(
            self.manifest_path,
            {"source": self.source, "records": self.records, "pages": self.pages},
            SCHEMA_VERSION,
        )


def layer0_sources(root: Path) -> list[str]:
    folder = root / LAYER0
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


@dataclass(frozen=True)
class Tampered:
    path: str
    reason: str


def verify(root: Path) -> tuple[int, list[Tampered]]:
    """Recompute every snapshot's hash; return (snapshots checked, problems found)."""
    require_kb(root)
    checked = 0
    problems: list[Tampered] = []
    for source in layer0_sources(root):
        store = SourceStore(root, source)
        known = {rel: (rid, e) for rid, e in store.records.items() for rel in e.get("history", [])}
        for rel in sorted(known):
            if not (root / rel).is_file():  # write-once means never deleted either
                checked += 1
                problems.append(Tampered(rel, f"listed in {MANIFEST} but missing; restore it from git"))
        for path in sorted(store.folder.rglob("*.json")):
            if path.name == MANIFEST:
                continue
            rel = path.relative_to(root).as_posix()
            checked += 1
            try:
                body = json.loads(path.read_text("utf-8"))
                digest = record_hash(body["record"])
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(Tampered(rel, f"not a readable snapshot ({exc})"))
                continue
            if digest != body.get("sha256"):
                problems.append(Tampered(rel, f"record hash is {digest}, snapshot says {body.get('sha256')}"))
            elif not path.stem.endswith("@" + digest.split(":", 1)[1][:12]):
                problems.append(Tampered(rel, "file name does not match the record hash"))
            elif (
                rel in known
                and known[rel][1]["snapshot"] == rel
                and known[rel][1]["file_sha256"] != sha256_tag(path.read_bytes())
            ):
                problems.append(Tampered(rel, "snapshot metadata differs from what fetch wrote"))
    return checked, problems
