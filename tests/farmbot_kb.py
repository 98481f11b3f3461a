"""Build a knowledge base from the FarmBot corpus in ../shared, served by the loopback API.

Used by tests and benchmarks; the corpus itself is never copied into the repository.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml
from apiserver import ApiServer

from wikic.core.config import load_sources
from wikic.fetch.run import fetch
from wikic.transform.run import transform

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpora" / "farmbot"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "farmbot"
QUESTIONS = CORPUS / "questions-dev.yaml"


def question_files() -> list[Path]:
    """The dev questions, then any further files named in ``WIKIC_EXTRA_QUESTIONS`` (':'-separated)."""
    return [QUESTIONS] + [Path(p) for p in os.environ.get("WIKIC_EXTRA_QUESTIONS", "").split(":") if p]


def available() -> bool:
    return (CORPUS / "articles").is_dir() and (CORPUS / "crops").is_dir()


def load(kind: str) -> list[dict]:
    return [json.loads(p.read_text("utf-8")) for p in sorted((CORPUS / kind).glob("*.json"))]


def serve(api: ApiServer, token: str | None = None) -> dict[str, str]:
    """Serve articles (next_field pages of 50, ETags; ``token`` required in X-Token when given) and
    crops (cursor pages of 40); returns the first-page URLs."""
    require = {"X-Token": token} if token else {}
    return {
        "articles": api.add(
            "articles", load("articles"), page_size=50, items="articles", etag=True, require=require
        ),
        "crops": api.add(
            "crops",
            load("crops"),
            style="cursor",
            page_size=40,
            items="result.crops",
            cursor_field="meta.next",
        ),
    }


def write_schema(root: Path, urls: dict[str, str], token_env: str | None = None) -> None:
    """sources.yaml for the served corpus (sending ``${token_env}`` as X-Token when given), and the
    FarmBot wiki.yaml fixture."""
    articles = {
        "kind": "http",
        "url": urls["articles"],
        "items": "articles",
        "pagination": {"style": "next_field", "field": "next"},
        "title": "title",
        "body": "body",
        "url_field": "html_url",
        "cleanups": ["liquid"],
    }
    if token_env:
        articles["headers"] = {"X-Token": "${" + token_env + "}"}
    sources = {
        "articles": articles,
        "crops": {
            "kind": "http",
            "url": urls["crops"],
            "items": "result.crops",
            "id": "slug",
            "pagination": {"style": "cursor", "param": "cursor", "field": "meta.next"},
            "title": "name",
        },
    }
    (root / "schema").mkdir(parents=True, exist_ok=True)
    (root / "schema" / "sources.yaml").write_text(
        yaml.safe_dump({"sources": sources}, sort_keys=False), "utf-8"
    )
    shutil.copy(FIXTURE / "wiki.yaml", root / "schema" / "wiki.yaml")
    shutil.copy(REPO / "schema" / "librarian.md", root / "schema" / "librarian.md")


def build_layers(root: Path, api: ApiServer) -> None:
    """Fetch and transform the corpus into ``root`` (schema included)."""
    write_schema(root, serve(api))
    config = load_sources(root)
    for report in fetch(root, config, sleep=lambda s: None):
        assert not report.errors, report.errors
    for report in transform(root, config):
        assert not report.errors, report.errors


def build_compiled(root: Path) -> None:
    """The corpus fetched from its own loopback API, transformed and compiled offline into ``root``."""
    from wikic.compile.run import compile_wiki

    api = ApiServer()
    try:
        build_layers(root, api)
    finally:
        api.close()
    compile_wiki(root)
