"""Help-centre documents for the scale bench, generated from real sentences read at run time.

A document is frontmatter (a unique numbered title, one of a few categories, tags, a date) and
three ``##`` sections of five consecutive sentences of one article each, its sections drawn from
articles of one group where it can (so pages cluster by subject, as a help centre's do); a share
of documents ends with one of a few shared support footers, and a small share states a fact that
changed ('… is now 24 months, up from 12.') or its old value. The output is deterministic for a
seed and a corpus.

No corpus text lives in this repository: sentences come from the FarmBot corpus in
``../shared/corpora/farmbot`` when it is there, else from this KB's own layer 1.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FARMBOT = REPO.parent / "shared" / "corpora" / "farmbot" / "articles"

CATEGORIES = ("getting-started", "hardware", "software", "troubleshooting", "account", "gardening")
HEADINGS = (
    "Overview",
    "Setup",
    "Details",
    "Troubleshooting",
    "Tips",
    "Requirements",
    "Next steps",
    "Configuration",
    "Maintenance",
    "Safety",
    "Calibration",
    "Background",
)
FOOTERS = (
    "Still need help? Contact our support team at support@example.com and include your device serial "
    "number. We answer most requests within one business day.",
    "If this article did not solve your problem, open a ticket from the help centre. Our support team "
    "is available Monday to Friday from 9am to 5pm Pacific time.",
    "Was this article helpful? Let us know in the community forum, where other growers and our staff "
    "share tips. For order or warranty questions, email orders@example.com.",
)
CHANGES = (  # (the fact, unit, old value, new value)
    ("warranty period for kits", "months", 12, 24),
    ("return window for unopened kits", "days", 30, 45),
    ("default photo interval", "minutes", 60, 30),
    ("firmware update check interval", "hours", 24, 12),
    ("soil sensor reading delay", "seconds", 5, 3),
)


@dataclass(frozen=True)
class Article:
    title: str
    group: str
    sentences: tuple[str, ...]


_MARKUP = [
    (re.compile(r"\{%.*?%\}|```.*?```|<[^>]+>|\{:[^}]*\}", re.S), " "),
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), " "),
    (re.compile(r"\[\[([^\]|]*)(?:\|[^\]]*)?\]\]"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LIST_MARK = re.compile(r"^([*+-]|\d+\.)\s+")


def prose_sentences(markdown: str) -> list[str]:
    """The plain prose sentences of a Markdown body (tables, headings, code and quotes left out)."""
    for pattern, repl in _MARKUP:
        markdown = pattern.sub(repl, markdown)
    paragraphs, current = [], []
    for line in markdown.split("\n"):
        text = line.strip()
        if not text or text.startswith(("|", "#", "---", ">")):
            paragraphs.append(" ".join(current))
            current = []
        else:
            current.append(_LIST_MARK.sub("", text))
    paragraphs.append(" ".join(current))
    out = []
    for paragraph in paragraphs:
        for s in _SENTENCE_END.split(" ".join(paragraph.split())):
            n = len(s.split())
            if (
                6 <= n <= 45
                and s[:1].isupper()
                and s[-1:] in ".!?"
                and "|" not in s
                and s.count("`") % 2 == 0
            ):
                out.append(s.replace("**", ""))
    return out


def farmbot_articles(folder: Path = FARMBOT) -> list[Article]:
    out = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text("utf-8"))
        group = f"{record.get('product', '')}/{str(record.get('section') or '').split('/')[-1]}"
        out.append(
            Article(
                str(record.get("title") or path.stem), group, tuple(prose_sentences(record.get("body") or ""))
            )
        )
    return out


def layer1_articles(root: Path = REPO) -> list[Article]:
    """This KB's own layer-1 documents as articles, grouped by their source."""
    out = []
    for path in sorted((root / "layer1_sources").glob("*/*.md")):
        _, _, body = path.read_text("utf-8").partition("\n---\n")
        title = next(
            (
                line[7:].strip().strip("\"'")
                for line in path.read_text("utf-8").split("\n")
                if line.startswith("title: ")
            ),
            path.stem,
        )
        out.append(Article(title, path.parent.name, tuple(prose_sentences(body))))
    return out


def articles() -> list[Article]:
    """Articles with three sentences or more: FarmBot's when the corpus is there, else this KB's."""
    found = farmbot_articles() if FARMBOT.is_dir() else layer1_articles()
    return [a for a in found if len(a.sentences) >= 3]


def document(
    n: int, pool: list[Article], groups: dict[str, list[int]], rng: random.Random, changes: float
) -> str:
    main = rng.randrange(len(pool))
    peers = groups[pool[main].group]
    sections, used = [], set()
    for k in range(3):
        art = pool[
            main if k == 0 else (rng.choice(peers) if rng.random() < 0.7 else rng.randrange(len(pool)))
        ]
        size = min(5, len(art.sentences))
        start = rng.randrange(len(art.sentences) - size + 1)
        chosen = list(art.sentences[start : start + size])
        while len(chosen) < 5:  # a short article: topped up from anywhere
            chosen.append(rng.choice(pool[rng.randrange(len(pool))].sentences))
        head = rng.choice([h for h in HEADINGS if h not in used])
        used.add(head)
        if k and rng.random() < 0.5:
            head = f"{head}: {art.title}"
        sections.append(f"## {head}\n\n" + " ".join(chosen))
    day = date(2021, 1, 1) + timedelta(days=rng.randrange(1200))
    if rng.random() < 2 * changes:  # half state a change, half the value it changed from
        fact, unit, old, new = CHANGES[rng.randrange(len(CHANGES))]
        said = (
            f"The {fact} is now {new} {unit}, up from {old}."
            if day.year >= 2022 and rng.random() < 0.5
            else f"The {fact} is {old} {unit}."
        )
        sections[rng.randrange(3)] += " " + said
    body = "\n\n".join(sections)
    if rng.random() < 0.3:
        body += "\n\n## Contact support\n\n" + FOOTERS[rng.randrange(len(FOOTERS))]
    group = pool[main].group
    tags = sorted(
        {
            group.split("/")[0] or "general",
            rng.choice(("howto", "faq", "reference", "kit")),
            rng.choice(("genesis", "express", "web-app", "os")),
        }
    )
    category = CATEGORIES[sum(map(ord, group)) % len(CATEGORIES)]
    return (
        f"---\ntitle: {json.dumps(f'{pool[main].title} ({n:06d})')}\ncategory: {category}\n"
        f"tags: [{', '.join(tags)}]\ndate: {day.isoformat()}\n---\n\n{body}\n"
    )


def write_documents(n: int, folder: Path, seed: int = 1, changes: float = 0.002) -> int:
    """Write ``n`` documents into ``folder`` (doc-000000.md …); returns how many articles fed them."""
    pool = articles()
    if not pool:
        raise SystemExit("no articles with three sentences or more to generate documents from")
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(pool):
        groups.setdefault(a.group, []).append(i)
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"doc-{i:06d}.md").write_text(document(i, pool, groups, rng, changes), "utf-8")
    return len(pool)
