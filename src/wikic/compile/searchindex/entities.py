"""The things the wiki has an entry for, and the sections it files under each."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...core.markdown import words


class Entities:
    """What the wiki has an entry for (a crop, an article, a part): each level-2 heading of a page,
    known by its heading and, when it is a source's title, that source's aliases. A question that
    names one is linked to the sections the wiki files under it, which plain retrieval finds only
    if the rest of the question happens to use the sources' words."""

    def __init__(self, entries: Sequence[tuple[str, str, Sequence[str]]], docs: dict[str, tuple]):
        """``docs``: {path: (source, id, key, title, aliases)} (``SearchIndex.doc_names``)."""
        from ...core.facts import plural_stem  # here, as in named_in: a search needs no entities

        self.refs: dict[tuple[str, ...], dict[str, None]] = {}  # name words → cited sections, in order
        for _, heading, refs in entries:
            names = [heading]
            for path in dict.fromkeys(r.partition("#")[0] for r in refs):
                doc = docs.get(path)
                if doc is not None and doc[3] == heading:
                    names += doc[4]
            for name in names:
                key = tuple(plural_stem(w) for w in words(name))
                if key and len(" ".join(key)) >= 4:
                    self.refs.setdefault(key, {}).update(dict.fromkeys(refs))
        self.longest = max((len(k) for k in self.refs), default=0)

    def as_json(self) -> str:
        return json.dumps([[list(k), list(v)] for k, v in self.refs.items()], ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Entities:
        out = cls([], {})
        out.refs = {tuple(k): dict.fromkeys(v) for k, v in json.loads(text)}
        out.longest = max((len(k) for k in out.refs), default=0)
        return out

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
