"""Pages an editor would write (issue 10): a cited lead on every page, no sentence twice on a page,
a link graph, time made visible, and an index that fits its token budget.

The example KB's committed wiki is read as it is (``test_compile`` holds it equal to what compile
produces); FarmBot is compiled once per session from the corpus served on loopback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from wikiasserts import _is_navigation, body_lines, front_matter, pages

from wikic.compile.draft import LINKED_FROM, Block, Citation, Sentence, parse_citations, strip_citations
from wikic.compile.finish import merge_repeats
from wikic.compile.index import (
    KEYWORDS,
    SUMMARY_CHARS,
    Entry,
    clean_entry,
    estimate_tokens,
    render_index,
    source_counts,
)
from wikic.compile.librarian.extract import denied, keywords
from wikic.compile.searchindex.chunks import read_index_entries
from wikic.core.markdown import plain_inline

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#]*)(?:#[^)]*)?\)")


def content_pages(root: Path) -> dict[str, str]:
    return {p: t for p, t in pages(root).items() if not p.startswith("wiki/index")}


def lead(text: str) -> list[str]:
    """The lines between a page's title and its first section: up to a comparison's table or a
    glossary's list, unless an about line follows the list (a topic's namesake opens with its
    overview, a list included, then says what the page holds)."""
    body = body_lines(text)
    start = next(i for i, line in enumerate(body) if line.startswith("# ")) + 1
    out = []
    for line in body[start:]:
        if line.startswith(("## ", "|")):
            break
        if line.strip():
            out.append(line)
    listed = next((n for n, x in enumerate(out) if x.startswith("- ")), len(out))
    if not any(ABOUT.match(x) and "layer1_sources" not in x for x in out[listed:]):
        out = out[:listed]
    return out


def statements(text: str) -> list[str]:
    """The cited prose lines of a page, citations removed (table rows and link lines aside)."""
    out = []
    for line in body_lines(text):
        s = line.strip().removeprefix("- ").removeprefix("> ")
        if not s or s.startswith(("#", "|")) or _is_navigation(s) or "layer1_sources" not in s:
            continue
        out.append(" ".join(strip_citations(s).split()))
    return out


def page_links(root: Path, page: str, text: str) -> set[str]:
    """The wiki pages ``page`` links to (itself and layer-1 sources aside)."""
    out = set()
    for href in LINK.findall(text):
        if not href or "layer1_sources" in href or "://" in href:
            continue
        target = (root / page).parent.joinpath(href).resolve().relative_to(root.resolve()).as_posix()
        if target != page:
            out.add(target)
    return out


@pytest.fixture(params=["example", "farmbot"])
def wiki(request: pytest.FixtureRequest) -> Path:
    return REPO if request.param == "example" else request.getfixturevalue("farmbot_compiled")


ABOUT = re.compile(r"^\*[^*].*\*$")  # what the page is, in the schema's or the plan's words


def test_every_page_opens_with_a_cited_lead_or_says_what_it_is(wiki: Path) -> None:
    """Entity pages open with a cited sentence about the entity (or their record's description,
    whole; one whose record has only fields, with where the plan files it); guides, comparisons, topics and directories with what they
    cover (a purpose or contents line, in italics, not cited)."""
    kinds = {p: front_matter(t)["type"] for p, t in content_pages(wiki).items()}
    for path, text in content_pages(wiki).items():
        opening = lead(text)
        assert opening, f"{path} has no lead"
        at = next((i for i, x in enumerate(opening) if ABOUT.match(x) and "layer1_sources" not in x), 0)
        if kinds[path] == "topic" and at:  # its namesake's overview opens it, whole, then what it covers
            assert len({c.path for x in opening[:at] for c in parse_citations(x, path)}) == 1, opening
            opening = opening[at:]
        about = [line for line in opening[:1] if ABOUT.match(line) and "layer1_sources" not in line]
        if kinds[path] in ("guide", "comparison", "topic", "directory"):
            assert about, f"{path} does not say what it covers: {opening[:1]}"
        cited = opening[len(about) :]
        assert all(parse_citations(line, path) for line in cited), f"{path}: {opening}"
        assert about or cited, path
        sentences = sum(max(1, len(re.findall(r"[.!?](?:\s|$)", strip_citations(x)))) for x in cited)
        sections = {(c.path, c.anchor) for line in cited for c in parse_citations(line, path)}
        if kinds[path] == "entity" and len(sections) == 1:
            continue  # an entry opens with its record's description, whole: one section, not a collage
        assert sentences <= 3, path


def test_no_sentence_is_stated_twice_on_a_page(wiki: Path) -> None:
    """Once in the body, from one source; the lead may quote it (a lead quotes, it never cuts), two
    entries whose sources say the same words each keep them, citing their own source, a list
    is quoted whole even when another list says one of its items too, a section that is all
    repeats keeps them (its heading stays where links to it land), and a repeat the next sentence
    refers back to stays ('This white LED … It is connected to pin 13.'), and a source that says
    it again under another of its headings keeps it there ('Corrective Action: See Code 1' under
    each code)."""
    for path, text in content_pages(wiki).items():
        lines = body_lines(text)
        start = next(i for i, line in enumerate(lines) if line.startswith("## ")) if "\n## " in text else 0
        seen: set = set()
        twice = []
        for section in _sections(lines[start:]):
            said = [
                (statement, frozenset((c.path, c.anchor) for c in parse_citations(line, path)))
                for line in section
                if not re.match(r"^(?:- |\d+\. )", line)
                for statement in statements("\n---\n" + line)
            ]
            if said and all(s in seen for s in said):
                continue
            for n, s in enumerate(said):
                after = said[n + 1][0] if n + 1 < len(said) else ""
                if s in seen and not _REFERS_BACK.match(plain_inline(after)):
                    twice.append(s)
                seen.add(s)
        assert not twice, f"{path}: {twice[:3]}"


_REFERS_BACK = re.compile(
    r"^(?:it|its|it's|this|these|those|they|their|them|he|she|his|her)\b", re.IGNORECASE
)


def _sections(lines: list[str]) -> list[list[str]]:
    """The lines under each heading (a heading starts a new list)."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("#"):
            out.append([])
        else:
            out[-1].append(line)
    return out


def test_pages_link_to_each_other_and_not_only_through_the_index(wiki: Path) -> None:
    found = content_pages(wiki)
    heading = re.compile(r"\n## Linked from(?: \(the closest \d+ of \d+ pages\))?\n")
    out = {p: page_links(wiki, p, heading.split(t)[0]) & set(found) for p, t in found.items()}
    linked_from = {target for targets in out.values() for target in targets}
    assert sum(bool(v) for v in out.values()) >= 0.9 * len(found)
    assert len(linked_from & set(found)) >= 0.9 * len(found)
    assert not any("[[" in t for t in pages(wiki).values())  # no unresolved wiki links
    # every page that links here is linked from this one: under "Linked from", in "See also" or
    # in its text, unless "Linked from" holds its most (the closest first) and says so
    for page, text in found.items():
        parts = heading.split(text, maxsplit=1)
        linked_from = parts[1] if len(parts) > 1 else ""
        cut = "\n## Linked from (the closest" in text
        listed = page_links(wiki, page, text)
        assert len(page_links(wiki, page, linked_from)) <= (LINKED_FROM if cut else LINKED_FROM + 2)
        missing = {p for p, targets in out.items() if page in targets} - listed
        assert not missing or (cut and len(page_links(wiki, page, linked_from)) <= LINKED_FROM), (
            page,
            missing,
        )


def test_changes_page_lists_each_change_newest_first_with_both_sides_cited() -> None:
    text = (REPO / "wiki/changes.md").read_text("utf-8")
    changes = re.findall(r"^## (.+?): ", text, re.M)
    assert changes == ["20% → 15%", "30 days → 45 days → 60 days", "14 days → 21 days"]
    for section in text.split("\n## ")[1:4]:
        dated = re.findall(
            r"^- \*\*(\d{4}-\d\d-\d\d)\*\*: .+\[.+\]\(\.\./layer1_sources/.+\)$", section, re.M
        )
        assert len(dated) >= 2 and dated == sorted(dated, reverse=True)


def test_an_old_fact_is_never_stated_as_current_next_to_its_replacement() -> None:
    """Every older statement changes.md lists (vacation mode 'up to 14 days', the low-water alert
    at 20%, the 45-day return window) appears elsewhere only in a dated Superseded note."""
    text = (REPO / "wiki/changes.md").read_text("utf-8")
    old = []
    for section in text.split("\n## ")[1:4]:
        said = [
            strip_citations(s).strip()
            for s in re.findall(r"^- \*\*\d{4}-\d\d-\d\d\*\*: (.+)$", section, re.M)
        ]
        old += said[1:]  # the first is the current statement
    assert any("up to 14 days" in s for s in old) and any("20%" in s for s in old)
    for path, page in content_pages(REPO).items():
        if path == "wiki/changes.md":
            continue
        for line in body_lines(page):
            for sentence in old:
                if sentence in line:
                    assert re.match(r"> \*\*Superseded\*\* \(stated \d{4}-\d\d-\d\d; now ", line), (
                        path,
                        line,
                    )


def test_an_index_line_per_page_within_its_budget(wiki: Path) -> None:
    index = (wiki / "wiki/index.md").read_text("utf-8")
    assert estimate_tokens(index) <= 3000
    entries = read_index_entries(wiki)
    found = content_pages(wiki)
    assert {e.path for e in entries} == set(found)
    for e in entries:
        assert len(e.summary) <= SUMMARY_CHARS and len(e.keywords) <= KEYWORDS, e
        assert not re.search(r"\b(?:bom|v\d+(?:\.\d+)+)\b", e.title), e.title  # no raw folder names
        words = " ".join(front_matter(found[e.path]).get("title", "").split()).lower()
        page = found[e.path].lower() + words
        for k in e.keywords:
            assert re.fullmatch(r"[a-z0-9][a-z0-9 .+-]*", k) and not denied(k), (e.path, k)
            assert k in page, (e.path, k)


# The kinds of junk an index once carried: a fragment of an address, people's names and a thank-you
# from a comment thread, an accented typo, and offensive common names from a crop record.
JUNK = [
    '" in the poughkeepsie, new york area)',
    "chris, emi, réstep, thank",
    "redneck",
    "Hillbilly Tomato",
    "(see",
    "fuck",
]


def test_junk_never_becomes_an_index_keyword() -> None:
    entry = clean_entry(Entry("wiki/x.md", "topic", "X", "s" * 300, (*JUNK, "tomato", "row spacing")))
    assert entry.keywords == ("tomato", "row spacing") and len(entry.summary) <= SUMMARY_CHARS
    texts = [
        "Tomatoes",
        "Thank you Chris and Emi for the réstep photos taken in the Poughkeepsie, New York area.",
        "The Hillbilly tomato is also called redneck tomato; row spacing is 60 cm.",
        "Join the farmbot-xxxx network, then the farmbot-xxxx network again.",
    ]
    mined = keywords(texts, n=KEYWORDS)
    junk = ("chris", "emi", "thank", "poughkeepsie", "réstep", "xxxx")
    assert not any(denied(k) or k in junk for k in mined), mined
    assert "network" in mined
    basil = keywords(
        ["How to keep basil going all year", "People always cut it down; going strong, basil regrows."]
    )
    assert "basil" in basil and not {"going", "always", "people", "down", "year"} & set(basil), basil
    # a page's keywords are words it says more than once (or its title does): 'shame' and 'sulks',
    # once each in a post about basil, and 'six', a number, are nobody's search words
    post = [
        "Basil all year",
        "Pruning basil",
        "It is a shame when basil sulks in the cold; prune it after six weeks.",
        "Pruning doubles the harvest, and pruning keeps basil bushy for six months.",
    ]
    mined = keywords(post, n=20, said=2)
    assert {"basil", "pruning"} <= set(mined) and not {"shame", "sulks", "six"} & set(mined), mined
    assert "year" not in mined and "all" not in mined  # the title's words pass, generic words never


def test_check_reports_dead_end_and_index_only_pages(example_kb: Path) -> None:
    """A page whose links to other pages are removed is a dead end; a page no other page links
    to any more is reachable only from the index. Both are warnings, not errors."""
    from wikic.check.run import check

    target = "wiki/topics/algae.md"
    for page in (example_kb / "wiki").rglob("*.md"):
        rel = page.relative_to(example_kb).as_posix()
        if rel.startswith("wiki/index") or rel == "wiki/log.md":
            continue
        text = page.read_text("utf-8")
        if rel == target:  # keep its citations, drop its links to pages
            text = re.sub(r"\[([^\]]*)\]\((?![^)]*layer1_sources)[^)]*\)", r"\1", text)
            text = re.sub(r"\n## (See also|Linked from)\n(?:\n- .*)+", "", text)
        else:  # nothing links to it any more
            text = "\n".join(line for line in text.split("\n") if "algae.md" not in line)
        page.write_text(text, "utf-8")
    report = check(example_kb)
    warned = {(f.rule, f.path) for f in report.warnings}
    assert ("dead-end-page", target) in warned and ("index-only-page", target) in warned
    assert not [f for f in report.errors if f.path == target and f.rule != "stale-page"]


def test_a_first_mention_links_but_never_inside_brackets_links_or_code() -> None:
    from wikic.compile.draft import Navigation, _Linker
    from wikic.compile.links import key_of

    link = _Linker(Navigation(names=((key_of("photo"), "wiki/topics/photos.md"),)), "wiki/topics/x.md")
    for text in ("the “[take photo] - USB” error", "see [a photo](y.md)", "run `photo` now"):
        assert link(text) == text
    # a bare address: 'https://software.farm.bot/docs/[connecting-farmbot-to-the-internet](…)' broke it
    for text in ("see https://x.org/docs/photo-tips for more", "at www.x.org/photo now"):
        assert link(text) == text
    assert link("Take a photo now.") == "Take a [photo](photos.md) now."
    assert link("Another photo.") == "Another photo."  # the first mention in a section only


def test_a_name_inside_a_longer_capitalised_name_is_not_that_name() -> None:
    """'Raspberry Pi' is not the raspberry: it neither links to the crop nor counts as naming it
    (so the crop's entry is not 'Mentioned in' the Pi's set-up)."""
    from wikic.compile.links import Names, Target, key_of

    names = Names({key_of("Raspberry"): Target("crops.md"), key_of("Photos"): Target("app.md")})
    assert names.keys_in("Insert the card into the Raspberry Pi.") == set()
    assert names.keys_in("Raspberry Pi and raspberry jam.") == {key_of("raspberry")}
    assert names.keys_in("Open the Photos panel.") == {key_of("photos")}
    assert names.keys_in("We grow Raspberry. Pi day is later.") == {key_of("raspberry")}  # a new sentence
    assert [text[a:b] for text in ["Raspberry Pi, then Raspberry."] for a, b, _ in names.spans(text)] == [
        "Raspberry"
    ]


def test_a_one_word_name_in_a_longer_name_the_corpus_writes_is_not_that_name_however_written(
    farmbot_compiled: Path,
) -> None:
    """An LED table says 'Raspberry pi power / activity': the lower-case 'pi' hid the longer name,
    and the crop was linked. Documents that write 'Raspberry Pi' make it one name wherever it
    runs on, in any case; a pair written so by one document only is not one."""
    from wikic.compile.corpus import Corpus
    from wikic.compile.links import Names, Target, key_of
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    def doc(name: str, body: str) -> SourceDoc:
        path = f"layer1_sources/a/{name}.md"
        return SourceDoc("a", name, name, path, name, {}, body, "", tuple(split_sections(body)))

    docs = [
        doc("one", "# Set up\n\nFlash the card for the Raspberry Pi first.\n"),
        doc("two", "# Power\n\nThe Raspberry Pi needs 5 V. Our Jam Jars hold 300 g.\n"),
        doc("three", "# Jam\n\nRaspberry jam keeps a year.\n\n## Raspberry Canes\n"),
    ]
    compounds = Corpus(docs, {}).compounds
    assert compounds.get("raspberry") == frozenset({"pi"}) and "jam" not in compounds  # one document
    names = Names({key_of("Raspberry"): Target("crops.md")}, compounds=compounds)
    assert names.keys_in("| Raspberry pi power / activity |") == set()
    assert names.keys_in("raspberry pi zero") == set()
    assert names.keys_in("Raspberry jam and a raspberry pie.") == {key_of("raspberry")}
    leds = (farmbot_compiled / "wiki/topics/assembly.md").read_text("utf-8")  # the Express's LED table
    assert "Raspberry pi power" in leds and "[Raspberry](../entries/raspberry.md) pi" not in leds


def test_a_one_word_name_used_as_a_verb_is_not_that_name() -> None:
    from wikic.compile.links import Names, Target, key_of

    names = Names({key_of("Help"): Target("app.md"), key_of("Carrots"): Target("crops.md")})
    assert names.keys_in("It can help to view a photo.") == set()
    assert names.keys_in("We are happy to help you.") == set()
    assert names.keys_in("Open Help to read more.") == {key_of("help")}
    assert names.keys_in("Similar to carrots, they need loose soil.") == {key_of("carrots")}  # a noun
    assert names.keys_in("Go to Help.") == {key_of("help")}  # written as a name
    names = Names({key_of("Watercress"): Target("greens.md")})
    assert names.keys_in("A peppery taste similar to watercress.") == {key_of("watercress")}
    # a sentence, an item or a quotation that opens on the word, an object next, gives an order
    names = Names({key_of("Plant"): Target("plants.md"), key_of("Help"): Target("app.md")})
    assert names.keys_in('Give it a name such as "Plant one seed" and press SAVE.') == set()
    assert names.keys_in("Plant the seeds.") == names.keys_in("- Plant 2 seeds per pod.") == set()
    assert names.keys_in("Help is in the menu. Each Plant has a page.") == {key_of("help"), key_of("plant")}
    assert names.keys_in("| Cable carrier (Plant) | 1 |") == {key_of("plant")}  # no word follows it


def test_a_sub_index_line_names_the_series_it_lists() -> None:
    from wikic.compile.index import series_list

    titles = ["App 1: Controls to Plants", "App 2: Points to Weeds", "BOM", "Full-sun crops 1: A to B"]
    entries = [Entry(f"wiki/topics/{i}.md", "topic", t, "", ()) for i, t in enumerate(titles)]
    assert series_list(entries) == "App (2), BOM, Full-sun crops"
    assert series_list(entries, limit=10) == "App (2), BOM, …"
    # the numbered parts of a subject's page are that subject's series, not their topic's
    titles = ["Account: commands 1: Advanced (01) to Advanced (09)", "Account: commands 2: Basic to Move"]
    titles += ["Account: sign-in", "Account: wifi 1: A to B"]
    entries = [Entry(f"wiki/topics/{i}.md", "topic", t, "", ()) for i, t in enumerate(titles)]
    assert series_list(entries) == "Account: commands (2), Account, Account: wifi"


def test_an_index_line_does_not_repeat_the_title_it_follows() -> None:
    """'[Algae](topics/algae.md) — Algae: Green water? …' read the title twice on every topic line."""
    from wikic.compile.index import clean_entry

    line = clean_entry(Entry("wiki/topics/algae.md", "topic", "Algae", "Algae: Green water? A guide", ()))
    assert line.summary == "Green water? A guide"
    kept = clean_entry(Entry("wiki/topics/algae.md", "topic", "Algae", "Algae in tanks: a guide", ()))
    assert kept.summary == "Algae in tanks: a guide"  # a summary that only begins with the word


def test_a_line_a_source_repeats_under_each_of_its_headings_stays_under_each() -> None:
    """'Corrective Action: See Code 1' under Codes 2, 3 and 4 of one article: without it a code
    shows its symptom and no fix. The same words from another source are still merged."""
    codes = (
        Citation("layer1_sources/articles/codes.md", "code-2"),
        Citation("layer1_sources/articles/codes.md", "code-3"),
    )
    other = Citation("layer1_sources/articles/other.md", "fixes")
    line = "Corrective Action: See Code 1."
    blocks = [
        Block("heading", text="Code 2", level=3),
        Block("para", sentences=(Sentence(line, (codes[0],)),)),
        Block("heading", text="Code 3", level=3),
        Block(
            "para", sentences=(Sentence("Port 3002 is blocked.", (codes[1],)), Sentence(line, (codes[1],)))
        ),
        Block("heading", text="Fixes", level=3),
        Block("para", sentences=(Sentence("Reboot the bot.", (other,)), Sentence(line, (other,)))),
    ]
    said = [s for b in merge_repeats(blocks) for s in b.sentences if s.text == line]
    assert [s.cites for s in said] == [(codes[0], other), (codes[1],)]


def test_the_index_says_what_the_wiki_is_compiled_from() -> None:
    """An agent reading index.md first learns what the wiki covers: its sources and their sizes."""
    paths = ["layer1_sources/faq/a.md", "layer1_sources/faq/b.md", "layer1_sources/specs/x/y.md"]
    text = render_index([Entry("wiki/topics/a.md", "topic", "A", "About a.", ())], 3000, source_counts(paths))
    assert "Compiled from 3 source documents: faq (2), specs (1)." in text["wiki/index.md"]
    assert "Compiled from" in (REPO / "wiki" / "index.md").read_text("utf-8")


def test_the_index_opens_with_what_the_wiki_covers() -> None:
    """The index opened with how to read it ('Start here. Each line links one page …'); three
    readers asked what the wiki is about (review M). Its first line names the devices and counts
    the pages of each kind; without devices it counts the pages."""
    entries = [
        Entry("wiki/devices/a.md", "device", "Mowbot Mini", "x", ()),
        Entry("wiki/devices/b.md", "device", "Mowbot Max", "x", ()),
        Entry("wiki/guides/g.md", "guide", "Mowing", "x", ()),
        Entry("wiki/topics/t.md", "topic", "Blades", "x", ()),
        Entry("wiki/topics/u.md", "topic", "Batteries", "x", ()),
    ]
    first = render_index(entries, 3000)["wiki/index.md"].split("\n\n")[1]
    assert (
        first
        == "This wiki covers the Mowbot Max and Mowbot Mini: a page for each, 1 guide and 2 topic pages."
    )
    first = render_index(entries[2:], 3000)["wiki/index.md"].split("\n\n")[1]
    assert first == "This wiki holds 1 guide and 2 topic pages."
    example = (REPO / "wiki" / "index.md").read_text("utf-8").split("\n\n")[1]
    assert example.startswith(
        "This wiki covers the Canopy 12, Grove 6 and Sprout 3: a page for each, 4 guides"
    )


def test_a_sentence_a_list_said_first_is_a_repeat_in_prose_of_another_heading() -> None:
    """A list item said first, then the same words as prose under another heading of the source:
    the prose copy is the source's own again (kept), and nothing fails on the list's copy."""
    items = Citation("layer1_sources/faq/clean.md", "steps"), Citation("layer1_sources/faq/clean.md", "again")
    line = "Unplug the garden and remove the pods."
    blocks = [
        Block("heading", text="Steps", level=2),
        Block("steps", sentences=(Sentence(line, (items[0],)), Sentence("Rinse the tank.", (items[0],)))),
        Block("heading", text="Again", level=2),
        Block("para", sentences=(Sentence(line, (items[1],)), Sentence("Then dry it.", (items[1],)))),
        Block("para", sentences=(Sentence(line, (items[0],)),)),
    ]
    said = [s.cites for b in merge_repeats(blocks) for s in b.sentences if s.text == line]
    assert said == [(items[0],), (items[1],)]


def test_a_source_many_pages_quote_does_not_alone_make_them_related(farmbot_compiled: Path) -> None:
    """FarmBot's install guide offered Kabocha Squash, Runner Bean and Squash under 'See also':
    each crop's entry quotes the one sentence of the 'Getting Started' article that names it, and
    the guide quotes that article too. A source quoted by a few pages relates them; one quoted by
    many relates each pair of them less, as a subject many pages name does."""
    from wikic.compile.links import rank_see_also

    pages = ["guide", "crop-a", "crop-b", "topic", "crop-c", "crop-d"]
    sources = {p: {"getting-started"} for p in pages} | {"guide": {"getting-started", "install"}}
    sources["topic"] = {"getting-started", "install"}
    ranked = rank_see_also(pages, sources, {}, {}, {})
    assert ranked["guide"] == ("topic",)  # two shared sources, one of them quoted by two pages only
    assert rank_see_also(pages[:3], {p: {"getting-started"} for p in pages[:3]}, {}, {}, {})["guide"] == (
        "crop-a",
        "crop-b",
    )  # a source three pages quote still relates them
    guide = (farmbot_compiled / "wiki/guides/install-farmbot-os.md").read_text("utf-8")
    assert "../entries/" not in guide.split("\n## See also\n", 1)[-1].split("\n## ")[0]


def test_a_source_an_entry_quotes_for_one_mention_relates_it_to_nothing() -> None:
    """The planned getting-started guide offered Kabocha Squash under 'See also', and the squash page
    the guide: the page quotes one sentence of a bed-layout article that names squash, and the guide
    quotes that article. A page is related by what it is made of, not by a mention it quotes."""
    from wikic.compile.links import rank_see_also
    from wikic.compile.pageplan import PageSpec, own_sources

    mention = [("articles/bed.md", "layout", "Large crops such as squash go at the edges.")]
    crop = PageSpec(
        "entity",
        "squash",
        "Squash",
        "wiki/entries/squash.md",
        ("crops/squash.md", "articles/bed.md"),
        {"mentions": {"crops/squash.md": mention}},
    )
    guide = PageSpec("guide", "start", "Start", "wiki/guides/start.md", ("articles/bed.md", "articles/os.md"))
    assert own_sources(crop) == {"crops/squash.md"} and own_sources(guide) == set(guide.sources)
    pages = [crop.path, guide.path]
    related = rank_see_also(pages, {s.path: own_sources(s) for s in (crop, guide)}, {}, {}, {})
    assert related[crop.path] == () and related[guide.path] == ()
    assert rank_see_also(pages, {s.path: set(s.sources) for s in (crop, guide)}, {}, {}, {})[crop.path]


def test_a_source_link_to_another_source_links_to_where_the_wiki_shows_it(farmbot_compiled: Path) -> None:
    """FarmBot's articles link each other ('follow the detailed configuration instructions
    [here](../farmbot-os/intro/configurator.md)', 'See [Code 1](#code-1)'); the wiki kept the
    words and dropped the links, so 'here' and 'this document' led nowhere. A link that leads to
    another source (by its web address) or to a section of the same one now leads to where the
    wiki shows it; a link that leads elsewhere stays text, and 'there' is not 'here'."""
    from wikic.compile.links import source_links, url_key
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    def doc(name: str, url: str, body: str) -> SourceDoc:
        path = f"layer1_sources/a/{name}.md"
        return SourceDoc("a", name, name, path, name, {"url": url}, body, "", tuple(split_sections(body)))

    assert url_key("https://X.org/v15/app/plants.md") == url_key("https://x.org/v15/app/plants/")
    intro = doc(
        "intro",
        "https://x.org/v15/docs/intro",
        "# Intro\n\nAdd plants [here](../app/plants.md#sowing), see [Code 1](#codes) "
        "or [the shop](https://shop.example/x). ![a photo](../app/plants.md)\n\n## Codes\n\nCode 1.\n",
    )
    plants = doc("plants", "https://x.org/v15/app/plants", "# Plants\n\n## Sowing\n\nSow.\n")
    assert source_links([intro, plants]) == {  # each with its sentence up to it, to find it by
        intro.path: (
            ("intro", "here", plants.path, "sowing", "Add plants here"),
            ("intro", "Code 1", intro.path, "codes", "Add plants here, see Code 1"),
        )
    }
    # a file fetched from a folder: its url is the file, its html_url where it was published
    folder = doc("copy", "file:///kb/intro.json", "# Copy\n\nAdd plants [here](../app/plants.md).\n")
    folder.meta["html_url"] = "https://x.org/v15/docs/intro"
    assert source_links([folder, plants])[folder.path] == (
        ("copy", "here", plants.path, "", "Add plants here"),
    )
    text = (farmbot_compiled / "wiki/topics/troubleshooting.md").read_text("utf-8")
    assert "instructions [here](farmbot-os.md#configurator)" in text
    assert "T[here]" not in text and "t[here]" not in text


def test_a_topic_reads_in_the_order_its_sources_lead_on(farmbot_compiled: Path) -> None:
    """FarmBot's assembly topic ran A to Z: 'Assembly Prep', 'Attach the Z-Axis', 'Change Log',
    'Construct the Gantry' … 'Mount FarmBot to the Bed', though each article's 'What's next?' says
    which comes next. A topic now follows those links, and the order given where none leads on."""
    from wikic.compile.links import reading_order
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    def doc(name: str, nxt: str = "") -> SourceDoc:
        body = f"# {name}\n\nText.\n" + (f"\n## What's next?\n\n- [{nxt}]({nxt}.md)\n" if nxt else "")
        path = f"layer1_sources/a/{name}.md"
        return SourceDoc("a", name, name, path, name, {}, body, "", tuple(split_sections(body)))

    a, b, c, d, e = doc("a", "d"), doc("b"), doc("c", "e"), doc("d", "c"), doc("e", "a")
    linked = {
        x.path: (("whats-next", y, f"layer1_sources/a/{y}.md", "", y),)
        for x, y in ((a, "d"), (c, "e"), (d, "c"), (e, "a"))
    }
    assert [x.id for x in reading_order([a, b, c, d], linked)] == ["a", "d", "c", "b"]
    assert [x.id for x in reading_order([a, b, c, d, e], linked)] == [
        "b",
        "a",
        "d",
        "c",
        "e",
    ]  # a circle, last
    headings = re.findall(
        r"^## (.+)$", (farmbot_compiled / "wiki/topics/assembly.md").read_text("utf-8"), re.M
    )
    steps = ["Assembly Prep", "Construct the Gantry", "Attach the Z-Axis", "Mount FarmBot to the Bed"]
    assert [h for h in headings if h in steps] == steps


def test_a_topic_reads_its_index_s_articles_in_the_order_it_lists_them(farmbot_compiled: Path) -> None:
    """'FarmBot OS' lists 'Configurator', 'Status LEDs', 'Data Usage' and 'Auto Updates' under
    'What's next?'; its topic read 'Auto Updates' and 'Data Usage' between flashing and
    Configurator, as only the first link ordered anything. Every member an index lists follows
    the one listed before it."""
    from wikic.compile.links import reading_order
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    def doc(name: str) -> SourceDoc:
        body = f"# {name}\n\nText.\n"
        return SourceDoc(
            "a", name, name, f"layer1_sources/a/{name}.md", name, {}, body, "", tuple(split_sections(body))
        )

    index, b, c, d = doc("index"), doc("b"), doc("c"), doc("d")
    linked = {
        index.path: tuple(("whats-next", y, f"layer1_sources/a/{y}.md", "", y) for y in ("c", "d", "b"))
    }
    index = SourceDoc(
        "a",
        "index",
        "index",
        index.path,
        "index",
        {},
        "# index\n\n## What's next?\n\n- [c](c.md)\n",
        "",
        tuple(split_sections("# index\n\nText.\n\n## What's next?\n\n- [c](c.md)\n")),
    )
    assert [x.id for x in reading_order([b, c, d, index], linked)] == ["index", "c", "d", "b"]
    headings = re.findall(
        r"^## (.+)$", (farmbot_compiled / "wiki/topics/farmbot-os.md").read_text("utf-8"), re.M
    )
    listed = ["Configurator", "Status LEDs", "Data Usage", "Auto Updates"]
    assert [h for h in headings if h in listed] == listed


def test_a_contents_line_names_every_entry_when_there_are_few() -> None:
    """'On this page: … · and 1 more' hid one of seven questions behind a teaser: up to nine
    entries are all named; a long page names its first six and says how many more it holds."""
    from wikic.compile.pageplan import contents_line

    few = [f"Question {n}?" for n in range(8)]
    assert contents_line(few) == "On this page: " + " · ".join(few)
    many = [f"Entry {n}" for n in range(12)]
    assert contents_line(many) == "On this page: " + " · ".join(many[:6]) + " · and 6 more"


def test_a_topic_opens_with_what_wiki_yaml_says_it_covers() -> None:
    """A contents line alone ('Watering: How long does a full water tank last? · …') says what a
    topic holds, not what it is about: a group's ``purposes`` entry in wiki.yaml opens its page
    and its index line, the schema's words in italics, the entries after them."""
    from wikic.compile.schema import load_wiki_schema

    rule = next(r for r in load_wiki_schema(REPO).topics if r.source == "faq")
    assert rule.purposes, "the example's FAQ rule says what each of its topics covers"
    index = (REPO / "wiki" / "index.md").read_text().splitlines()
    for value, purpose in rule.purposes.items():
        text = (REPO / "wiki" / "topics" / f"{value}.md").read_text()
        assert lead(text)[0].startswith(f"*{purpose} On this page: "), lead(text)[0]
        line = next(x for x in index if f"(topics/{value}.md)" in x)
        assert f"— {purpose[:40]}" in line, line


def test_a_long_linked_from_lists_no_entry_by_the_alphabet_alone() -> None:
    """'Arugula', 'Baby Bok Choy' and 'Broccoli Microgreens' filled the Grove 6's last places
    because their names come first, no closer than the 44 other plants suited to it: a long list
    shows the other pages and the entries whose title shares a word with the page's, and says how
    many of how many it shows."""
    from wikic.compile.draft import LINKED_FROM, closest, linked_from

    plants = tuple(
        (f"wiki/entries/plant-{n}.md", f"Plant {'abcdefghij'[n % 10]}{'klmn'[n // 10]}") for n in range(40)
    )
    others = (("wiki/guides/holiday.md", "Going on holiday"), ("wiki/topics/lighting.md", "Lighting"))
    kin = (("wiki/entries/grove-6-stand.md", "Grove 6 stand"),)
    listed = closest(others + kin + plants, "Grove 6")
    assert listed == others + kin
    assert linked_from(len(others + kin + plants), len(listed)) == (
        "Linked from (the closest 3 of 43 pages)",
        3,
    )
    assert closest(plants, "Grove 6") == plants  # nothing closer: the first, as before
    assert linked_from(len(plants), len(plants))[1] == LINKED_FROM


def test_what_explains_an_outdated_statement_goes_into_its_note() -> None:
    """'We set the limit conservatively …' explained the old 14-day limit, and stood after its
    Superseded note as if it were the reason for the new 21 days: a sentence right after an
    outdated statement that only goes on about it ('It …', 'the limit', no figure of its own)
    joins its note; one with a figure of its own, or after another sentence, stays current."""
    from wikic.compile.draft import Navigation
    from wikic.compile.finish import mark_outdated

    cite = (Citation("layer1_sources/blog/a.md", "vacation"),)
    old = "You can set a return date up to 14 days ahead."
    said = [
        old,
        "We set the limit conservatively so that no garden runs dry.",
        "Vacation mode needs the 4-litre tank.",
        "It is not on the smallest model.",
    ]
    blocks = [Block("para", sentences=tuple(Sentence(t, cite) for t in said))]
    nav = Navigation(outdated=((old, "2024-11-05", "21 days", "app.md#new", "App"),))
    out = mark_outdated(blocks, nav)
    assert [(b.kind, [s.text for s in b.sentences]) for b in out] == [
        ("note", said[:2]),
        ("para", said[2:]),
    ]


def test_a_label_over_each_part_s_table_stays_over_each() -> None:
    """'**Component tests**' heads a table in each part's section; on 'Electronics and Wiring' it
    stood once, over the first part's table, with fifteen citations, and the other tables had no
    label (review M: 'a junk line'). A label is no sentence said twice; a sentence still is."""
    parts = [Citation(f"layer1_sources/articles/{n}.md", n) for n in ("fuse", "camera")]
    blocks = []
    for cite in parts:
        blocks += [
            Block("heading", text=cite.anchor.title(), level=2),
            Block(
                "para",
                sentences=(
                    Sentence(f"The {cite.anchor} is a part.", (cite,)),
                    Sentence("Visit our shop to purchase parts.", (cite,)),
                ),
            ),
            Block("para", sentences=(Sentence("Component tests", (cite,)),)),
        ]
    merged = merge_repeats(blocks)
    labels = [s.cites for b in merged for s in b.sentences if s.text == "Component tests"]
    assert labels == [(parts[0],), (parts[1],)]
    said = [s.cites for b in merged for s in b.sentences if s.text.startswith("Visit our shop")]
    assert said == [(parts[0], parts[1])]


def test_a_lead_in_another_source_repeats_stays_over_its_list() -> None:
    """Two how-to articles open their prerequisites with the same 'Before we get started, make sure
    … the following prerequisites:'; on the Genesis page the second list stood without it (its
    copy was dropped, its citation joined the first). A lead-in stays over its own list."""
    tools, soil = (Citation(f"layer1_sources/articles/{n}.md", n) for n in ("tools", "soil"))
    intro = "Before we get started, make sure you meet the following prerequisites:"
    blocks = []
    for cite in (tools, soil):
        blocks += [
            Block("heading", text=cite.anchor.title(), level=2),
            Block(
                "para",
                sentences=(Sentence(f"This is about {cite.anchor}.", (cite,)), Sentence(intro, (cite,))),
            ),
            Block("bullets", sentences=(Sentence(f"You have the {cite.anchor} kit.", (cite,)),)),
        ]
    said = [s.cites for b in merge_repeats(blocks) for s in b.sentences if s.text == intro]
    assert said == [(tools,), (soil,)]


def test_a_sentence_about_its_own_section_s_subject_stays_in_each_section() -> None:
    """'This advanced setting is not shown by default.' opens seven settings of three articles; on
    the Settings page it stood once, under 'Auto update', with eight citations, and the other six
    no longer said they were hidden (review O). What 'this' names differs in each section."""
    cites = [Citation(f"layer1_sources/articles/{n}.md", n) for n in ("auto-update", "stop-at-home")]
    line = "This advanced setting is not shown by default."
    blocks = []
    for cite in cites:
        blocks += [
            Block("heading", text=cite.anchor, level=3),
            Block("para", sentences=(Sentence(line, (cite,)), Sentence(f"It sets {cite.anchor}.", (cite,)))),
        ]
    said = [s.cites for b in merge_repeats(blocks) for s in b.sentences if s.text == line]
    assert said == [(cites[0],), (cites[1],)]
