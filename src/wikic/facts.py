"""A source's frontmatter fields as facts: which fields hold content, their human labels, their
values as text, and the other names (aliases) a source gives its subject.

Kept free of heavy imports: ``search`` and ``ask`` use it on every call.
"""

from __future__ import annotations

import re
from typing import Any

# Fields that describe the record rather than its subject.
RECORD_FIELDS = frozenset(
    {
        "title",
        "source",
        "id",
        "url",
        "updated_at",
        "generated_by",
        "layer0",
        "hand_maintained",
        "device",
        "supersedes",
        "products",
        "tags",
        "category",
        "image",
        "icon",
        "slug",
    }
)
ALIAS_FIELDS = ("common_names", "aliases", "synonyms", "also_known_as", "tags")
PROSE_FIELDS = ("description", "summary", "excerpt", "body")  # text, not a fact
UNITS = {
    "l": "l",
    "ml": "ml",
    "w": "W",
    "cm": "cm",
    "mm": "mm",
    "m": "m",
    "kg": "kg",
    "g": "g",
    "usd": "USD",
    "eur": "EUR",
    "c": "°C",
    "f": "°F",
    "h": "h",
    "pct": "%",
}
LONGEST_FACT = 200  # longer text fields are prose, rendered in the body
# A URL or a path ('https://…', '/crops/x.jpg', 'v15/app'), which locates the record rather than
# stating a fact; '1/32' and 'km/h' are values.
_LOCATION = re.compile(r"^(?:[a-z][a-z0-9+.-]*://\S+|/\S*|(?=\S*[a-z]{3})\S*/\S*)$", re.IGNORECASE)


def label(name: str) -> str:
    """'row_spacing' → 'Row spacing'."""
    return name.replace("_", " ").replace("-", " ").strip().capitalize()


def field_label(name: str) -> str:
    """'tank_capacity_l' → 'Tank capacity (l)'; other names as ``label``."""
    head, _, unit = name.rpartition("_")
    if head and unit.lower() in UNITS:
        return f"{label(head)} ({UNITS[unit.lower()]})"
    return label(name)


def format_value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip()


def fact_fields(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, value as text) of every frontmatter field that states something about the subject."""
    out = []
    for key, value in meta.items():
        if key in RECORD_FIELDS or key in ALIAS_FIELDS or key in PROSE_FIELDS or key.startswith("record_"):
            continue
        if isinstance(value, dict) or (
            isinstance(value, list) and not all(isinstance(v, (str, int, float, bool)) for v in value)
        ):
            continue
        text = format_value(value)
        if text and len(text) <= LONGEST_FACT and not _LOCATION.match(text):
            out.append((key, text))
    return out


def aliases(meta: dict[str, Any]) -> list[str]:
    """Other names a source gives its subject (e.g. ``common_names``), which users search by."""
    out = []
    for name in ALIAS_FIELDS:
        value = meta.get(name)
        if isinstance(value, list):
            out += [str(v).strip() for v in value if isinstance(v, str) and 0 < len(v.strip()) <= 40]
    return out


def plural_stem(word: str) -> str:
    """'strawberries' → 'strawberry', 'tomatoes' → 'tomato', 'radishes' → 'radish', 'beans' → 'bean'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("oes", "ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word
