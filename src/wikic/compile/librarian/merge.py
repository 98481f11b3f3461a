"""An LLM never makes a page poorer: its verified prose, merged into the offline draft.

The offline draft of a page job states every source section it quotes completely, with its
tables, fact lists and notes. The model's prose replaces the offline prose of one source section
only where it is at least as complete: for each offline sentence, a verified model sentence with
most of its words, and every number the offline text states. Everywhere else the offline blocks stay,
so model prose that failed verification, was cut off or was never written falls back to the
source's own text, never to nothing. Sentences grouped by the section they cite first keep this
independent of how the offline librarian lays its pages out.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.markdown import content_words, numbers_with_units
from ..citations import stem
from ..draft import Block, Citation, Draft, Sentence

PROSE = ("para", "bullets")
SAYS_IT = 0.7  # share of an offline sentence's content words a model sentence must have


def _prose(blocks: tuple[Block, ...]) -> list[Sentence]:
    return [s for b in blocks if b.kind in PROSE for s in b.sentences]


def _words(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def complete(written: list[Sentence], source: list[Sentence]) -> bool:
    """Whether the model's sentences for a section say what each offline sentence says: one of
    them has most of its words (``SAYS_IT``), and together they have all of its numbers."""
    said = [_words(w.text) for w in written]
    numbers = set().union(*(numbers_with_units(w.text) for w in written)) if written else set()
    for s in source:
        mine = _words(s.text)
        if not numbers_with_units(s.text) <= numbers:
            return False
        if mine and max((len(mine & w) / len(mine) for w in said), default=0.0) < SAYS_IT:
            return False
    return True


def merge(model: Draft, offline: Draft, titles: dict[str, str]) -> Draft:
    """The offline draft with the model's prose in place of every section it wrote completely;
    model sentences about sections the offline draft does not quote are added after that
    document's last block (or under its title). ``titles`` maps a source path to its title.

    ``stats`` counts the model sentences ``published``, the offline ones kept as ``fallback``,
    and the verified model sentences ``set_aside`` for a fuller offline text."""
    source: dict[Citation, list[Sentence]] = {}
    for s in _prose(offline.blocks):
        if s.cites:
            source.setdefault(s.cites[0], []).append(s)
    written: dict[Citation, list[Sentence]] = {}
    for s in _prose(model.blocks):
        if s.cites:
            key = next((c for c in s.cites if c in source), s.cites[0])
            written.setdefault(key, []).append(s)
    won = {k for k, said in written.items() if k in source and complete(said, source[k])}

    blocks: list[Block] = []
    emitted: set[Citation] = set()
    fallback = 0
    for b in offline.blocks:
        if b.kind not in PROSE:
            blocks.append(b)
            continue
        run: list[Sentence] = []
        for s in b.sentences:
            key = s.cites[0] if s.cites else None
            if key not in won:
                run.append(s)
                fallback += 1
                continue
            if run:
                blocks.append(replace(b, sentences=tuple(run)))
                run = []
            if key not in emitted:
                emitted.add(key)
                blocks.append(Block("para", sentences=tuple(written[key])))
        if run:
            blocks.append(replace(b, sentences=tuple(run)))

    extra: dict[str, list[Sentence]] = {}
    for key, said in written.items():
        if key not in source:
            extra.setdefault(key.path, []).extend(said)
    for path, said in extra.items():
        para = Block("para", sentences=tuple(said))
        last = max(
            (i for i, b in enumerate(blocks) for s in b.sentences if s.cites and s.cites[0].path == path),
            default=None,
        )
        if last is None:
            blocks += [Block("heading", text=titles.get(path, path), level=2), para]
        else:
            blocks.insert(last + 1, para)

    published = sum(len(written[k]) for k in won) + sum(len(v) for v in extra.values())
    set_aside = sum(len(v) for k, v in written.items() if k in source and k not in won)
    return Draft(
        offline.title,
        model.summary or offline.summary,
        model.keywords or offline.keywords,
        tuple(blocks),
        offline.see_also,
        {"published": published, "fallback": fallback, "set_aside": set_aside},
    )
