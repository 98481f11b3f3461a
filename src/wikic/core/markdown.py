"""Markdown helpers shared by every stage: GitHub heading anchors, sections and sentences."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat

from .words import STOPWORDS, WORD, words

# ATX heading: up to 3 spaces, 1-6 '#', then text; a closing '#' run only counts after a space.
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A link's text may hold one level of brackets and its target one of parentheses. No class holds
# its own opening bracket, so a match attempt stops at the next one: 80 KB of '[' is read once,
# not once per '['.
LINK_TEXT = r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # one group: the text, one level of brackets in it
_LINK = re.compile(r"!?" + LINK_TEXT + r"\((?:[^()]|\([^()]*\))*\)")
IMAGE_MARKUP = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?:[^()]|\([^()]*\))*\)")  # ![alt](src)
_CAPTION = re.compile(r"^[_*]([^_*].*?)[_*]$")
_ALT = re.compile(r"!\[([^\]]*)\]")


def is_caption(line: str, above: str) -> bool:
    """Whether a line in italics is an image's caption, which says nothing where the image is not
    shown: under a line that is only images ('![LEDs on Farmduino express board](…)' then
    '_Farmduino Express LEDs on Express kits_'), or repeating the text of the image on the line
    with text above it ('![Box LEDs on Genesis kit](…) …' then '_Box LEDs on Genesis kit_')."""
    m = _CAPTION.match(line.strip())
    if m is None:
        return False
    if IMAGE_MARKUP.search(above) and not IMAGE_MARKUP.sub("", above).strip():
        return True
    alt = _ALT.search(above)
    return alt is not None and " ".join(alt.group(1).lower().split()) == " ".join(m.group(1).lower().split())


_MEDIA = r"(?:videos?|images?|photos?|diagrams?|pictures?|screenshots?|gifs?)"
_POINTER = re.compile(
    rf"^(?:(?:please\s+)?(?:see|watch|view|check out|refer to)\b[^.]*\b{_MEDIA}\b[^.]*\b(?:below|above)\b"
    rf"|here(?:'s| is) a (?:link|video)\b|(?:the|this)\s+{_MEDIA}\s+(?:below|above)\b"
    r"|(?:simply\s+)?click (?:on\s+)?(?:the|these) links (?:below|above)\b)",
    re.IGNORECASE,
)


def points_at_media(sentence: str) -> bool:
    """Whether a sentence only points at a picture, a video or a link of its page, which the wiki
    does not show ('See the video below for detail.', 'The diagram below shows …', 'Here is a link
    with more information …'): like the image itself, it says nothing where it is not shown."""
    return _POINTER.match(sentence.strip()) is not None


# A wiki-link copied from a source: [[Page]] or [[Page|shown text]].
_WIKILINK = re.compile(r"\[\[([^\[\]|]+)(?:\|([^\[\]]+))?\]\]")
# Emphasis and code markers; '_' only at word edges, since snake_case keeps its underscores, and
# '~' not before a number or a price, where it means 'about' ('~$1,800').
_INLINE = re.compile(r"[*`]+|~{2,}|~(?![\d$€£])|(?<!\w)_+|_+(?!\w)")
_INLINE_MARK = re.compile(r"[*`~_]")  # a character ``_INLINE`` removes (found faster than by it)
_HTML_TAG = re.compile(r"<[^<>]+>")
_ATTRIBUTES = re.compile(r"\{:[^}\n]*\}")  # kramdown attributes ('{:.internal}'), never shown as text
_MARKED = re.compile(r"[\[<*`~_:\\&]")  # a character some inline markup below needs
_NBSP = re.compile(r"&(?:nbsp|#160|#x0*a0);", re.IGNORECASE)  # HTML's no-break space, as a space


# A sentence is read by the plan, the verifier, the renderer and coverage alike: room for the
# sections and sentences of a 10,000-document layer 1 (about 200,000 texts), which 1 << 15 held
# too few of to keep a text until it was asked again; the page processes inherit what the plan read.
@lru_cache(maxsize=1 << 18)
def plain_inline(text: str) -> str:
    """Rendered text of inline Markdown: links become their text, emphasis and tags vanish, and
    backslash-escaped punctuation ('2\\) Step') reads as itself."""
    if not _MARKED.search(text):
        return text.strip()
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text) if "[[" in text else text
    for _ in range(3 if "](" in text else 0):  # '[[a](x)](y)': a link in a link's text is read
        text, n = _LINK.subn(r"\1", text)  # from the inside out
        if not n:
            break
    if "](" in text:  # nested deeper than that: what is left reads as text, never as a link
        text = text.replace("](", "] (")
    text = without_tags(text)
    text = _NBSP.sub(" ", text) if "&" in text else text
    text = _ATTRIBUTES.sub("", text) if "{:" in text else text
    text = _EMOJI_CODE.sub(_symbol, text) if ":" in text else text
    text = _INLINE.sub("", text) if _INLINE_MARK.search(text) else text
    return _ESCAPED.sub(r"\1", text).strip() if "\\" in text else text.strip()


_EMOJI_CODE = re.compile(
    r"(?<![\w:/]):[a-z0-9_+-]{2,40}:(?![\w/])"
)  # ':construction_worker:', drawn as emoji
# Shortcodes that say something, kept as the sign they draw (a table of which seeds suit which
# tool says it with nothing else); the others are decoration (':seedling:', ':rocket:').
_SYMBOLS = {
    "heavy_check_mark": "✔",
    "white_check_mark": "✅",
    "ballot_box_with_check": "☑",
    "x": "❌",
    "heavy_multiplication_x": "✖",
    "negative_squared_cross_mark": "❎",
    "warning": "⚠",
    "no_entry": "⛔",
    "no_entry_sign": "🚫",
    "stop_sign": "🛑",
    "question": "❓",
    "exclamation": "❗",
    "heavy_plus_sign": "➕",
    "heavy_minus_sign": "➖",
}


def _symbol(m: re.Match) -> str:
    return _SYMBOLS.get(m.group()[1:-1], "")


# An icon drawn by a font ('<i class="fa fa-plus"></i>' on a button): 'click +.' rather than 'click .'.
_ICON = re.compile(r"""<(?:i|span)\b[^<>]*\bclass=["'][^"'<>]*\bfa-([a-z-]+)[^<>]*>""")
_ICONS = {
    "plus": "+",
    "minus": "−",
    "times": "×",
    "check": "✔",
    "check-circle": "✔",
    "check-circle-o": "✔",
    "arrow-left": "←",
    "arrow-right": "→",
    "chevron-left": "‹",
    "chevron-right": "›",
    "caret-down": "▾",
    "caret-up": "▴",
    "question-circle": "?",
    "circle": "●",
    "circle-thin": "○",
    "trash": "🗑",
    "home": "⌂",
    "download": "⤓",
    "upload": "⤒",
    "cog": "⚙",
    "gear": "⚙",
    "pencil": "✎",
    "search": "🔍",
    "sun-o": "☀",
    "info-circle": "ⓘ",
    "times-circle-o": "⊗",
    "exclamation-triangle": "⚠",
    "arrow-up": "↑",
    "arrow-down": "↓",
    "arrow-circle-up": "⇧",
    "arrow-circle-down": "⇩",
    "arrows": "✥",
    "arrows-alt": "✥",
    "arrows-v": "↕",
    "chevron-up": "⌃",
    "chevron-down": "⌄",
    "caret-left": "◂",
    "caret-right": "▸",
    "ellipsis-v": "⋮",
    "bars": "☰",
    "th-large": "⊞",
    "expand": "⤢",
    "external-link": "↗",
    "link": "🔗",
    "share": "↪",
    "repeat": "↻",
    "step-forward": "⏭",
    "step-backward": "⏮",
    "power-off": "⏻",
    "toggle-on": "◉",
    "circle-o-notch": "◌",
    "crosshairs": "⌖",
    "font": "A",
    "code": "‹/›",
    "magic": "🪄",
    "paint-brush": "🖌",
    "scissors": "✂",
    "thumb-tack": "📌",
    "edit": "✎",
    "clone": "⧉",
    "filter": "⏷",
    "sort-amount-desc": "⇣",
    "eye": "👁",
    "camera": "📷",
    "video-camera": "🎥",
    "calendar": "📅",
    "clock-o": "🕒",
    "map": "🗺",
    "folder": "📁",
    "area-chart": "📈",
}


def _icon(m: re.Match) -> str:
    return _ICONS.get(m.group(1), "")


_LINE_BREAK = re.compile(r"(?:\s*<br\s*/?>)+\s*", re.IGNORECASE)


def without_tags(text: str) -> str:
    """Text without its HTML tags, a font icon kept as the sign it draws and a line break as a
    space ('AC 100-265V<br>50/60Hz' is two values, not '100-265V50/60Hz')."""
    text = _ICON.sub(_icon, text) if "fa-" in text else text
    text = _LINE_BREAK.sub(" ", text) if "<br" in text or "<BR" in text else text
    return _HTML_TAG.sub("", text)


_ESCAPED = re.compile(r"\\([#>|.)+\-=!\[\]])")
_BLOCK_START = re.compile(r"^(\d+)([.)])(?=\s|$)|^(?:[-+*]|#{1,6})(?=\s|$)|^[>|]")


def escape_block_start(text: str) -> str:
    """Text put at the start of a Markdown line, escaped so that it stays text: '2) Grace' would
    start a numbered list, '# x' a heading, '> x' a quote."""
    m = _BLOCK_START.match(text)
    if not m:
        return text
    if m.group(1):
        return f"{m.group(1)}\\{m.group(2)}{text[m.end() :]}"
    return "\\" + text


_NOT_TEXT = re.compile(r"<(style|script)\b[^>]*>[\s\S]*?</\1\s*>|<!--[\s\S]*?-->", re.IGNORECASE)


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what no page shows (tab, LF and CR aside)


def without_controls(text: str) -> str:
    """``text`` without NUL and other control characters (a page holding one reads as binary)."""
    return CONTROL.sub("", text) if CONTROL.search(text) else text


def readable(text: str) -> str:
    """Markdown without what a browser would not show as text: style and script blocks, comments."""
    return _NOT_TEXT.sub("", text) if "<" in text else text


# A table row needs a '|'; the delimiter row under the header has a '|' and only dashes, colons
# and spaces between them ('---|---', '| :-- | --: |').
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


_LINK_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\[[^\]]+\]\([^()\s]*\)[ \t]*")


def is_navigation(text: str) -> bool:
    """Whether a section's text is nothing but a list of links, each item a link alone: a help
    center's 'What's next?' (its place in a site's pages, not something it says)."""
    if "](" not in text:  # most sections: no link at all (every section quoted is asked)
        return False
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and all(_LINK_ITEM.fullmatch(line) for line in lines)


def is_table_start(line: str, next_line: str) -> bool:
    """Whether ``line`` is a table's header row (with or without outer pipes)."""
    return "|" in line and "|" in next_line and bool(_TABLE_DELIMITER.match(next_line))


def table_cells(line: str) -> list[str]:
    """The cells of a table row, as rendered text; '\\|' is a literal bar inside a cell."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [plain_inline(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", inner)]


_STEP_NUMBER = re.compile(r"^(?:step\s+\d+\s*[:.)\-–—]|\d+[.)])\s+(?=\S)", re.IGNORECASE)


def unnumbered(heading: str) -> str:
    """A step's heading shown apart from its procedure, without the number that placed it there
    ('Step 4: Check for blocked ports' → 'Check for blocked ports', '2. Lubricate the leadscrew'
    → 'Lubricate the leadscrew'); other headings as they are."""
    return _STEP_NUMBER.sub("", heading, count=1)


@lru_cache(maxsize=1 << 15)
def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading (before de-duplication).

    Lower-case the rendered text, drop everything but letters, digits, spaces, hyphens and
    underscores, then turn each space into a hyphen. Unicode letters (e.g. CJK) are kept.
    """
    text = plain_inline(heading).lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in ("L", "N") or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


class SlugCounter:
    """De-duplicates anchors within one document the way GitHub does (``x``, ``x-1``, ``x-2``)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def __call__(self, heading: str) -> str:
        base = github_slug(heading)
        n = self._seen.get(base)
        if n is None:
            self._seen[base] = 0
            return base
        while True:
            n += 1
            candidate = f"{base}-{n}"
            if candidate not in self._seen:
                self._seen[base] = n
                self._seen[candidate] = 0
                return candidate


@dataclass(frozen=True)
class Section:
    """One heading-level chunk of a Markdown document.

    ``anchor`` is '' for text before the first heading; ``path`` is the chain of headings above it.
    ``line`` is the 1-based line of the heading within the body.
    """

    anchor: str
    heading: str
    level: int
    path: tuple[str, ...]
    text: str
    line: int


def code_lines(lines: list[str]) -> Iterator[tuple[int, str, bool]]:
    """(index, line, inside a fenced code block) for every line; fence lines count as code."""
    fence = ""  # the opening fence while inside a code block
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence:
            # only a fence of the same character, at least as long, with nothing after it closes
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and not line[m.end() :].strip()
            ):
                fence = ""
            yield i, line, True
            continue
        # ``` with a ` in the info string is inline code, not a fence
        if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
            fence = m.group(1)
            yield i, line, True
            continue
        yield i, line, False


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, else None."""
    m = _HEADING.match(line)
    return (len(m.group(1)), m.group(2)) if m else None


def iter_headings(body: str):
    """Yield (line_index, level, heading_text) for ATX headings outside code fences. Only a line
    with a '#' among its first four characters can be one; a body without a fence has no code."""
    lines = body.split("\n")
    fenced = "```" in body or "~~~" in body
    for i, line, code in code_lines(lines) if fenced else zip(range(len(lines)), lines, repeat(False)):
        h = None if code or "#" not in line[:4] else heading(line)
        if h:
            yield i, h[0], h[1]


def split_sections(body: str) -> list[Section]:
    """Split a Markdown body into heading-level sections with GitHub anchors."""
    lines = body.split("\n")
    slug = SlugCounter()
    marks = [(i, level, text, slug(text)) for i, level, text in iter_headings(body)]
    sections: list[Section] = []
    first = marks[0][0] if marks else len(lines)
    lead = "\n".join(lines[:first]).strip()
    if lead:
        sections.append(Section("", "", 0, (), lead, 1))
    stack: list[tuple[int, str]] = []
    for n, (i, level, text, anchor) in enumerate(marks):
        end = marks[n + 1][0] if n + 1 < len(marks) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        heading = plain_inline(text)
        stack.append((level, heading))
        sections.append(
            Section(
                anchor,
                heading,
                level,
                tuple(h for _, h in stack),
                "\n".join(lines[i + 1 : end]).strip(),
                i + 1,
            )
        )
    return sections


def anchors(body: str) -> set[str]:
    """Every heading anchor in a Markdown body."""
    slug = SlugCounter()
    return {slug(text) for _, _, text in iter_headings(body)}


# A sentence ends at . ! ? (plus closing quotes/brackets) before white space and a capital or digit,
# or at a CJK full stop, which needs no space after it. Group 1 is the end of the sentence.
_SENT_END = (
    r"([.!?][\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9\u4e00-\u9fff\u3040-\u30ff])"
    r"|([。！？][\"'”’)\]」』]*)\s*(?=\S)"
)


@lru_cache(maxsize=1)
def _sent_end() -> re.Pattern:
    """Compiled on first use: its character classes take milliseconds to build, and a lookup
    that never splits sentences should not pay for them."""
    return re.compile(_SENT_END)


_SPACES = re.compile(r"\s+")
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|approx|Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|Prof|No|Fig|U\.S)\.|\b[A-Z]\.)$"
)
# Every abbreviation ends in '.' and is at most 7 characters: its match lies in the last 8, with
# the character before it that decides its word boundary.
_ABBREV_SPAN = 8


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; conservative around abbreviations and decimals."""
    return list(_sentences(text))


# a paragraph is split by the librarian, the timeline and coverage alike: room for every paragraph
# of a 10,000-document KB (30,000), which a quarter of that evicted between those readings
@lru_cache(maxsize=1 << 16)
def _sentences(text: str) -> tuple[str, ...]:
    text = _SPACES.sub(" ", text).strip()
    if not text:
        return ()
    out: list[str] = []
    start = 0
    for m in _sent_end().finditer(text):
        candidate = text[start : m.end(1) if m.group(1) else m.end(2)].strip()
        if candidate.endswith(".") and _ABBREV.search(candidate[-_ABBREV_SPAN:]):
            continue
        if candidate:
            out.append(candidate)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return tuple(out)


_NUMBER_UNIT = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)(?:\s*(%|°\s?[CF]|[a-zA-Zµ]+(?:/[a-zA-Z]+)?))?")


def word_matches(text: str) -> Iterator[re.Match]:
    """The words ``words`` reads, as written and with their places ('Z-Axis' is 'Z' and 'Axis')."""
    return WORD.finditer(text)


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and not w.isdigit() and len(w) > 1}


def numbers_with_units(text: str) -> set[str]:
    """Numbers (with their unit where one follows) as normalised strings, e.g. {'4.0 l', '15 %'}.

    Only the number itself is required to match elsewhere; the unit is kept for contradiction checks.
    """
    found = set()
    for m in _NUMBER_UNIT.finditer(text):
        num = m.group(1).replace(",", ".")
        found.add(num)
    return found
