"""How the search index stores Chinese, Japanese and Korean text: as overlapping character
bigrams (the unicode61 tokenizer would keep a whole run of CJK characters as one token). Queries
are split the same way (``lookup/text.py``)."""

from __future__ import annotations

import functools
import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


@functools.cache
def cjk_patterns() -> tuple[re.Pattern, re.Pattern]:
    """(a run of CJK characters, one CJK character): compiled when first needed, since building
    these character classes costs more than the rest of a search."""
    return re.compile(f"[{_CJK}]+"), re.compile(f"[{_CJK}]")


def has_cjk(text: str) -> bool:
    return not text.isascii() and cjk_patterns()[1].search(text) is not None


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run ('水箱容量' → 水箱 箱容 容量); one char stays one."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """Text as stored in FTS: CJK runs become space-separated bigrams, everything else is kept."""
    if not has_cjk(text):
        return text
    return cjk_patterns()[0].sub(lambda m: " " + " ".join(cjk_bigrams(m.group())) + " ", text)
