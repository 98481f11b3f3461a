"""Filesystem primitives: atomic writes, canonical JSON, hashing and the KB lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import ConfigError, LockedError, SchemaVersionError


def canonical_json(value: object) -> bytes:
    """Sorted keys, compact separators, UTF-8: the bytes that get hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_tag(data: bytes) -> str:
    """A hash tagged with its algorithm, e.g. ``sha256:ab12...``."""
    import hashlib  # here: a lookup that finds every file unchanged never hashes

    return "sha256:" + hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write via a temp file in the same folder, then ``os.replace``: readers never see half a file."""
    tmp = stage_write(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def stage_write(path: Path, data: bytes | str) -> Path:
    """Write ``data`` to a new temp file beside ``path`` (``.name.XXXX.tmp``) and return it: an
    ``os.replace`` onto ``path`` publishes it whole. A killed writer's temp files are removed by
    ``remove_stale_temps``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkstemp: its files are mode 0600 (published layers must follow the umask like
    # any other file) and its O_NOFOLLOW/random-name dance costs twice the create on big folders.
    import secrets  # here, not at the top: most commands that import fsutil (search, ask) never write

    while True:
        tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def write_if_changed(path: Path, data: bytes | str) -> bool:
    """Atomically write ``data`` unless the file already holds exactly it. Returns True if written."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    atomic_write(path, data)
    return True


def remove_stale_temps(folder: Path) -> None:
    """Delete temp files left behind by a killed writer (``.name.XXXX.tmp``)."""
    if not folder.exists():
        return
    for tmp in folder.rglob(".*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def read_json_artifact(path: Path, schema_version: int) -> dict | None:
    """Read a versioned JSON artifact; None if absent, error if its version is not ours."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise SchemaVersionError(f"{path}: not valid JSON ({exc}); delete it to rebuild") from exc
    found = data.get("schema_version") if isinstance(data, dict) else None
    if found != schema_version:
        raise SchemaVersionError(
            f"{path}: schema_version {found!r}, this wikic reads {schema_version}; "
            "delete the file to rebuild it or use a matching wikic version"
        )
    return data


def write_json_artifact(path: Path, data: dict, schema_version: int) -> bool:
    body = {"schema_version": schema_version, **{k: v for k, v in data.items() if k != "schema_version"}}
    text = json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    return write_if_changed(path, text)


@contextlib.contextmanager
def kb_lock(root: Path, name: str = "kb") -> Iterator[None]:
    """Serialise concurrent runs on one KB with an advisory lock under ``.wikic/``. A held lock is
    tried again for up to a second: a compile killed a moment ago releases it only when the last
    of its worker processes, killed with it, has ended."""
    lock_dir = root / ".wikic"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{name}.lock", "w") as fh:
        deadline = time.monotonic() + 1.0
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as exc:
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                raise LockedError(
                    f"another wikic run holds {lock_dir / (name + '.lock')}; wait for it to finish"
                ) from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def require_kb(root: Path) -> None:
    """A ConfigError unless ``root`` is a knowledge base: the folder that holds ``schema/``."""
    if not (root / "schema").is_dir():
        raise ConfigError(
            f"{root}: not a wikic knowledge base (no schema/ folder); pass --root with the folder "
            "that holds schema/, or create one with 'wikic init'"
        )
