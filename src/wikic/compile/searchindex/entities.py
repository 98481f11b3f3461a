"""The things the wiki has an entry for, and the sections it files under each."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...core.words import words

ENTRY_TYPE = "entity"  # the ``type`` of an entry's own page (a crop's, a part's)


class Entities:
    """What the wiki has an entry for (a crop, an article, a part): each page titled as a document
    it quotes (an entry's own page: a crop's, an article's home), and each level-2 heading of any
    other page; known by its title or heading and, when that is a source's title, that source's
    aliases. A question that names one is linked to the sections the wiki files under it, which
    plain retrieval finds only if the rest of the question happens to use the sources' words.
    ``pages`` are the reference entries' own pages (of type ``entity``), each with its names."""

    def __init__(self, entries: Sequence[tuple[str, str, Sequence[str], str]], docs: dict[str, tuple]):
        """``entries``: (page path, title or heading, cited sections, the page's type for a whole
        page, '' for a section) (``IndexStore.entries``); ``docs``: {path: (source, id, key, title,
        aliases)} (``SearchIndex.doc_names``)."""
        from ...core.facts import plural_stem  # here, as in named_in: a search needs no entities

        self.refs: dict[tuple[str, ...], dict[str, None]] = {}  # name words → cited sections, in order
        self.pages: dict[str, list[tuple[str, ...]]] = {}  # an entry's own page → its names' words
        titled = {path: _titled(name, refs, docs) for path, name, refs, kind in entries if kind}
        for path, heading, refs, kind in entries:
            if bool(kind) != bool(titled.get(path)):  # a page titled as its document is one entry
                continue
            names = [heading, *(alias for doc in _titled(heading, refs, docs) for alias in doc[4])]
            for name in names:
                key = tuple(plural_stem(w) for w in words(name))
                if key and len(" ".join(key)) >= 4:
                    self.refs.setdefault(key, {}).update(dict.fromkeys(refs))
                    if kind == ENTRY_TYPE:
                        self.pages.setdefault(path, []).append(key)
        self.longest = max((len(k) for k in self.refs), default=0)

    def as_json(self) -> str:
        names = [[list(k), list(v)] for k, v in self.refs.items()]
        pages = {path: [list(k) for k in keys] for path, keys in self.pages.items()}
        return json.dumps({"names": names, "pages": pages}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Entities:
        data = json.loads(text)
        out = cls([], {})
        out.refs = {tuple(k): dict.fromkeys(v) for k, v in data["names"]}
        out.pages = {path: [tuple(k) for k in keys] for path, keys in data["pages"].items()}
        out.longest = max((len(k) for k in out.refs), default=0)
        return out

    def pages_named_in(self, *texts: str) -> set[str]:
        """The entries' own pages that ``texts`` name (by a title or alias, as whole words)."""
        named = {k for text in texts for k in self.named_in(text)}
        return {path for path, keys in self.pages.items() if named.intersection(keys)}

    def named_in(self, text: str) -> list[tuple[str, ...]]:
        """The entity names that occur in ``text`` as whole words, longest first."""
        from ...core.facts import plural_stem

        toks = [plural_stem(w) for w in words(text)]
        found = {
            tuple(toks[i : i + n])
            for n in range(1, self.longest + 1)
            for i in range(len(toks) - n + 1)
            if tuple(toks[i : i + n]) in self.refs
        }
        return sorted(found, key=lambda k: (-len(k), k))


def _titled(name: str, refs: Sequence[str], docs: dict[str, tuple]) -> list[tuple]:
    """The documents among those ``refs`` cite whose title is ``name``."""
    found = (docs.get(path) for path in dict.fromkeys(r.partition("#")[0] for r in refs))
    return [doc for doc in found if doc is not None and doc[3] == name]
