"""Filesystem primitives: atomic writes, canonical JSON, hashing and the KB lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
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
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested past Python's limits
        raise SchemaVersionError(f"{path}: not valid JSON ({exc}); delete it to rebuild") from None
    except OSError as exc:  # a folder, say
        raise SchemaVersionError(f"{path}: cannot be read ({exc.strerror}); delete it to rebuild") from None
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
    lock = lock_dir / f"{name}.lock"
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
        fh = open(lock, "w")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise ConfigError(
            f"{lock}: cannot be opened as a lock file ({exc.strerror}); remove it (it is rebuilt) and rerun"
        ) from None
    with fh:
        deadline = time.monotonic() + 1.0
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as exc:
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                raise LockedError(f"another wikic run holds {lock}; wait for it to finish") from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def walk_files(root: Path | str, folder: str, suffix: str = ".md") -> tuple[list[str], list[str]]:
    """The files ending in ``suffix`` under ``root/folder`` as sorted root-relative paths, and the
    symbolic links found there (to files or folders, ``folder`` itself included), which are never
    followed; hidden files and folders are skipped. One ``scandir`` per folder: no more system
    calls than ``os.walk``, so a search can run it on every call."""
    files: list[str] = []
    links: list[str] = []
    top = os.path.join(root, folder)
    if os.path.islink(top):
        return [], [folder]
    todo = [(top, folder)]
    while todo:
        path, rel = todo.pop()
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            sub = f"{rel}/{entry.name}"
            if entry.is_symlink():
                links.append(sub)
            elif entry.is_dir(follow_symlinks=False):
                todo.append((entry.path, sub))
            elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                files.append(sub)
    return sorted(files), sorted(links)


def refuse_folder_links(root: Path, folder: str) -> None:
    """A ConfigError when ``root/folder``, or a folder under it, is a symbolic link to a folder:
    a command writing there would write wherever the link points. (A link to a file is only
    replaced, never written through.)"""
    for rel in walk_files(root, folder)[1]:
        if (root / rel).is_dir():
            raise ConfigError(
                f"{root / rel}: a symbolic link to a folder, which wikic never writes through; "
                "replace it with the folder itself"
            )


def read_regular(path: Path | str) -> bytes:
    """The bytes of a regular file, never through a symbolic link (``OSError`` otherwise: ELOOP
    for a link, or a 'not a regular file' error for a folder, device or FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd)
        if not stat.S_ISREG(size.st_mode):
            raise IsADirectoryError(f"{path}: not a regular file")
        parts = [os.read(fd, size.st_size + 1)]  # then one more to see the end (or what it grew by)
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
        return b"".join(parts)
    finally:
        os.close(fd)


def linked_part(root: Path, rel: str) -> str | None:
    """The first part of ``root/rel`` that is a symbolic link (relative to ``root``), or None."""
    current = root
    parts = [p for p in rel.split("/") if p]
    for i, part in enumerate(parts):
        current = current / part
        if current.is_symlink():
            return "/".join(parts[: i + 1])
    return None


def require_kb(root: Path) -> None:
    """A ConfigError unless ``root`` is a knowledge base: the folder that holds ``schema/``."""
    if not (root / "schema").is_dir():
        raise ConfigError(
            f"{root}: not a wikic knowledge base (no schema/ folder); pass --root with the folder "
            "that holds schema/, or create one with 'wikic init'"
        )
