"""The error types the library raises; the CLI maps them to exit codes in one place."""

from __future__ import annotations


class WikicError(Exception):
    """Base class. ``exit_code`` follows the command contract: 1 KB problem, 2 usage/config."""

    exit_code = 1


class ConfigError(WikicError):
    """A schema file or option is wrong. Message names the file and key and says what to do."""

    exit_code = 2


class UsageError(WikicError):
    """A command-line argument or tool argument is unusable (e.g. a query past the length cap)."""

    exit_code = 2


class KBError(WikicError):
    """The knowledge base itself has a problem (tampered snapshot, broken layer)."""

    exit_code = 1


class SourceError(WikicError):
    """One source could not be fetched or transformed; other sources still run."""

    exit_code = 1

    def __init__(self, source: str, message: str, *, page: str | None = None, record: str | None = None):
        self.source = source
        self.page = page
        self.record = record
        where = [f"source '{source}'"]
        if page:
            where.append(f"page {page}")
        if record is not None:
            where.append(f"record '{record}'")
        super().__init__(f"{', '.join(where)}: {message}")


class LockedError(WikicError):
    exit_code = 1


class SchemaVersionError(WikicError):
    """A saved artifact carries a schema_version this wikic cannot read."""

    exit_code = 2
