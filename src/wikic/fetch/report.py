"""What fetching one source did: records added, changed, unchanged and removed, pages read, errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

Progress = Callable[[str, int, int | None], None]  # (source, records so far, total if known)


@dataclass
class FetchReport:
    source: str
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    pages: int = 0
    not_modified: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_code: int = 0  # 2 when the source's configuration is at fault, else 1 with errors
    repaired: list[str] = field(default_factory=list)  # snapshots restored by --repair
    layout: list[tuple[str, int]] = field(default_factory=list)  # (page URL, records) in page order
    accepted: str = ""  # the shrink that --allow-shrink accepted, as fetch would have refused it

    @property
    def records(self) -> int:
        return self.added + self.changed + self.unchanged


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
