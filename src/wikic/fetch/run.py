"""Fetch stage: pull every configured source into layer 0.

HTTP sources (``http.py``) page through an API with retries, conditional requests, a size cap and
bounded concurrency; ``files`` sources (``files.py``) read a local folder. Each record lands in
``layer0.SourceStore``, which writes a new snapshot only for new or changed content.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from ..core.config import SourceConfig, SourcesConfig
from ..core.errors import ConfigError, SourceError
from ..core.fsutil import kb_lock
from .files import fetch_files
from .http import client as http_client
from .http import fetch_http, page_problem, redact, secret_values
from .layer0 import SourceStore, append_log
from .report import FetchReport, Progress, now_iso

ALLOW = (
    "layer 0 is left as it was. If the API really removed them, rerun with --allow-shrink "
    "(or raise max_shrink for this source in schema/sources.yaml)"
)


def shrink_refusal(cfg: SourceConfig, before: int, after: int) -> str:
    """Why a fetch that found ``after`` of ``before`` current records is refused, or ''."""
    if not before or after >= before * (1 - cfg.max_shrink):
        return ""
    return f"{after} records, down from {before} (more than {cfg.max_shrink:.0%} gone in one fetch); {ALLOW}"


def refusal(
    cfg: SourceConfig, store: SourceStore, report: FetchReport, seen: set[str]
) -> tuple[str, str | None]:
    """(why, the page at fault) when a fetch lost records without a reason: an empty or short
    page (see ``page_problem``), or more than ``max_shrink`` of the source; ('', None) when not."""
    found = page_problem(report.layout, store.layout)
    if found and store.current_before:
        url, problem = found
        counts = f"{len(seen)} records, down from {store.current_before}"
        return f"{problem} ({counts}): its records would be marked removed; {ALLOW}", url
    return shrink_refusal(cfg, store.current_before, len(seen)), None


def fetch(
    root: Path,
    config: SourcesConfig,
    *,
    only: str | None = None,
    client: httpx.Client | None = None,
    progress: Progress | None = None,
    environ: dict[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    allow_shrink: bool = False,
    repair: bool = False,
) -> list[FetchReport]:
    """Fetch every configured source (or ``only`` one). A failing source does not stop the others.

    A source that loses records without a reason (an empty page, a page shorter than the one
    before it that is not the last, or more than its ``max_shrink`` share of records) is refused
    and its layer 0 left as it was, unless ``allow_shrink``; every removal is logged in
    ``layer0_raw/log.md``.
    ``repair`` refetches every page unconditionally and restores current snapshots that are
    missing or altered (``wikic verify`` says when)."""
    if only is not None and only not in config.sources:
        raise ConfigError(f"{config.path}: no source named '{only}'; known: {', '.join(config.sources)}")
    names = [only] if only else list(config.sources)
    own_client = client is None
    if client is None:
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
        client = http_client(limits=limits)
    reports = []
    try:
        with kb_lock(root):
            for name in names:
                report = FetchReport(name)
                reports.append(report)
                fetch_source(
                    root, config.sources[name], report, client, progress, environ, sleep, allow_shrink, repair
                )
    finally:
        if own_client:
            client.close()
    return reports


def fetch_source(
    root: Path,
    cfg: SourceConfig,
    report: FetchReport,
    client: httpx.Client,
    progress: Progress | None,
    environ: dict[str, str] | None,
    sleep: Callable[[float], None],
    allow_shrink: bool,
    repair: bool,
) -> None:
    """Fetch one source into its store. Its errors land in ``report``; what was fetched before
    a failure is kept, unless the source shrank past its ``max_shrink`` share."""
    started = time.perf_counter()
    store = SourceStore(root, cfg.name)
    keep = True
    try:
        if repair:
            store.pages.clear()  # no conditional requests: every record is needed
        store.repair = repair
        if cfg.kind == "http":
            seen = fetch_http(cfg, store, client, root, report, progress, environ, sleep)
        else:
            seen = fetch_files(cfg, store, root, report, progress)
        if seen is not None:
            why, page = refusal(cfg, store, report, seen)
            if why and not allow_shrink:
                keep = False
                raise SourceError(cfg.name, why, page=page)
            report.accepted = why
            report.removed = store.mark_removed(seen, now_iso())
            store.layout = [count for _, count in report.layout]
    except ConfigError as exc:  # e.g. a missing ${VAR}: this source only
        report.errors.append(str(exc))
        report.exit_code = 2
    except SourceError as exc:
        report.errors.append(str(exc))
    finally:
        report.repaired = list(store.repaired)
        if keep:
            store.save()  # keep what was fetched before a failure
            if report.removed:
                append_log(root, cfg.name, store.current_before, report)
        secrets = secret_values(cfg, os.environ if environ is None else environ)
        report.errors = [redact(e, secrets) for e in report.errors]
        report.seconds = time.perf_counter() - started
