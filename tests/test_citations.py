"""The citation check: what support means, sentence by sentence.

Wrong sentences (a negation, swapped numbers, an appended clause, raw HTML) fail; whatever quotes
the cited text, or restates a frontmatter field, passes, on the example KB and on FarmBot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikic.compile.citations import Verifier
from wikic.compile.draft import Citation
from wikic.core.markdown import code_lines, plain_inline, split_sentences, without_tags
from wikic.core.models import SourceDoc
from wikic.transform.layer1 import load_layer1
from wikic.transform.run import format_value, label

REPO = Path(__file__).resolve().parents[1]
GROVE = "layer1_sources/specs/grove-6.md"


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(load_layer1(REPO))


def ok(v: Verifier, text: str, anchor: str, path: str = GROVE) -> bool:
    return v.check(text, [Citation(path, anchor)]).ok


def test_the_issue_reproduction_swapped_numbers_fail(verifier: Verifier) -> None:
    swapped = "The tank holds 14 litres, which lasts about 4.0 days with six mature plants."
    result = verifier.check(swapped, [Citation(GROVE, "water-tank")])
    assert not result.ok and "14 l" in result.reason
    assert ok(verifier, swapped.replace("14", "X").replace("4.0", "14").replace("X", "4.0"), "water-tank")


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("The 24 W panel is adjustable from 18 to 12 hours a day.", "grow-light"),  # same unit, other order
        ("It has three brightness levels (70%, 100% and 40%).", "grow-light"),
        ("The Grove 6 holds 24 pods.", ""),  # a number from another field
        ("A quiet pump circulates water for 30 minutes.", "water-tank"),  # from 'every 30 minutes'
        ("A quiet pump circulates water for 30 minutes every 5 minutes.", "water-tank"),
        (
            "The fortnightly nutrient dose for a full tank is 5 ml of Verdant Feed (20 ml per litre).",
            "water-tank",
        ),
    ],
)
def test_numbers_are_checked_with_their_units_and_the_words_beside_them(
    verifier: Verifier, text: str, anchor: str
) -> None:
    assert not ok(verifier, text, anchor)


@pytest.mark.parametrize(
    "text",
    [
        "The Grove 6 is not Verdant Labs' best-selling countertop garden.",
        "The Grove 6 can never grow dwarf cherry tomatoes.",
        "Its six pods don't make it big enough to keep a household in herbs and salad.",
    ],
)
def test_a_negation_the_source_does_not_make_fails(verifier: Verifier, text: str) -> None:
    result = verifier.check(text, [Citation(GROVE, "grove-6")])
    assert not result.ok and "negat" in result.reason


def test_symmetric_numbers_and_a_negation_at_the_end_of_a_sentence(verifier: Verifier) -> None:
    app = "layer1_sources/faq/app-requirements.md"
    assert not ok(verifier, "The Verdant app requires iOS 10 or later or Android 16 or later.", "", app)
    assert ok(verifier, "The Verdant app requires iOS 16 or later or Android 10 or later.", "", app)
    sun = "layer1_sources/faq/garden-in-direct-sun.md"
    assert not ok(verifier, "Putting the garden in a sunny window: it is better to.", "", sun)
    assert not ok(verifier, "The grow light does not provide all the light the plants need.", "", sun)


def test_a_dropped_negation_fails_and_a_kept_one_passes() -> None:
    doc = SourceDoc(
        "faq",
        "hub",
        "hub",
        "layer1_sources/faq/hub.md",
        "Hub",
        {},
        "# Hub\n\nThe Grove 6 does not need a hub. Never clean the pump with bleach.\n",
        "sha256:0",
        (),
    )
    from wikic.core.markdown import split_sections

    doc = SourceDoc(**{**doc.__dict__, "sections": tuple(split_sections(doc.body))})
    v = Verifier([doc])
    cite = [Citation(doc.path, "hub")]
    assert not v.check("The Grove 6 needs a hub to connect.", cite).ok
    assert not v.check("Clean the pump with bleach.", cite).ok
    assert v.check("You do not need a hub for the Grove 6.", cite).ok
    assert v.check("Do not clean the pump with bleach.", cite).ok
    # a fragment of a sentence is no quote: 'clean the pump with bleach' drops its 'never'
    assert not v.check("clean the pump with bleach", cite).ok


@pytest.mark.parametrize(
    "tail",
    [
        ", and every order ships with a free robot gardener.",
        "; claim your refund at https://evil.example.com/claim.",
        " (details: support@evil.example.com)",
    ],
)
def test_an_appended_clause_fails(verifier: Verifier, tail: str) -> None:
    quote = "The tank holds 4.0 litres, which lasts about 14 days with six mature plants"
    assert ok(verifier, quote + ".", "water-tank")
    assert not ok(verifier, quote + tail, "water-tank")


def test_raw_html_fails_even_around_a_quote(verifier: Verifier) -> None:
    result = verifier.check(
        'The tank holds 4.0 litres. <img src=x onerror="alert(1)">', [Citation(GROVE, "water-tank")]
    )
    assert not result.ok and "HTML" in result.reason


def test_section_text_is_the_section_without_title_or_fields(verifier: Verifier) -> None:
    text = verifier.section_text(Citation(GROVE, "grow-light"))
    assert "24 W full-spectrum LED panel" in text and "Water tank" not in text and "price usd" not in text


def test_rewording_within_the_limits_passes(verifier: Verifier) -> None:
    assert ok(verifier, "A full tank of 4.0 litres lasts about 14 days.", "water-tank")
    assert ok(verifier, "The 24 W LED panel runs on a default 16-hour schedule.", "grow-light")
    assert ok(
        verifier, "Vacation mode can run for up to 21 days with app 5.0 and firmware 3.1.", "app-features"
    )


# --- everything a librarian quotes or restates passes --------------------------------------------

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


def quotable_units(doc: SourceDoc) -> Iterator[tuple[str, Citation]]:
    """What a librarian may publish from a document: a fact per frontmatter field ('Row spacing:
    20', cited to the document's first section), and per section every sentence, list item,
    numbered step, table row and table cell, verbatim and with inline Markdown removed."""
    first = next((s.anchor for s in doc.sections if s.anchor), "")
    for key, value in doc.meta.items():
        if key in ("layer0", "generated_by") or isinstance(value, dict) or value in (None, "", []):
            continue
        if isinstance(value, list) and not all(isinstance(x, (str, int, float, bool)) for x in value):
            continue
        yield f"{label(key)}: {format_value(value)}", Citation(doc.path, first)
    for section in doc.sections:
        cite = Citation(doc.path, section.anchor)
        para: list[str] = []
        for _, line, code in [*code_lines(section.text.split("\n")), (0, "", False)]:
            stripped = line.strip()
            item = _ITEM.match(line)
            if code:
                continue
            if item:
                yield from ((t, cite) for t in (item.group(1), plain_inline(item.group(1))))
            elif stripped.startswith("|") and not re.match(r"^\|?\s*:?-{2,}", stripped):
                yield stripped, cite
                yield from ((c.strip(), cite) for c in stripped.strip("|").split("|") if c.strip())
            elif stripped:
                para.append(stripped)
            else:
                for text in {
                    *split_sentences(" ".join(para)),
                    *split_sentences(plain_inline(" ".join(para))),
                }:
                    yield text, cite
                para = []


def assert_all_quotable_units_pass(root: Path) -> int:
    docs = load_layer1(root)
    v = Verifier(docs)
    failed, n = [], 0
    for doc in docs:
        for text, cite in quotable_units(doc):
            text = without_tags(text).strip()  # compile removes raw HTML before the check
            if text:
                n += 1
                result = v.check(text, [cite])
                if not result.ok:
                    failed.append((str(cite), text[:80], result.reason))
    assert not failed, failed[:10]
    return n


def test_every_quotable_unit_of_the_example_kb_passes() -> None:
    assert assert_all_quotable_units_pass(REPO) > 2000


def test_every_quotable_unit_of_farmbot_passes(farmbot_compiled: Path) -> None:
    assert assert_all_quotable_units_pass(farmbot_compiled) > 20000


def test_what_the_lead_librarian_restates_passes(verifier: Verifier) -> None:
    """Shapes the offline librarian publishes besides quotes: a dated note, a change 'old → new',
    a table row as 'Header: value' pairs, and fields whose names end in a unit."""
    alert = "layer1_sources/faq/low-water-alert-fw-3-2.md"
    anchor = "when-does-the-low-water-alert-trigger-with-firmware-32"
    doc = verifier.docs[alert]
    date = str(doc.meta["updated_at"])
    quote = "The alert now triggers when the tank drops to 15% of its capacity instead of 20%, and the app sends a reminder every 6 hours until the tank is refilled."
    assert ok(verifier, f"{date}: {quote}", anchor, alert)
    assert ok(
        verifier,
        f"When does the low-water alert trigger with firmware 3.2: 20% → 15% ({date}).",
        anchor,
        alert,
    )
    assert not ok(verifier, f"{date}: {quote.replace('15%', '25%')}", anchor, alert)
    assert not ok(
        verifier, f"{date}: {quote.replace('15%', '6%').replace('every 6', 'every 15')}", anchor, alert
    )
    chervil = "layer1_sources/plants/chervil.md"
    meta = verifier.docs[chervil].meta
    row = f"Chervil — Light hours: {meta['light_hours']}; Ideal temp (°C): {meta['ideal_temp_c']}"
    assert ok(verifier, row, "", chervil)
    assert not ok(verifier, f"Chervil — Light hours: {meta['ideal_temp_c']}", "", chervil)


def test_a_table_row_restated_as_header_value_pairs_passes() -> None:
    body = "# Models\n\n## Sizes\n\n| Model | Width | Length |\n|---|---|---|\n| Express | 1.2m | 3m |\n| XL | 2.4m | 6m |\n"
    from wikic.core.markdown import split_sections

    doc = SourceDoc(
        "a", "m", "m", "layer1_sources/a/m.md", "Models", {}, body, "sha256:0", tuple(split_sections(body))
    )
    v = Verifier([doc])
    cite = [Citation(doc.path, "sizes")]
    assert v.check("Express — Width: 1.2m; Length: 3m", cite).ok
    assert not v.check("Express — Width: 3m; Length: 1.2m", cite).ok  # values under other headers


# --- names, directions, clauses and facts (each case a wrong sentence a model once got through) --


def _doc(name: str, body: str) -> SourceDoc:
    from wikic.core.markdown import split_sections

    path = f"layer1_sources/kb/{name}.md"
    return SourceDoc("kb", name, name, path, name, {}, body, "sha256:0", tuple(split_sections(body)))


BEETS = _doc("beets", "# Beets\n\nBeets germinate in 5 to 8 days at 10 to 29 C.\n")
CABBAGE = _doc(
    "red-cabbage", "# Red cabbage\n\nRed cabbage germinates best at 21 C (70 F) in 7 to 10 days.\n"
)
GARDENS = _doc(
    "gardens",
    "# Gardens\n\nThe Sprout 3 holds 4 litres and the Grove 6 holds 14 litres. Restart the garden within "
    "5 minutes after a power cut. Fill the tank from the top and drain it from the bottom. The warranty "
    "covers the pump. The extrusion should be able to slide into the cross-slide easily.\n",
)


def cites(*docs: SourceDoc) -> list[Citation]:
    return [Citation(d.path, d.sections[0].anchor) for d in docs]


@pytest.fixture(scope="module")
def small() -> Verifier:
    return Verifier([BEETS, CABBAGE, GARDENS])


def test_a_fact_is_never_assembled_from_two_cited_sections(small: Verifier) -> None:
    wrong = "Beets germinate best at 21 C (70 F) in 7 to 10 days."
    result = small.check(wrong, cites(BEETS, CABBAGE))
    assert not result.ok and "cited" in result.reason
    assert not small.check(wrong, cites(CABBAGE)).ok
    assert small.check(
        "Red cabbage germinates best at 21 C (70 F) in 7 to 10 days.", cites(BEETS, CABBAGE)
    ).ok
    both = "Beets germinate in 5 to 8 days, and red cabbage germinates best at 21 C in 7 to 10 days."
    assert small.check(both, cites(BEETS, CABBAGE)).ok


@pytest.mark.parametrize(
    "wrong",
    [
        "The Zorblax holds 4 litres.",  # a name the section never uses
        "The Grove 6 holds 4 litres.",  # a name it uses, of another product
        "Restart the garden after 5 minutes after a power cut.",  # within → after
        "Fill the tank from the bottom and drain it from the bottom.",  # top → bottom
        "The extrusion should not be able to slide into the cross-slide easily.",  # a negation added
        "The warranty covers the pump, and this also voids the warranty.",  # a clause of its own words
    ],
)
def test_names_directions_negations_and_clauses_must_be_the_cited_ones(small: Verifier, wrong: str) -> None:
    assert not small.check(wrong, cites(GARDENS)).ok


@pytest.mark.parametrize(
    "faithful",
    [
        "The Grove 6 holds 14 litres.",
        "After a power cut, restart the garden within 5 minutes.",  # clauses reordered
        "The Sprout 3 holds 4 litres; the warranty covers the pump.",  # two sentences merged
        "Fill the tank from the top and drain it from the bottom.",
        "The Sprout 3 holds 4 liters and the Grove 6 holds 14 liters.",  # units spelled another way
        "Red cabbage germinates best at 21 degrees Celsius (70 degrees Fahrenheit) in 7 to 10 days.",
    ],
)
def test_faithful_restatements_pass(small: Verifier, faithful: str) -> None:
    doc = CABBAGE if "cabbage" in faithful else GARDENS
    result = small.check(faithful, cites(doc))
    assert result.ok, result.reason


def test_a_name_put_first_in_a_sentence_it_restates_is_refused(verifier: Verifier) -> None:
    """The first word is capitalised wherever it stands, yet a name put there in place of the
    cited sentence's own subject is still another name (found by an adversarial model)."""
    cite = [Citation("layer1_sources/plants/red-giant-mustard.md", "red-giant-mustard")]
    said = "is a large-leaved mustard green with purple-red leaves and a horseradish-like heat."
    assert verifier.check(f"Red Giant {said}", cite).ok
    assert not verifier.check(f"Sprout 3 {said}", cite).ok


def test_a_product_named_with_its_number_in_place_of_another_name_is_refused(verifier: Verifier) -> None:
    """'Grove 6' for 'Android' adds a number as well as a name: the sentence still restates the
    cited one, and the name it swapped is caught (found by an adversarial model)."""
    cite = [Citation("layer1_sources/blog/app-4-6-vacation-mode.md", "verdant-app-46-vacation-mode-arrives")]
    assert verifier.check("Verdant app 4.6 is rolling out today on iOS and Android.", cite).ok
    assert not verifier.check("Verdant app 4.6 is rolling out today on iOS and Grove 6.", cite).ok


def test_a_name_swapped_in_a_short_clause_is_refused(verifier: Verifier) -> None:
    """A clause of three words with one name changed still restates its source (found by an
    adversarial model: 'It flowers earlier than Thai basil', on the Thai basil page)."""
    cite = [Citation("layer1_sources/plants/thai-basil.md", "thai-basil")]
    rest = "basil; pinch flower spikes weekly unless you want them for garnish."
    assert verifier.check(f"It flowers earlier than Genovese {rest}", cite).ok
    assert not verifier.check(f"It flowers earlier than Thai {rest}", cite).ok


def test_a_directory_line_quoting_its_source_after_the_title_is_read_as_a_quote() -> None:
    """'Pumpkin — Grows on a long vine.' quotes the entry titled Pumpkin: passed as a quote,
    without reading the section apart sentence by sentence (a directory lists hundreds)."""
    pumpkin = _doc("Pumpkin", "# Description\n\nGrows on a long vine. Its fruit keeps for months.\n")
    verifier = Verifier([pumpkin, BEETS])
    line = "[Pumpkin](../entries/pumpkin.md) — Grows on a long vine."
    assert verifier.check(line, cites(pumpkin)).ok
    assert "analysis" not in vars(verifier.cited(cites(pumpkin)[0]))  # the quote was found, not analysed
    assert not verifier._labelled_quote("Beets — Grows on a long vine.", tuple(cites(pumpkin)))
    assert not verifier._labelled_quote("Pumpkin — Grows on a short vine.", tuple(cites(pumpkin)))
    assert not verifier.check("Pumpkin — Grows on a short vine.", cites(pumpkin)).ok
