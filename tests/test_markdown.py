"""GitHub heading anchors, section splitting and sentence splitting."""

from __future__ import annotations

import pytest

from wikic.core.markdown import (
    anchors,
    github_slug,
    iter_headings,
    plain_inline,
    split_sections,
    split_sentences,
)


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Hello World", "hello-world"),
        ("How long does the tank last?", "how-long-does-the-tank-last"),
        ("Step 2. Write FarmBot OS onto the microSD card", "step-2-write-farmbot-os-onto-the-microsd-card"),
        ("C++ & C#: a comparison!", "c--c-a-comparison"),
        ("  Leading and trailing  ", "leading-and-trailing"),
        ("Multiple   spaces", "multiple---spaces"),
        ("snake_case and kebab-case", "snake_case-and-kebab-case"),
        ("**Bold** and `code` and [link](http://x.y)", "bold-and-code-and-link"),
        ("Grüße aus Köln", "grüße-aus-köln"),
        ("水やりの頻度", "水やりの頻度"),
        ("中文 标题 2", "中文-标题-2"),
        ("Émoji 🌱 plants", "émoji--plants"),
        ("100% (approx.) — 5 °C", "100-approx--5-c"),
        ("v1.2.3 release", "v123-release"),
        ("<span>HTML</span> heading", "html-heading"),
    ],
)
def test_github_slug(heading, slug):
    assert github_slug(heading) == slug


def test_duplicate_headings_get_numbered_anchors():
    body = "# x\n\n## x\n\n### x\n\n## x-1\n\n## y\n"
    assert [s.anchor for s in split_sections(body)] == ["x", "x-1", "x-2", "x-1-1", "y"]
    assert anchors(body) == {"x", "x-1", "x-2", "x-1-1", "y"}


def test_sections_split_by_heading_with_paths_and_lines():
    body = "Lead text.\n\n# Title\n\nIntro.\n\n## Part A\n\nA text.\n\n### Deep\n\nDeep text.\n\n## Part B\n\nB text."
    sections = split_sections(body)
    assert [(s.anchor, s.level, s.line) for s in sections] == [
        ("", 0, 1),
        ("title", 1, 3),
        ("part-a", 2, 7),
        ("deep", 3, 11),
        ("part-b", 2, 15),
    ]
    assert sections[0].text == "Lead text."
    assert sections[3].path == ("Title", "Part A", "Deep")
    assert sections[4].path == ("Title", "Part B")
    assert sections[2].text == "A text."


def test_headings_inside_code_fences_are_not_sections():
    body = (
        "# Real\n\n```bash\n# not a heading\necho hi\n```\n\n~~~\n## also not\n~~~\n\n"
        "````md\n```\n# nested fence text\n```\n````\n\n## After"
    )
    assert [s.anchor for s in split_sections(body)] == ["real", "after"]
    real = split_sections(body)[0]
    assert "# not a heading" in real.text and "# nested fence text" in real.text


def test_indented_code_fence_and_hash_without_space():
    body = "#NoSpace\n\n  ```\n# inside\n  ```\n\n####### seven\n\n###### six"
    assert [text for _, _, text in iter_headings(body)] == ["six"]


def test_closing_hashes_and_hash_in_text():
    body = "## Ends with hashes ##\n\n## C#\n\n## F# and C# ###\n\n   ### Indented"
    assert [text for _, _, text in iter_headings(body)] == ["Ends with hashes", "C#", "F# and C#", "Indented"]
    assert [s.anchor for s in split_sections(body)] == ["ends-with-hashes", "c", "f-and-c", "indented"]


def test_unclosed_fence_hides_the_rest():
    assert [s.anchor for s in split_sections("# a\n\n```\n# b\n")] == ["a"]


def test_empty_body():
    assert split_sections("") == []
    assert split_sentences("   ") == []


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four.", ["One.", "Two!", "Three?", "Four."]),
        ("The tank holds 4.5 l. Refill weekly.", ["The tank holds 4.5 l.", "Refill weekly."]),
        ("Use e.g. tap water. It works.", ["Use e.g. tap water.", "It works."]),
        ("Dr. Smith said so. Fine.", ["Dr. Smith said so.", "Fine."]),
        ("St. John's Wort blooms. Remove berries.", ["St. John's Wort blooms.", "Remove berries."]),
        ("See Fig. 3 for details. Next.", ["See Fig. 3 for details.", "Next."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Lower case after stop. still same.", ["Lower case after stop. still same."]),
        ("Line\nbreaks are  spaces. Yes.", ["Line breaks are spaces.", "Yes."]),
        ("水をやる。毎日です。", ["水をやる。", "毎日です。"]),
        ("Mix 1:2. 3 parts total.", ["Mix 1:2.", "3 parts total."]),
        ("No terminal punctuation", ["No terminal punctuation"]),
        ("Costs approx. 5 euros. Done.", ["Costs approx. 5 euros.", "Done."]),
        # an abbreviation inside a longer word ends a sentence: its boundary is read too
        ("Add Soapprox. Then rinse.", ["Add Soapprox.", "Then rinse."]),
        ("Ask Dr. Then wait.", ["Ask Dr. Then wait."]),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_a_tilde_before_a_number_means_about_and_stays() -> None:
    """'~$1,800' in a costs table is about $1,800; shown as '$1,800' it became a price. Strikethrough
    marks ('~~old~~', '~old~') still go."""
    assert plain_inline("~$1,800") == "~$1,800"
    assert plain_inline("about ~20 minutes") == "about ~20 minutes"
    assert plain_inline("~~old~~ new") == "old new"
    assert plain_inline("~old~ new") == "old new"


def test_an_italic_line_under_an_image_is_its_caption() -> None:
    """'_Farmduino Express LEDs on Express kits_' under '![LEDs on Farmduino express board](…)'
    stood alone as 'Other mentions' of the Express, and 'Raspberry Pi Zero W, included with
    Express kits' under a photo made a false 'Sources differ': an italic line under a line of
    images only, or repeating an image's text, is a caption; an italic line under prose is not."""
    from wikic.core.markdown import is_caption

    image = "![LEDs on Farmduino express board](_images/leds.jpg)"
    assert is_caption("_Farmduino Express LEDs on Express kits_", image)
    assert is_caption("*Raspberry Pi Zero W, included with Express kits*", f"{image} ![Pi](pi.jpg)")
    assert is_caption("_Box LEDs_", "See the box: ![Box LEDs](box.jpg)")
    assert not is_caption("_Drain the water before the first frost._", "Winter needs care.")
    assert not is_caption("_Not a caption_", "Text with ![an image](x.jpg) inside it.")
    assert not is_caption("Plain line", image)


def test_an_image_and_its_caption_state_nothing_that_can_disagree() -> None:
    """'Raspberry Pi Zero W, included with Express kits' (a photo's caption) and '![MicroSD card
    slot on the Raspberry Pi Zero W](…)' were read as statements, and stood against the v1.1 kit's
    'Raspberry Pi Zero 2 W' as 'Sources differ' on four pages: an image and its caption are no
    sentences of a document's; the prose beside them is."""
    from wikic.compile.timeline import sentences_of
    from wikic.core.models import SourceDoc

    body = (
        "# LEDs\n\n![Pi board](pi.jpg)\n\n_Raspberry Pi Zero W, included with Express kits_\n\n"
        "The card slot is on the front. ![MicroSD card slot on the Raspberry Pi Zero W](slot.jpeg)\n"
    )
    doc = SourceDoc(
        "a", "1", "1", "layer1_sources/a/1.md", "LEDs", {}, body, "x", tuple(split_sections(body))
    )
    assert [s for _, s in sentences_of(doc)] == ["The card slot is on the front."]
