"""What the last ``wikic check`` found, kept with a digest of every byte it read
(``.wikic/check.json``): the schema, layer 0, layer 1, the wiki, and the transform and compile
states. A check that reads exactly the same bytes reports the same findings, so it reports them
again without running a rule; any change to any of those files, or ``check --full``, runs
every rule. A digest of contents, never modification times: a hand edit that keeps a file's
time is still seen.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from .. import __version__
from ..compile.coverage import Coverage
from ..core.errors import LockedError, WikicError
from ..core.fsutil import kb_lock, read_json_artifact, write_json_artifact
from .findings import CheckReport, Finding

CACHE = ".wikic/check.json"
CACHE_VERSION = 1
READ = ("schema", "layer0_raw", "layer1_sources", "wiki")  # the folders a check reads
STATES = (".wikic/transform.json", ".wikic/compile.json")  # and the states it reads


def kb_digest(root: Path) -> str:
    """A digest of every file a check reads (its path and bytes), in path order."""
    digest = hashlib.sha256(__version__.encode())
    files: list[str] = []
    for top in READ:
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel = os.path.relpath(dirpath, root)
            files += [os.path.join(rel, f) for f in filenames if not f.startswith(".")]
    for rel in sorted(files) + list(STATES):
        digest.update(rel.encode() + b"\0")
        with contextlib.suppress(FileNotFoundError, IsADirectoryError), open(root / rel, "rb") as fh:
            digest.update(hashlib.sha256(fh.read()).digest())
    return "sha256:" + digest.hexdigest()


def load(root: Path, digest: str) -> CheckReport | None:
    """The last check's report when it read exactly what ``digest`` stands for, else None."""
    try:
        data = read_json_artifact(root / CACHE, CACHE_VERSION)
    except WikicError:
        return None
    if not data or data.get("digest") != digest:
        return None
    report = CheckReport(
        [Finding(**f) for f in data["findings"]], data["pages"], data["sources"], data["statements"]
    )
    report.coverage = Coverage.from_dict(data["coverage"]) if data.get("coverage") else None
    return report


def save(root: Path, digest: str, report: CheckReport) -> None:
    """Keep ``report`` for the next check of the same bytes, unless they changed while the rules
    ran or a compile is running now."""
    data = {
        "digest": digest,
        "findings": [f.as_dict() for f in report.findings],
        "pages": report.pages,
        "sources": report.sources,
        "statements": report.statements,
        "coverage": report.coverage.as_dict() if report.coverage is not None else None,
    }
    with contextlib.suppress(LockedError, OSError), kb_lock(root):
        if kb_digest(root) == digest:  # nothing changed while the rules ran
            write_json_artifact(root / CACHE, data, CACHE_VERSION)
