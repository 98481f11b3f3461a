"""Findings, the rules they belong to, and the report ``wikic check`` prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

ERROR, WARNING = "error", "warning"


RULES: dict[str, tuple[str, str]] = {
    "broken-link": (ERROR, "a link or citation whose file or anchor does not exist"),
    "uncited-sentence": (ERROR, "a prose sentence or fact table row without a citation"),
    "unsupported-citation": (ERROR, "a sentence its citations do not support"),
    "orphan-page": (ERROR, "a page with no inbound link that is not in the index"),
    "unindexed-page": (WARNING, "a page the index does not list"),
    "dead-end-page": (WARNING, "a page that links to no other page"),
    "index-only-page": (WARNING, "a page only the index links to"),
    "index-dangling": (ERROR, "an index line linking a page that does not exist"),
    "stale-page": (ERROR, "a page whose fingerprint no longer matches its sources; recompile"),
    "uncovered-source": (WARNING, "a layer-1 source no page uses"),
    "duplicate-page": (WARNING, "two pages on one subject"),
    "contradiction": (ERROR, "sources state different values for one fact, unresolved by supersession"),
    "superseded-citation": (ERROR, "a citation of an older version outside a Superseded note"),
    "unresolved-supersedes": (WARNING, "a supersedes value or versions chain entry that names nothing"),
    "layer0-tampered": (ERROR, "a layer-0 snapshot whose hash does not match"),
    "hand-edited-generated": (ERROR, "a generated layer-1 file edited by hand"),
    "unsafe-markup": (ERROR, "raw HTML, an image or a link out of the KB on a wiki page"),
    "suspicious-instruction": (WARNING, "a cited sentence that instructs the reader or an assistant"),
    "wiki-shrank": (WARNING, "the wiki lost more than half its pages since the last compile"),
    "unreadable-source": (ERROR, "a layer-1 file that cannot be parsed (skipped)"),
    "symlink": (ERROR, "a symbolic link under layer1_sources/, schema/ or wiki/ (never followed)"),
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
    coverage: Any = None  # coverage.Coverage: how much of layer 1 reaches a page

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "errors": [f.as_dict() for f in self.errors],
            "warnings": [f.as_dict() for f in self.warnings],
        }
        if self.coverage is not None:
            out["coverage"] = self.coverage.as_dict()
        return out


# ---------------------------------------------------------------------------------------------
# Wiki pages: frontmatter, links and the statements that need a citation


def short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


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
    if report.coverage is not None:
        lines.append(f"coverage: {report.coverage.summary()}")
    return "\n".join([*lines, summary]) + "\n"
