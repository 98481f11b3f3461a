"""Facts from fields: which frontmatter fields of a layer-1 document are facts a reader wants.

One place decides this for every stage: the librarian's fact lists, the coverage figures of
compile and check, and the lint rule that compares a published fact with its frontmatter.

- Bookkeeping fields (ids, URLs, hashes, timestamps, slugs, icons) are not facts.
- Values that mean "unknown" (``0``, ``""``, ``null``, ``[]``) are never shown as facts.
- Long text (a description, a summary) is prose, shown as a paragraph, not as a fact.
- Lists are joined with ", "; booleans read "yes"/"no".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .models import SourceDoc

BOOKKEEPING = frozenset(
    {
        "title",
        "source",
        "id",
        "url",
        "updated_at",
        "created_at",
        "generated_by",
        "layer0",
        "hand_maintained",
        "supersedes",
        "slug",
        "html_url",
        "icon",
        "image",
        "svg_icon",
        "device",
        "thumbnail",
        "position",
        "order",
    }
)
PROSE_FIELDS = frozenset({"description", "summary", "excerpt", "abstract", "lead", "intro", "answer"})
LONG_TEXT = 120  # characters: a longer string field is prose, not a fact

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


# fields that say where a record is filed, not what it says
TAXONOMY = frozenset(
    "category categories tags tag labels label section sections product products type types topics "
    "collection collections kind group".split()
)


# where a source files what is not for its readers: 'v1.1/manufacturing/pre-assembly' holds the
# factory's steps ('The information in the following pages is … not meant for end users')
STAFF = frozenset("manufacturing internal staff archive archived".split())


FILINGS = ("category", "section", "categories", "tags", "type")  # the fields a source files a document by


def filed_under(doc: SourceDoc, keys: tuple[str, ...] = FILINGS) -> str:
    """The words a document is filed under (by default its category, section path, tags or type;
    'v1.1/extras/maintenance', 'cleaning-and-maintenance' read as words)."""
    found = []
    for key in keys:
        value = doc.meta.get(key)
        values = value if isinstance(value, list) else [value]
        found += [str(v) for v in values if isinstance(v, str)]
    return " ".join(found).replace("/", " ").replace("-", " ").replace("_", " ")


def for_staff(doc: SourceDoc) -> bool:
    """Whether a document is filed (category, section path, tags) as its source's staff's."""
    return bool(STAFF & set(filed_under(doc).lower().split()))


# fields that say who wrote a record, not what it says
BYLINE = frozenset({"author", "authors", "byline", "writer", "written_by"})


def label(name: str) -> str:
    """'row_spacing' → 'Row spacing' (the label transform gives a field in a details list)."""
    return name.replace("_", " ").replace("-", " ").strip().capitalize()


def field_label(name: str, units: dict[str, str] | None = None) -> str:
    """'tank_capacity_l' → 'Tank capacity (l)'; 'spread' with ``units`` {'spread': 'cm'} (the
    schema's ``facts.units``, for fields whose name does not say) → 'Spread (cm)'; other names
    as ``label``."""
    head, _, unit = name.rpartition("_")
    if head and unit.lower() in UNITS:
        return f"{label(head)} ({UNITS[unit.lower()]})"
    if units and units.get(name):
        return f"{label(name)} ({units[name]})"
    return label(name)


def format_value(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def is_unknown(value: object) -> bool:
    """``0``, ``""``, ``null`` and empty lists mean the record does not know the value."""
    if value is None or isinstance(value, bool):
        return value is None
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, str):
        return value.strip() in ("", "0", "0.0")
    if isinstance(value, list):
        return not any(not is_unknown(v) for v in value)
    return False


def is_bookkeeping(name: str) -> bool:
    return (
        name in BOOKKEEPING
        or name.startswith("record_")
        or name.endswith(("_url", "_at", "_sha256", "_hash"))
        or name == "wikic"
    )


# a value that says where the record is filed or found, not something about its subject: a URL, an
# absolute path, or a path of lower-case segments ('v15/app', 'v1.1/bom/fasteners-and-hardware'), not a
# fraction ('1/32')
_LOCATION = re.compile(r"^(?:[a-z][a-z0-9+.-]*://\S+|/\S*|(?=\S*[a-z])[a-z0-9._-]+(?:/[a-z0-9._-]+)+)$")


def locates(value: object) -> bool:
    """Whether a field's value only locates its record (shown to no reader as a fact)."""
    return isinstance(value, str) and bool(_LOCATION.match(value.strip()))


def is_prose(name: str, value: object) -> bool:
    if not isinstance(value, str):
        return False
    text = " ".join(value.split())
    return name in PROSE_FIELDS or len(text) > LONG_TEXT or "\n\n" in value.strip()


@dataclass(frozen=True)
class Fact:
    key: str
    label: str
    value: str  # as shown: lists joined, booleans yes/no

    @property
    def text(self) -> str:
        return f"**{self.label}:** {self.value}"


def _scalar(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, (str, int, float, bool)) for v in value)
    return isinstance(value, (str, int, float, bool))


def facts(
    doc: SourceDoc,
    show: tuple[str, ...] = (),
    hide: tuple[str, ...] = (),
    units: dict[str, str] | None = None,
) -> list[Fact]:
    """The document's fields worth showing as facts, in frontmatter order.

    ``show`` (when given) lists the only fields to show; ``hide`` lists fields to leave out;
    ``units`` gives the unit of fields whose name does not say it (labels 'Spread (cm)').
    """
    out = []
    for key, value in doc.meta.items():
        if show and key not in show:
            continue
        if key in hide or is_bookkeeping(key) or not _scalar(value) or is_unknown(value):
            continue
        if is_prose(key, value) or locates(value):
            continue
        if isinstance(value, list):
            value = [v for v in value if not is_unknown(v)]
        out.append(Fact(key, field_label(key, units), " ".join(format_value(value).split())))
    return out


def prose_fields(doc: SourceDoc, hide: tuple[str, ...] = (), listed: bool = False) -> list[tuple[str, str]]:
    """(field, text) of long text fields the document's body does not already say: a details list
    restating the fields ('- **Description:** Extremely sweet …', as transform writes a short
    one) is no saying, since a page leaves that list to the fact list, which holds no prose;
    unless ``listed`` (an answer reads that list's items as they are)."""
    said = None
    out = []
    for key, value in doc.meta.items():
        if key in hide or is_bookkeeping(key) or not is_prose(key, value) or is_unknown(value):
            continue
        if said is None:
            said = " ".join((doc.body if listed else _unrestated(doc)).split())
        text = value.strip()
        if " ".join(text.split()) not in said:
            out.append((key, text))
    return out


_ITEM = re.compile(r"^\s*[-*+]\s+(.*)$")
_MARKS = re.compile(r"\*\*|__|`")


def _unrestated(doc: SourceDoc) -> str:
    """The body less its list items that restate a field ('- **Height:** 30')."""
    return "\n".join(
        line
        for line in doc.body.split("\n")
        if not ((m := _ITEM.match(line)) and restated_field(doc, _MARKS.sub("", m.group(1))))
    )


_RESTATED = re.compile(r"^\s*(?:\*\*|__)?([^:*_]{1,60}?)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$")


def restated_field(doc: SourceDoc, text: str) -> str | None:
    """The frontmatter field a 'Label: value' line restates (as transform's details list does),
    or None. Compared on labels and shown values, so a changed value is not a restatement."""
    m = _RESTATED.match(text)
    if not m:
        return None
    name, value = m.group(1).strip().lower(), " ".join(m.group(2).split())
    for key, raw in doc.meta.items():
        if name in _labels(key) and _scalar(raw) and value == " ".join(format_value(raw).split()):
            return key
    return None


@lru_cache(maxsize=4096)  # a layer's documents share their field names
def _labels(key: str) -> tuple[str, str]:
    """A field's label and its label with the unit, lower-cased, as a restated line names it."""
    return label(key).lower(), field_label(key).lower()


def fact_for_label(doc: SourceDoc, name: str) -> tuple[str, str] | None:
    """(field, shown value) of the field labelled ``name`` ('Row spacing', 'Row spacing (cm)'),
    or None."""
    wanted = {name.strip().lower(), re.sub(r"\s*\([^()]{1,8}\)$", "", name.strip()).lower()}
    for key, raw in doc.meta.items():
        if wanted & {label(key).lower(), field_label(key).lower(), key.lower()} and _scalar(raw):
            return key, " ".join(format_value(raw).split())
    return None


NAME_FIELDS = ("common_names", "aliases", "synonyms", "also_known_as")
ALIAS_FIELDS = (*NAME_FIELDS, "tags")


def aliases(meta: dict[str, object], fields: tuple[str, ...] = ALIAS_FIELDS) -> list[str]:
    """Other names a source gives its subject (e.g. ``common_names``), which users search by;
    ``fields=NAME_FIELDS`` leaves out tags, which are words to search by but not names."""
    out = []
    for name in fields:
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
