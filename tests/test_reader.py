"""A wiki a reader would keep (issue 19), checked on the three wikis: the example KB as committed,
FarmBot as configured in tests, and FarmBot onboarded with ``init --from`` and ``plan --write``.

- guides, device pages and comparisons quote every step list, list and table whole;
- device pages gather what their sources say about the device;
- a common word never links to a page whose title is that one word;
- no page is named after a folder or a source, and no large topic page lacks a subject;
- the holiday guide answers 'I'm going away for two weeks' from its one page, and three FarmBot
  guides answer their task the same way.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import Counter
from functools import cache
from pathlib import Path

import farmbot_kb
import pytest
import wikiasserts
from wikiasserts import body_lines, front_matter

from wikic.compile import pageplan
from wikic.compile.draft import parse_citations, strip_citations
from wikic.compile.gather import facet_of, lone_step
from wikic.compile.guides import Candidate, order, without_pointers
from wikic.compile.librarian.extract import points_ahead, section_content, stands_alone
from wikic.compile.links import Names, Target, key_of, listed_titles, unique_titles
from wikic.compile.schema import load_wiki_schema
from wikic.core.facts import for_staff
from wikic.core.markdown import plain_inline, split_sections, split_sentences, words
from wikic.core.models import SourceDoc
from wikic.transform import layer1

REPO = Path(__file__).resolve().parents[1]

# The three wikis are read-only here, so each is read, parsed and planned once per worker.
pages = cache(wikiasserts.pages)


@cache
def load_layer1(root: Path) -> tuple:
    return tuple(layer1.load_layer1(root))


@cache
def planned(root: Path) -> pageplan.Plan:
    return pageplan.plan(list(load_layer1(root)), load_wiki_schema(root))


@pytest.fixture(params=["example", "farmbot", "planned"])
def wiki(request: pytest.FixtureRequest) -> Path:
    if request.param == "example":
        return REPO
    return request.getfixturevalue("farmbot_compiled" if request.param == "farmbot" else "farmbot_planned")


def kinds(root: Path) -> dict[str, str]:
    return {p: front_matter(t)["type"] for p, t in pages(root).items() if not p.startswith("wiki/index")}


_ITEM = re.compile(r"^(?:- |\d+\. )(.*)$")


def quoted_runs(text: str, path: str) -> list[tuple[str, list[str], set]]:
    """('list' | 'table', the items or rows as quoted, the sections they cite) of a page's lists
    and tables that cite a source (navigation lists and the wiki's own tables aside)."""
    runs: list[tuple[str, list[str], set]] = []
    kind = ""
    for line in body_lines(text) + [""]:
        item = _ITEM.match(line)
        cites = {(c.path, c.anchor) for c in parse_citations(line, path)}
        if item and cites:
            if kind != "list":
                runs.append(("list", [], set()))
                kind = "list"
            runs[-1][1].append(" ".join(plain_inline(strip_citations(item.group(1))).split()))
            runs[-1][2].update(cites)
        elif line.startswith("|"):
            if kind != "table":
                runs.append(("table", [line], set()))
                kind = "table"
            elif not re.match(r"^\|(?:-+\|)+$", line):
                runs[-1][1].append(line)
                runs[-1][2].update(cites)
        else:
            kind = ""
    return [r for r in runs if r[2]]


DERIVED_TABLES = ("Specification", "Fact", "Model", "Name", "Entry")  # the wiki's own tables


def test_quoted_lists_and_tables_are_whole(wiki: Path) -> None:
    """Every step list, list or table a guide, device page or comparison quotes from a source
    section has every item or row the section's list or table has."""
    docs = {d.path: d for d in load_layer1(wiki)}
    checked = 0
    for path, kind in kinds(wiki).items():
        if kind not in ("guide", "device", "comparison"):
            continue
        for what, items, cites in quoted_runs(pages(wiki)[path], path):
            if what == "table" and items[0].split("|")[1].strip() in DERIVED_TABLES:
                continue
            if len(cites) != 1:
                continue  # a wiki table gathering several sources (a guide's 'At a glance')
            ((doc_path, anchor),) = cites
            section = docs[doc_path].section(anchor)
            blocks = section_content(docs[doc_path], section)
            if what == "list":
                source = [b for b in blocks if b.kind in ("bullets", "steps")]
                said = [[" ".join(plain_inline(s.text).split()) for s in b.sentences] for b in source]
                home = next((lst for lst in said if items[0] in lst), None)
                if home is None:
                    continue  # list items the fact list restates (a details list), or a shared quote
                assert items[: len(home)] == home or set(home) <= set(items), (path, doc_path, items, home)
            else:
                rows = [b.rows for b in blocks if b.kind == "table"]
                assert any(len(r) == len(items) - 1 for r in rows), (path, doc_path, len(items) - 1)
            checked += 1
    assert checked >= 5


def test_every_farmbot_device_page_gathers_what_its_sources_say(farmbot_compiled: Path) -> None:
    """At least 10 cited sentences about the device from at least 3 of its sources, or most of them
    where the sources say less (one step of a build, taken from its procedure, says nothing; nor
    does 'In these instructions we show you how to build …')."""
    root = farmbot_compiled
    the_plan = planned(root)
    docs = {d.path: d for d in load_layer1(root)}
    for spec in (s for s in the_plan.pages if s.type == "device"):
        device = spec.config["device"]
        names = [device["title"], *device.get("match", ())]
        exclude = list(device.get("exclude", ()))

        def about(text: str, names: list[str] = names, exclude: list[str] = exclude) -> bool:
            plain = plain_inline(text)
            for x in exclude:
                plain = re.sub(rf"\b{re.escape(x)}\b", " ", plain, flags=re.I)
            return any(re.search(rf"\b{re.escape(n)}\b", plain, re.I) for n in names)

        said: Counter = Counter()
        for line in body_lines(pages(root)[spec.path]):
            cites = parse_citations(line, spec.path)
            text = strip_citations(line)
            if not cites or line.startswith("|"):
                continue
            section = next((docs[c.path].section(c.anchor) for c in cites if c.path in docs), None)
            if about(text) or (section is not None and about(section.heading)):
                said[cites[0].path] += 1
        available: Counter = Counter()
        for d in (docs[p] for p in spec.sources if p in docs and not for_staff(docs[p])):  # not the factory's
            for s in d.sections:
                if lone_step(s) and facet_of(d, s) != "Troubleshooting" and not about(s.heading):
                    continue  # a step of a build or of the factory's packing is its procedure's
                available[d.path] += sum(  # what a sentence says, not one announcing what follows
                    1
                    for b in section_content(d, s)
                    for x in b.sentences
                    if about(x.text) and not points_ahead(plain_inline(x.text))
                )
        available = Counter({p: n for p, n in available.items() if n})
        # at least 10, or most of what its sources say (two sections headed alike show once)
        assert sum(said.values()) >= min(10, 0.8 * sum(available.values())), (spec.path, said)
        assert len(said) >= min(3, len(available)), (spec.path, said)


COMMON = {"point", "points", "event", "events", "tool", "tools", "help", "move", "controls", "photos"}


def test_a_common_word_is_no_name() -> None:
    """'a rogue access point', 'in the event', 'a writing tool', 'for help' do not name the app's
    Points, Events, Tools or Help pages; 'open the Points panel' does."""
    targets = {
        key_of(n): Target(f"wiki/topics/{n.lower()}.md") for n in ("Points", "Events", "Tools", "Help")
    }
    names = Names(targets, frozenset(targets))
    for text in (
        "Beware of a rogue access point on the network.",
        "In the event of a power cut, the bot stops.",
        "Use a special .img writing tool called Raspberry Pi Imager.",
        "Ask the forum for help.",
        "Points are locations in the garden.",  # a sentence's first word is capitalised anyway
        "Press the TOOLS button.",
    ):
        assert names.spans(text) == [], text
    assert [key for *_, key in names.spans("Open the Points panel, then Tools.")] == [
        key_of("Points"),
        key_of("Tools"),
    ]


def test_a_name_inside_a_longer_name_is_not_that_name() -> None:
    """ "Johnny's Selected Seeds" is a shop, not the Seeds page; 'ginger mint' and 'apple mint'
    are mints, not ginger or apples; 'Raspberry Pi' is no raspberry. A name still links where a
    sentence opens with a verb before it ('Grow Basil') or it stands alone. A crop page quotes no
    sentence about the Raspberry Pi, and a device whose short name is a word ('Express') gathers
    no licence saying 'express or implied'."""
    from wikic.compile.gather import name_pattern, names_it
    from wikic.compile.librarian.extract import MentionIndex
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    names = Names({key_of(n): Target(n) for n in ("Seeds", "ginger", "mint", "apple", "Raspberry", "Basil")})
    said = lambda text: [text[a:b] for a, b, _ in names.spans(text)]  # noqa: E731
    assert said("Johnny's Selected Seeds sells them.") == []
    assert said("Peppermint, ginger mint, and large apple mint are hybrids of mint.") == ["mint"] * 3
    assert said("Insert the card into the Raspberry Pi.") == []
    assert said("Grow Basil indoors; buy Seeds, a raspberry and ginger.") == [
        "Basil",
        "Seeds",
        "raspberry",
        "ginger",
    ]
    body = "# Flash\n\nInsert the microSD card into the Raspberry Pi.\n\nA raspberry cane fruits in summer.\n"
    doc = SourceDoc(
        "articles", "f", "f", "layer1_sources/articles/f.md", "Flash", {}, body, "", split_sections(body)
    )
    found = MentionIndex([doc]).find(["Raspberry"], "layer1_sources/crops/raspberry.md", 5)
    assert [text for _, _, text in found] == ["A raspberry cane fruits in summer."]
    named, other = name_pattern(("FarmBot Express", "Express"), ("Express XL",))
    assert not names_it("These files come with no warranty, express or implied.", named, other)
    assert names_it("The Express ships in one box.", named, other)
    assert not names_it("The Express XL ships in two boxes.", named, other)


def test_a_name_broken_by_a_bracket_links_nothing() -> None:
    """'Express (XL)' in a table row is the Express XL written another way: it linked as
    '[Express (XL](…))', a link cut by its own bracket. It links nothing now; 'Express XL' and
    'Express-XL' still link."""
    targets = {key_of(n): Target(f"wiki/devices/{n}.md") for n in ("Express", "Express XL")}
    names = Names(targets)
    assert names.spans("Express (XL) v1.0") == []
    assert [key for *_, key in names.spans("The Express XL and the Express-XL")] == [key_of("Express XL")] * 2
    assert [key for *_, key in names.spans("The Express and the XL")] == [key_of("Express")]
    basil = "Purple Basil 'Dark Opal'"  # a name that opens a quotation links with its closing mark
    quoted = Names({key_of(basil): Target("wiki/entries/purple-basil.md")})
    assert [text[a:b] for text in (f"| {basil} | medium",) for a, b, _ in quoted.spans(text)] == [basil]


def test_links_are_names_not_common_words(wiki: Path) -> None:
    """No link in a page's text is a word written as a word ('point', 'tool', 'help') pointing at
    a page titled with one word, or at one of those app pages (entry pages of a crop or a plant
    aside: their one-word name is the thing). Written as a name ('the Move command') it may."""
    kind = kinds(wiki)
    titles = {p: front_matter(t)["title"] for p, t in pages(wiki).items() if p in kind}
    found = []
    for path in kind:
        for line in body_lines(pages(wiki)[path]):
            if "layer1_sources" not in line:
                continue  # prose and cells only: 'See also' lists name pages by their titles
            cited = re.findall(r"\]\(((?:\.\./)*layer1_sources/[^)#]+)", line)
            source = "".join((wiki / path).parent.joinpath(c).read_text("utf-8") for c in cited[:1])
            for m in re.finditer(r"(?<!!)\[([^\]]+)\]\(([^)#]+\.md)[^)]*\)", line):
                text, href = m.groups()
                if "layer1_sources" in href or f"[{text}](" in source:
                    continue  # a citation, or a link the source itself makes ('see [tools](…)')
                target = (wiki / path).parent.joinpath(href).resolve().relative_to(wiki.resolve()).as_posix()
                one_word = len(words(titles.get(target, ""))) == 1
                common = text.lower() in COMMON or one_word
                if len(words(text)) == 1 and text.islower() and common and kind.get(target) != "entity":
                    found.append((path, text, target))
                # in a table cell capitals are the field's style: 'Direct [Seed](seeds.md), thin to 3cm'
                in_cell = line.startswith("|") and len(words(text)) == 1 and one_word
                if in_cell and kind.get(target) not in ("entity", "device"):
                    found.append((path, text, target))
    assert found == []


def test_a_table_cell_links_no_common_word_however_it_is_capitalised() -> None:
    """A field's value is often title-cased ('Direct Seed, thin to 3cm apart'): the capital says
    nothing about a name, so the 'Seeds' page is not linked from a cell, though prose that writes
    it as a name ('open the Seeds page') and a device's one-word name in a cell ("All Genesis kits")
    still link."""
    from wikic.compile.draft import Block, Cell, Citation, Draft, Navigation, Sentence, render_body

    cite = (Citation("layer1_sources/crops/carrot.md", "details"),)
    nav = Navigation(
        names=((key_of("Seeds"), "wiki/topics/seeds.md"), (key_of("Genesis"), "wiki/devices/genesis.md")),
        proper=(key_of("Seeds"), key_of("Genesis")),
        words=(key_of("Seeds"),),
    )
    rows = (
        (Cell("Sowing method"), Cell("Direct Seed, thin to 3cm apart", cite)),
        (Cell("All Genesis kits"), Cell("x", cite)),
    )
    blocks = (
        Block("table", header=("Field", "Value"), rows=rows),
        Block("para", sentences=(Sentence("For tips, open the Seeds page.", cite),)),
    )
    draft = Draft("Carrot", "", (), blocks)
    text = render_body(draft, "wiki/entries/carrot.md", nav)
    assert "| Direct Seed, thin to 3cm apart" in text
    assert "All [Genesis](../devices/genesis.md) kits" in text
    assert "open the [Seeds](../topics/seeds.md) page" in text


def test_a_record_id_in_a_cell_is_shown_as_its_subject_s_title() -> None:
    """A field that lists other records by id ('grove-6, canopy-12') links each by its title, in
    every row; prose and names without a page stay as written."""
    from wikic.compile.draft import Block, Cell, Citation, Draft, Navigation, Sentence, render_body

    cite = (Citation("layer1_sources/plants/basil.md", "basil"),)
    nav = Navigation(
        names=((key_of("Grove 6"), "wiki/devices/grove-6.md"), (key_of("chives"), "wiki/entries/chives.md")),
        shown=((key_of("Grove 6"), "Grove 6"), (key_of("chives"), "Chives")),
    )
    rows = (
        (Cell("Companions"), Cell("chives, shiso", cite)),
        (Cell("Suitable devices"), Cell("grove-6", cite)),
        (Cell("Also"), Cell("grove-6", cite)),
    )
    blocks = (
        Block("table", header=("Field", "Value"), rows=rows),
        Block("para", sentences=(Sentence("Pair it with chives in a grove-6 garden.", cite),)),
    )
    text = render_body(Draft("Basil", "", (), blocks), "wiki/entries/basil.md", nav)
    assert "| [Chives](chives.md), shiso" in text
    assert "| [Grove 6](../devices/grove-6.md) [" in text
    assert "| Also | [Grove 6](../devices/grove-6.md) [" in text
    assert "Pair it with chives in a grove-6 garden." in text


def test_no_cell_shows_a_record_id_where_its_subject_has_a_title(wiki: Path) -> None:
    """No table cell that lists records by id ('thai-basil, dill') links a device or an entry by
    its id ('[thai-basil](…)'); the title stands for it."""
    subjects = {p for p, k in kinds(wiki).items() if k in ("entity", "device")}
    link = re.compile(r"\[([^\]]*)\]\(([^)#\s]+\.md)\)")
    ids = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:, [a-z0-9]+(?:-[a-z0-9]+)*)*")
    found = []
    for path, text in pages(wiki).items():
        for cell in (c for line in text.splitlines() if line.startswith("|") for c in line.split(" | ")):
            value = strip_citations(cell.strip("| "))
            named = [
                m.group(1)
                for m in link.finditer(value)
                if os.path.normpath(os.path.join(os.path.dirname(path), m.group(2))) in subjects
            ]
            if named and ids.fullmatch(link.sub(lambda m: m.group(1), value)):
                found += [(path, name) for name in named if ids.fullmatch(name)]
    assert found == []


def test_no_page_quotes_a_source_s_list_of_links_to_its_next_pages(wiki: Path) -> None:
    """A help center's 'What's next?' is a list of links to its other articles (70 on FarmBot,
    each item cited as if it said something): the wiki's own links and reading order stand for it."""
    from wikic.core.markdown import is_navigation

    assert is_navigation("* [Camera Settings](photos/camera-settings.md)\n* [Weed Detection](w.md)\n")
    assert not is_navigation("* [Camera Settings](photos/camera-settings.md): pick a resolution\n")
    item = re.compile(r"^(?:[-*+]|\d+\.) \[[^\]]+\]\([^)]*\)$")
    found = []
    for path, text in pages(wiki).items():
        for section in re.split(r"\n#{2,6} ", text)[1:]:
            lines = [strip_citations(x).strip() for x in section.split("\n")[1:] if x.strip()]
            if lines and all(item.match(x) for x in lines) and "layer1_sources/" in section:
                found.append((path, section.split("\n")[0]))
    assert found == []


FOLDERS = re.compile(r"[/_-]")


def _filed(root: Path) -> set[str]:
    """Source names and the folder names records are filed under (a path-like field's segments)."""
    out = set()
    for d in load_layer1(root):
        out.add(d.source.lower())
        for value in d.meta.values():
            if isinstance(value, str) and "/" in value and "://" not in value and len(value) < 80:
                out |= {" ".join(FOLDERS.split(seg)).strip().lower() for seg in value.split("/") if seg}
    return out


def _members(root: Path, text: str, page: str) -> list:
    docs = {d.path: d for d in load_layer1(root)}
    cited = {c.path for line in body_lines(text) for c in parse_citations(line, page)}
    return [docs[p] for p in sorted(cited) if p in docs]


def _shared(word: str, members: list) -> bool:
    stem = word.lower()[: max(4, len(word) - 2)]
    used = sum(1 for d in members if re.search(rf"\b{re.escape(stem)}", f"{d.title} {d.body}".lower()))
    return used * 2 >= len(members)


def test_no_page_is_named_after_a_folder_or_a_source(wiki: Path) -> None:
    """A title that is only a folder's or a source's name ('Docs', 'Articles') is not a title,
    unless it is what the page's documents are about (a document of that title, or a word most
    of them use: 'Assembly')."""
    filed = _filed(wiki)
    for path in kinds(wiki):
        text = pages(wiki)[path]
        title = front_matter(text)["title"]
        if " ".join(FOLDERS.split(title)).strip().lower() not in filed:
            continue
        members = _members(wiki, text, path)
        assert any(d.title.lower() == title.lower() for d in members) or all(
            _shared(w, members) for w in words(title)
        ), (path, title)


def test_no_topic_page_gathers_many_sources_without_a_subject(wiki: Path) -> None:
    """A topic page of more than eight sources has a subject: a word of its title most of them
    use, or the source's own page of that title, which files the others under it ('Drivetrain')."""
    for path, kind in kinds(wiki).items():
        if kind != "topic":
            continue
        text = pages(wiki)[path]
        title = front_matter(text)["title"]
        members = [  # under their titles, and the namesake whose opening opens the page
            d
            for d in _members(wiki, text, path)
            if f"## {d.title}" in text or f"## {d.title} (" in text or d.title.lower() == title.lower()
        ]
        if len(members) <= 8:
            continue
        introduced = any(d.title.lower() == title.split(":")[0].lower() for d in members)
        assert introduced or any(_shared(w, members) for w in words(title) if len(w) > 2), (path, title)


def _page(root: Path, path: str) -> str:
    return pages(root)[path]


def _current_lines(text: str) -> list[str]:
    """A page's statements outside dated Superseded notes, citations removed."""
    return [strip_citations(x) for x in body_lines(text) if "layer1_sources" in x and not x.startswith(">")]


def test_the_holiday_guide_answers_going_away_for_two_weeks() -> None:
    """'I'm going away for two weeks, what do I do?' from the one page: every planter's tank and
    days per fill, which have vacation mode and for how long (now), the current low-water alert,
    and what to do before leaving."""
    text = _page(REPO, "wiki/guides/going-on-holiday.md")
    rows = {r.split("|")[1].strip(" []"): r for r in body_lines(text) if r.startswith("| [")}
    rows = {re.sub(r"\]\(.*", "", k): v for k, v in rows.items()}
    expect = {"Sprout 3": ("1.2", "7 days"), "Grove 6": ("4.0", "14 days"), "Canopy 12": ("9.5", "14 days")}
    for planter, (tank, days) in expect.items():
        row = strip_citations(rows[planter])
        assert tank in row and days in row, row
    assert "does not support vacation mode" in strip_citations(rows["Sprout 3"])
    assert all("21 days" in strip_citations(rows[p]) for p in ("Grove 6", "Canopy 12"))
    current = "\n".join(_current_lines(text))
    assert "15%" in current and "reminder every 6 hours" in current  # the alert as it is now
    assert "Fill the tank to the MAX line" in current  # before leaving
    assert "turn on vacation mode under Garden > Vacation" in current  # and how to switch it on
    assert "Before you leave" in text.split("## What to do")[0]  # and first
    assert not re.search(r"up to 14 days(?!.*21)", current)  # the old limit only in dated notes
    assert "the limit stays at 14 days" in current  # the FAQ's opening, which 'Before you leave' qualifies


def test_a_guide_quotes_the_opening_an_answer_s_section_qualifies() -> None:
    """A section of an answer (a document titled as a question) is quoted with the answer's own
    opening above it: 'Things to check' of 'My seeds haven't sprouted' came without 'Probably not
    yet … lettuces and arugula often sprout in 3–7 days'. A post's preamble is no such opening."""
    text = "\n".join(_current_lines(_page(REPO, "wiki/guides/first-week.md")))
    assert "Probably not yet." in text and "14–28 days" in text
    assert text.index("Probably not yet.") < text.index("Germination time varies")
    assert "is available today" not in text  # app 5.0's post opens with its release, not the task


def test_the_holiday_guide_quotes_only_what_the_trip_needs() -> None:
    """The guide's units are chosen for the trip: of a release post whose title names vacation mode
    among other news, not 'A new plant library' (nor its vacation-mode section, which the app 5.0
    FAQ the guide quotes says sentence for sentence); and not an older
    post or story whose change a quoted newer section already states (app 4.6's 14 days, the
    classroom's spring break), which would repeat history as guidance: of app 4.6 only its step
    that still holds and that no newer source gives (how to switch vacation mode on)."""
    the_plan = planned(REPO)
    spec = next(s for s in the_plan.pages if s.path == "wiki/guides/going-on-holiday.md")
    shown = {tuple(x) for x in spec.config["sections"]}
    # the post's vacation-mode section says again what the app 5.0 FAQ the guide quotes says
    assert ("layer1_sources/faq/vacation-mode-app-5.md", "before-you-leave") in shown
    assert ("layer1_sources/blog/app-5-0.md", "vacation-mode-up-to-21-days") not in shown
    assert ("layer1_sources/blog/app-5-0.md", "a-new-plant-library") not in shown
    assert ("layer1_sources/blog/app-5-0.md", "household-sharing") not in shown
    assert "layer1_sources/blog/classroom-garden.md" not in {p for p, _ in shown}
    older = {f"{p}#{a}" for p, a in shown if p == "layer1_sources/blog/app-4-6-vacation-mode.md"}
    assert older == {"layer1_sources/blog/app-4-6-vacation-mode.md#vacation-mode"}
    assert spec.config["only"][next(iter(older))] == [
        "Fill the tank to the MAX line, add your nutrient dose, and turn on vacation mode under Garden > Vacation."
    ]
    text = _page(REPO, "wiki/guides/going-on-holiday.md")
    assert "14 days ahead" not in text and "rolling out today" not in text
    assert "The plant library has been rebuilt" not in text and "rolling out today" not in text


def test_guides_quote_neither_history_nor_lists_about_something_else() -> None:
    """The first-week guide does not offer app 4.6's superseded vacation mode; the problems guide
    does not take a list per planter about another task (refill intervals, which plants fit)
    for having an item per device, nor every plant entry's template 'Common problems' heading for
    sharing the guide's title words."""
    the_plan = planned(REPO)
    shown = {s.path: {tuple(x) for x in s.config["sections"]} for s in the_plan.pages if "/guides/" in s.path}
    assert not any(p.endswith("app-4-6-vacation-mode.md") for p, _ in shown["wiki/guides/first-week.md"])
    problems = {p.split("/")[-1] for p, _ in shown["wiki/guides/fix-common-problems.md"]}
    assert "tank-duration.md" not in problems  # refill intervals, item per planter: another task
    assert "seeds-not-sprouting.md" in problems and "offline-operation.md" in problems
    assert not any(
        p.startswith("layer1_sources/plants/") for p, _ in shown["wiki/guides/fix-common-problems.md"]
    )


def test_a_hub_says_what_each_model_is(farmbot_compiled: Path) -> None:
    """A product line's overview opens with sentences about its models themselves (never one that
    only mentions a model, such as 'First pack in the bulkiest items: … (for Express XL kits
    only)'), and its index summary names the models rather than lifting a sentence. A line whose
    sources say what only one model is has none: 'FarmBot Express models' was the Express's
    sentence over two links (a reviewer: it 'covers only the Express models')."""
    assert not (farmbot_compiled / "wiki/hubs").exists()
    hubs = {p: t for p, t in pages(REPO).items() if p.startswith("wiki/hubs/")}
    assert hubs
    for path, text in hubs.items():
        models = re.findall(r"^- \[([^\]]+)\]", text.split("## Models")[1].split("\n## ")[0], re.M)
        lead = [
            plain_inline(strip_citations(x))
            for x in body_lines(text.split("## Models")[0])
            if "layer1_sources" in x
        ]
        for sentence in lead:
            assert any(re.match(rf"(?:The )?{re.escape(m)}\b", sentence) for m in models), (path, sentence)
        summary = front_matter(text)["summary"]
        assert all(m in summary for m in models), (path, summary)


def test_an_entry_is_found_as_its_fields_section(farmbot_compiled: Path) -> None:
    """A crop's fields sit under the heading of the section that lists them ('Details'), as on a
    page of many crops, so a question about them is routed to that section of the crop's page
    first; and a page quoting one document (an entry) does not also count as a page gathering a
    subject, where one shared word ('brick top' for a power brick) would outrank the answer."""
    from wikic.lookup.ask import Lookup

    text = _page(farmbot_compiled, "wiki/entries/spinach.md")
    assert re.search(r"^## Details\n\n\| Fact \| Value \|$", text, re.M)
    lookup = Lookup(farmbot_compiled)
    try:
        sow = "I'm going to have the bot sow spinach. How far down should it push the seed?"
        assert lookup.retrieve(sow, "index", k=5).ranked[0] == "layer1_sources/crops/spinach.md#details"
        brick = lookup.retrieve(
            "Is the power brick that comes with the Express actually waterproof?", "search", k=5
        )
        assert "layer1_sources/articles/6458054.md#power-supply" in brick.ranked[:5]
        assert "layer1_sources/crops/cinnamon-cap-mushroom.md#details" not in brick.ranked[:5]
    finally:
        lookup.close()


FARMBOT_GUIDES = {
    # a guide and what its task needs, in the order it is done
    "wiki/guides/install-farmbot-os.md": [
        "os.farm.bot",
        "Raspberry Pi Imager",
        "card slot is located",
        "farmbot-xxxx",
        "web app credentials",
        "Check to see if FarmBot is online",
    ],
    "wiki/guides/connection-problems.md": ["LED", "blocked ports", "Wi-Fi", "Firewall"],
    "wiki/guides/maintenance.md": [
        "Check belts for proper tension",
        "lubricant",
        "eccentric spacer",
        # the rest of the maintenance checklist whose belts and cleaning sections fit best
        "Tighten loose screws",
        "Inspect for damage",
    ],
}


@pytest.mark.parametrize("guide", sorted(FARMBOT_GUIDES))
def test_farmbot_guides_answer_their_task(farmbot_compiled: Path, guide: str) -> None:
    text = _page(farmbot_compiled, guide).split("---\n", 2)[2]  # the page as read, keywords aside
    at = [text.find(x) for x in FARMBOT_GUIDES[guide]]
    assert all(i >= 0 for i in at), [x for x, i in zip(FARMBOT_GUIDES[guide], at, strict=True) if i < 0]
    if guide.endswith("install-farmbot-os.md"):
        assert at == sorted(at)  # download, write, insert, configure, check: in that order
    assert "Read it whole" not in text  # no teaser stands in for what the guide is about


def test_a_guide_leaves_out_a_task_its_source_files_elsewhere(
    farmbot_compiled: Path, farmbot_planned: Path
) -> None:
    """A maintenance guide's words are an assembly's too ('belts', 'screws'): 'Secure the belts' of
    'Mount FarmBot to the Bed', filed under v1.1/assembly, stood in it as maintenance; and the
    planned getting-started guide ended with 'Storing FarmBot for Winter' (filed under
    v1.1/extras/maintenance), every step of which names the gantry or a cable."""
    maintenance = _page(farmbot_compiled, "wiki/guides/maintenance.md")
    assert "### Secure the belts" not in maintenance and "Check belts for proper tension" in maintenance
    started = _page(farmbot_planned, "wiki/guides/getting-started-guide.md")
    assert "Storing FarmBot for Winter" not in started and "Plug Everything In" in started


def test_no_page_points_at_a_picture_or_a_link_it_does_not_show(wiki: Path) -> None:
    """'See the video below for detail.' and 'Here is a link with more information on how you can
    improve the Wi-Fi signal.' and 'Simply click the links below …' (a table of links out) pointed
    at nothing: the wiki shows no video and no link out. Such a
    sentence is left out as the picture is; an instruction that also says what to do stays."""
    from wikic.core.markdown import points_at_media

    assert points_at_media("See the video below for detail.")
    assert points_at_media("The diagram below illustrates the FarmBot Express electronics schematic.")
    assert not points_at_media("Rotate the three spacers shown in the image below so the text faces out.")
    assert points_at_media(
        "Simply click the links below to access the various assemblies and other resources."
    )
    assert not points_at_media("Click the Save button below the map.")
    found = [
        (path, line)
        for path, text in pages(wiki).items()
        for line in text.split("\n")
        if "layer1_sources/" in line and points_at_media(plain_inline(strip_citations(line)).lstrip("-* "))
    ]
    assert found == []


def test_linked_from_lists_the_closest_pages_first(farmbot_compiled: Path) -> None:
    """The tomato's 'Linked from' was eight crops, A to H, whose companions name it ('Anaheim
    Pepper', 'Black Habanero', 'Dandelion'): of pages of one kind, those whose title shares a word
    with its own (the tomato varieties) come first."""
    text = _page(farmbot_compiled, "wiki/entries/tomato.md")
    listed = re.findall(r"^- \[([^\]]+)\]", text.partition("## Linked from")[2], re.M)
    tomatoes = [t for t in listed if "Tomato" in t]
    assert len(tomatoes) >= 3 and listed[: len(tomatoes)] == tomatoes, listed


def test_a_topic_page_opens_with_its_namesake_source(farmbot_compiled: Path) -> None:
    """'FarmBot OS' (its install steps) came after 'Auto Updates' and 'Data Usage' on the FarmBot
    OS page: the source the page is named after is its overview, and comes first."""
    lines = body_lines(_page(farmbot_compiled, "wiki/topics/farmbot-os.md"))
    heads = [x for x in lines if x.startswith("## ")]
    # its opening opens the page (``test_a_topic_opens_with_its_namesake_s_opening_…``), its
    # own steps follow first
    opening = next(n for n, x in enumerate(lines) if x.startswith("Step-by-step instructions for installing"))
    assert opening < lines.index(heads[0])
    assert heads[0].startswith("## Step 1") and heads.index("## Configurator") > 0, heads


def test_a_topic_opens_with_its_namesake_overview_then_its_contents(farmbot_compiled: Path) -> None:
    """'Maintenance' opened with a line of its entries' titles, then '## Maintenance' and the one
    sentence that says what the page is ('In the following sections we'll go over maintenance
    tips …'). That overview now opens the page, whole and cited, under no heading of its own, and
    the contents line follows it; check accepts both."""
    lines = body_lines(_page(farmbot_compiled, "wiki/topics/maintenance.md"))
    lead = list(itertools.takewhile(lambda x: not x.startswith("## "), lines))
    text = [x for x in lead if x.strip() and not x.startswith("# ")]
    assert text[0].startswith("In the following sections we'll go over maintenance tips"), text
    assert "](../../layer1_sources/articles/" in text[0]
    assert text[1].startswith("*On this page: General Maintenance · "), text
    assert "## Maintenance" not in lines


def test_only_a_short_namesake_of_prose_is_a_topic_s_overview() -> None:
    """An overview is a few sentences; a namesake whose opening has steps, a table or many
    sentences keeps its heading and is read where it stands. An opening of prose over sections of
    its own (the 'FarmBot OS' article's, over its install steps) opens the page, and they follow."""
    from wikic.compile.pageplan import overview

    other = _guide_doc("b", "Bed Maintenance", "# Bed Maintenance\n\nClean the bed.\n")
    short = _guide_doc("a", "Maintenance", "# Maintenance\n\nTips that keep it running.\n")
    steps = _guide_doc("a", "Maintenance", "# Maintenance\n\nTips.\n\n1. Wash it.\n2. Dry it.\n")
    parts = _guide_doc(
        "a", "Maintenance", "# Maintenance\n\nTips.\n\n1. Wash it.\n\n## Monthly\n\nWash it.\n"
    )
    opening = _guide_doc(
        "a",
        "Maintenance",
        "# Maintenance\n\nThese tips keep the bot running for years.\n\n## Monthly\n\nWash it.\n",
    )
    long = _guide_doc("a", "Maintenance", "# Maintenance\n\n" + "It runs. " * 6 + "\n")
    assert overview("Maintenance", [short, other]) is short
    assert overview("Maintenance", [short]) is None  # the page is the namesake's alone
    assert overview("Upkeep", [short, other]) is None
    for doc in (steps, parts, long):
        assert overview("Maintenance", [doc, other]) is None, doc.body
    # an opening of prose over sections of its own opens the page, the only entry's too
    assert overview("Maintenance", [opening, other]) is opening
    assert overview("Maintenance", [opening]) is opening


def test_a_page_opens_with_what_it_covers_not_a_count(wiki: Path) -> None:
    """A topic page's lead says what it covers by its subject and its entries' titles ('Watering:
    How long does a full water tank last? · …'), never by counting sources ('6 FAQ entries on
    watering'); a guide's gives its purpose and the sources it quotes ('In this guide: …'), never
    a generic 'across the knowledge base'."""
    topic = re.compile(r"^\*(?!\d+ )(?:.+?: .+|The .+, shown whole\.)\*$")
    types = kinds(wiki)
    for path, text in pages(wiki).items():
        if types.get(path) not in ("topic", "guide"):
            continue
        lead = list(itertools.takewhile(lambda x: not x.startswith("## "), body_lines(text)))
        first = next(line for line in lead if line.strip() and not line.startswith("# "))
        if types[path] == "topic":  # after the overview that opens it, if one does
            first = next((x for x in lead if x.startswith("*") and "](" not in x), first)
            assert topic.match(first), (path, first)
            title = front_matter(text)["title"]
            listed = first.strip("*").partition(": ")[2].split(" · ")
            assert title not in listed, (path, first)  # 'Troubleshooting: Troubleshooting · …'
        else:
            assert "In this guide: " in first and "across the knowledge base" not in first, (path, first)


def test_a_dispute_note_never_cuts_a_procedure_in_two() -> None:
    """'Sources differ' stands at the end of the section whose statement another source disputes,
    not between that statement and the rest of its step."""
    from wikic.compile.draft import Block, Navigation, Sentence
    from wikic.compile.finish import mark_disputes

    said = Sentence("You must use Raspberry Pi Imager.", ())
    blocks = [
        Block("heading", text="Step 2: Write FarmBot OS", level=3),
        Block("para", sentences=(said,)),
        Block("steps", sentences=(Sentence("Choose the OS.", ()), Sentence("Choose the card.", ()))),
        Block("heading", text="Step 3: Boot", level=3),
        Block("para", sentences=(Sentence("Insert the card.", ()),)),
    ]
    home = ("wiki/topics/t.md#reflash", "Etcher in Troubleshooting")
    nav = Navigation(disputes=((said.text, *home, *home),))
    kinds_in_order = [b.kind for b in mark_disputes(blocks, nav)]
    assert kinds_in_order == ["heading", "para", "steps", "links", "heading", "para"]
    # both sides on this page: the note links down to the other's heading when the page shows
    # it (the maintenance guide's lubricant note linked away to a topic), else to its home
    here = ("wiki/guides/g.md#step-3-boot", "Etcher further down this page")
    gone = ("wiki/guides/g.md#step-9-reflash", "Etcher further down this page")
    for link, expected in ((here, here), (gone, home)):
        nav = Navigation(disputes=((said.text, *link, *home),))
        note = next(b for b in mark_disputes(blocks, nav, "wiki/guides/g.md") if b.kind == "links")
        assert note.links == ((expected[0], expected[1]),)


def test_a_dispute_note_names_both_choices(farmbot_compiled: Path) -> None:
    """'Sources differ' says what the other page names and what this section names: the
    troubleshooting page reflashes with Etcher, the FarmBot OS page with Raspberry Pi Imager."""
    notes = {
        p: [x for x in text.splitlines() if x.startswith("Sources differ: ")]
        for p, text in pages(farmbot_compiled).items()
    }
    shown = [x for found in notes.values() for x in found]
    named = re.compile(r"\[[^\]]+ (?:in [^\]]+|further down this page), against [^\]]+ here\]")
    assert shown and all(named.search(x) for x in shown), shown
    trouble = " ".join(notes["wiki/topics/troubleshooting.md"])
    assert "[Raspberry Pi Imager in FarmBot OS, against Etcher here](" in trouble, trouble


def test_a_device_page_leaves_what_is_about_another_device_to_that_device() -> None:
    """On the Genesis page, neither a section headed 'Intro to FarmBot Express' nor the sentence
    'FarmBot Express does not have tracks like FarmBot Genesis does.' is filed: they are about the
    Express. A sentence about the Genesis that names the Express stays."""
    from wikic.compile.gather import about_units, gather
    from wikic.core.markdown import Section

    def doc(n: int, heading: str, text: str):
        from wikic.core.models import SourceDoc

        section = Section(f"s{n}", heading, 2, (heading,), text, 1)
        return SourceDoc("articles", str(n), str(n), f"l/{n}.md", heading, {}, text, "", (section,))

    genesis = {"title": "FarmBot Genesis", "match": ["Genesis"], "others": ["FarmBot Express"]}
    intro = doc(1, "Intro to FarmBot Express", "FarmBot Express is easier to set up than FarmBot Genesis.")
    tracks = doc(
        2,
        "Tracks",
        "FarmBot Express does not have tracks like FarmBot Genesis does. "
        "FarmBot Genesis rides on aluminium tracks, unlike FarmBot Express. "
        "Lower precision is fine because FarmBot Express has no tool changes like FarmBot Genesis. "
        "Unlike FarmBot Express, FarmBot Genesis changes tools.",
    )
    assert [g[1] for g in gather(genesis, [intro, tracks], set())] == ["l/2.md"]
    said = [s.text for b in about_units(tracks, tracks.sections[0], genesis) for s in b.sentences]
    assert said == [
        "FarmBot Genesis rides on aluminium tracks, unlike FarmBot Express.",
        "Unlike FarmBot Express, FarmBot Genesis changes tools.",
    ]
    both = doc(3, "Wi-Fi", "The FarmBot Express and FarmBot Genesis connect to 2.4 GHz Wi-Fi only.")
    assert about_units(both, both.sections[0], genesis)  # about both: it stays


def test_a_run_in_bold_label_stays_bold_instead_of_running_into_its_sentence() -> None:
    """'**We're here to help** Have a question?' read as plain text is one run-on sentence; the
    label keeps its bold (and the check reads the same plain words). A label with its own stop,
    or bold inside a sentence, is left as plain text."""
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    body = (
        "## Help\n\n**We're here to help** Have a question? Email us at contact@example.com.\n\n"
        "**Note:** Keep the tank dry.\n\nWater it **every** day.\n"
    )
    doc = SourceDoc(
        "faq", "1", "1", "layer1_sources/faq/1.md", "Help", {}, body, "sha256:x", tuple(split_sections(body))
    )
    said = [s.text for b in section_content(doc, doc.sections[-1]) for s in b.sentences]
    assert said == [
        "**We're here to help** Have a question?",
        "Email us at contact@example.com.",
        "Note: Keep the tank dry.",
        "Water it every day.",
    ]
    assert [plain_inline(s) for s in said][0] == "We're here to help Have a question?"


def test_signs_that_carry_a_table_s_meaning_are_kept_and_no_break_spaces_read_as_spaces() -> None:
    """A table that says which seeds suit which tool with ':heavy_check_mark:' and ':no_entry:'
    alone lost its every cell when shortcodes were dropped; decoration (':seedling:') still goes,
    and '&nbsp;' in a label reads as a space rather than as the entity."""
    assert plain_inline("|Seedlings |:no_entry: |:heavy_check_mark:|") == "|Seedlings |⛔ |✔|"
    assert (
        plain_inline(":warning: See notes about [vining crops](#vining-crops)")
        == "⚠ See notes about vining crops"
    )
    assert plain_inline(":seedling: Grow") == "Grow"
    assert plain_inline("**Trees&nbsp;and&nbsp;bushes**") == "Trees and bushes"
    assert plain_inline("Salt &amp; pepper") == "Salt &amp; pepper"  # other entities stay as written


def test_a_device_fact_from_a_table_about_something_else_says_what_it_is_about() -> None:
    """A row naming the device in 'What is the size and weight of the shipping box?' gives the
    box's size: it is no fact of the device's, and a table under another heading ('Economies of
    scale') is labelled with it. A table under a heading that names the device, and the
    device's own pages, keep the bare label."""
    from wikic.compile.draft import Citation
    from wikic.compile.librarian.extract import device_facts, in_context
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    body = (
        "# FAQ\n\n## What is the size and weight of the shipping box?\n\n"
        "|Kit|Dimensions|Weight|\n|---|---|---|\n|Express|18cm x 50cm|17kg|\n\n"
        "## Express at a glance\n\n|Model|Area|\n|---|---|\n|Express|3.6m2|\n\n"
        "## Economies of scale\n\n|Model|Cost|\n|---|---|\n|Express|$1,800|\n"
    )
    doc = SourceDoc(
        "faq", "1", "1", "layer1_sources/faq/1.md", "FAQ", {}, body, "sha256:x", tuple(split_sections(body))
    )
    device = {"title": "FarmBot Express", "match": ["Express"]}
    facts = device_facts(device, [doc])
    names = ("Express", "FarmBot Express")
    labelled = [k for k, _, _ in in_context(facts, {doc.path: doc}, names, set())]
    assert labelled == ["Area", "Cost (Economies of scale)"]
    assert [k for k, _, _ in in_context(facts, {doc.path: doc}, names, {doc.path})] == [
        "Dimensions",
        "Weight",
        "Area",
        "Cost",
    ]
    assert all(isinstance(c, Citation) for _, _, c in facts)
    # a heading that only says where a table stands gives way to its document's title, and a
    # step's heading loses its number
    body = (
        "# Axis Setup\n\n## How it works\n\n|Model|Required hardware|\n|---|---|\n|Express|Stall detection|\n\n"
        "## Step 1: Place the calibration objects\n\n|Kit|Calibration object|\n|---|---|\n|Express|A card|\n"
    )
    doc = SourceDoc(
        "a", "2", "2", "layer1_sources/a/2.md", "Axis Setup", {}, body, "x", tuple(split_sections(body))
    )
    labelled = [k for k, _, _ in in_context(device_facts(device, [doc]), {doc.path: doc}, names, set())]
    assert labelled == [
        "Required hardware (Axis Setup)",
        "Calibration object (Place the calibration objects)",
    ]


def test_a_device_fact_from_a_table_of_its_versions_says_which_versions_it_holds_for() -> None:
    """FarmBot's calibration objects differ by kit version: the row naming today's Genesis holds
    for 'Genesis v1.5+' only, and the Genesis page read 'Calibration card with red dots' as if for
    every Genesis; then it gave that row alone, and review O found the v1.3 and v1.4 rows dropped.
    Today's row comes first, then each past version's. A model the table lists in one version
    only keeps the bare value."""
    from wikic.compile.librarian.extract import device_facts

    doc = _guide_doc(
        "3",
        "Camera calibration",
        "# Camera calibration\n\n## Place the objects\n\n|Kit|Calibration object|\n|---|---|\n"
        "|Genesis v1.3|Red rubber caps|\n|Genesis v1.4|Red golf tees|\n"
        "|Genesis v1.5+ and Express v1.0+|A card with red dots|\n",
    )
    genesis = device_facts({"title": "FarmBot Genesis", "match": ["Genesis"]}, [doc])
    express = device_facts({"title": "FarmBot Express", "match": ["Express"]}, [doc])
    assert [(k, v) for k, v, _ in genesis] == [
        (
            "Calibration object",
            "A card with red dots (Genesis v1.5+ and Express v1.0+); Red rubber caps (Genesis v1.3); "
            "Red golf tees (Genesis v1.4)",
        )
    ]
    assert [(k, v) for k, v, _ in express] == [("Calibration object", "A card with red dots")]


def test_the_glossary_says_what_it_is_and_links_each_term_that_has_a_page(wiki: Path) -> None:
    """It opens with what it holds (not with its first term, unbulleted), every term is an item,
    a term is linked to the page titled with it, and no 'definition' is a writer's own story. A
    reference entry (a crop, a plant) is left to its own page and directory: FarmBot's glossary
    was 105 crops and 15 words of the trade."""
    text = pages(wiki).get("wiki/glossary.md")
    if text is None:
        pytest.skip("no glossary in this wiki")
    titles = {p: front_matter(t)["title"] for p, t in pages(wiki).items() if t.startswith("---")}
    body = [line for line in body_lines(text) if line.strip() and not line.startswith("#")]
    assert body[0].startswith("*Terms the sources define")
    terms = [line for line in body if line.startswith("- **")]
    for line in terms:
        m = re.match(r"- \*\*\[([^\]]+)\]\(([^)]+)\)\*\*: ", line)
        if m:
            target = (wiki / "wiki" / m.group(2)).resolve().relative_to(wiki.resolve()).as_posix()
            assert key_of(titles[target]) == key_of(m.group(1)), line
        assert not re.search(r"\b(?:I|my|me)\b", strip_citations(line).split("**: ", 1)[1]), line
        if not m:  # a term no page is titled with
            term = line.split("**", 2)[1]
            assert key_of(term) not in {key_of(t) for t in titles.values()}, line
    assert terms
    kinds_of = {p: front_matter(t)["type"] for p, t in pages(wiki).items() if t.startswith("---")}
    entries = [line for line in terms if "](entries/" in line.split("**: ", 1)[0]]
    assert not entries and "entity" in kinds_of.values(), entries


def test_a_caption_naming_the_device_does_not_bring_its_section_to_the_device_page() -> None:
    """'_Genesis kits only_' under a photo of a LED is a caption: the section is not about the
    Genesis. A sentence naming it is."""
    from wikic.compile.gather import gather
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    body = (
        "# Status LEDs\n\n## Red LED\n\n![led](red.jpg)\n\n_Genesis kits only_\n\n"
        "## Blue LED\n\nThe blue LED of a Genesis kit shows the network state.\n"
    )
    doc = SourceDoc(
        "docs",
        "1",
        "1",
        "layer1_sources/docs/1.md",
        "Status LEDs",
        {},
        body,
        "sha256:x",
        tuple(split_sections(body)),
    )
    found = gather({"title": "FarmBot Genesis", "match": ["Genesis"]}, [doc], set())
    assert [anchor for _, _, anchor in found] == ["blue-led"]


def test_a_table_joins_a_device_page_when_a_row_or_column_is_the_device_s() -> None:
    """A camera test table whose one cell says 'a Genesis XL camera cable' is not the Genesis XL's
    specifications; a table with a row for it is about it."""
    from wikic.compile.gather import about_units
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    body = (
        "# QC\n\n## Camera\n\n| Test | Description |\n|---|---|\n| Function | Connect a Genesis XL camera cable. |\n"
        "| Focus | Take a photo. |\n\n## Sizes\n\n| Model | Area |\n|---|---|\n| Genesis XL | 18m2 |\n| Genesis | 4.5m2 |\n"
    )
    doc = SourceDoc(
        "docs", "1", "1", "layer1_sources/docs/1.md", "QC", {}, body, "sha256:x", tuple(split_sections(body))
    )
    device = {"title": "FarmBot Genesis XL", "match": ["Genesis XL"]}
    camera, sizes = doc.section("camera"), doc.section("sizes")
    assert about_units(doc, camera, device) == []
    assert [b.kind for b in about_units(doc, sizes, device)] == ["table"]


def test_a_font_icon_reads_as_the_sign_it_draws() -> None:
    """'click <i class="fa fa-plus"></i>.' lost its button and read 'click .'; the icons a help
    centre draws with a font keep their sign, and other tags still go."""
    button = "click <span class=\"fb-button fb-blue\"><i class='fa fa-plus'></i></span>."
    assert plain_inline(button) == "click +."
    assert plain_inline("a green <i class='fa fa-check-circle-o'></i> next to it") == "a green ✔ next to it"
    assert plain_inline('<span class="fb-button">Save</span> it') == "Save it"
    assert plain_inline('<i class="fa fa-unheard-of"></i>Done') == "Done"


def test_every_font_icon_the_farmbot_help_centre_draws_has_a_sign() -> None:
    """'press the <span class="fa fa-info-circle"></span> icon.' read 'press the icon.': every
    icon class the FarmBot articles use reads as a sign, none as nothing."""
    if not farmbot_kb.available():
        pytest.skip("FarmBot corpus not available")
    used = set()
    for record in farmbot_kb.load("articles"):
        used |= set(re.findall(r"\bfa-([a-z][a-z0-9-]*)", json.dumps(record)))
    silent = sorted(n for n in used if plain_inline(f"<i class='fa fa-{n}'></i>") == "")
    assert silent == [], silent
    assert plain_inline('press the <span class="fa fa-info-circle"></span> icon.') == "press the ⓘ icon."


def test_a_comparison_of_models_holds_every_model_and_every_column_its_tables_state() -> None:
    """A comparison of sizes listed only the two Express models and left out the cost columns of
    the very table it quoted (whose width an earlier table also gave); every model is a row, the
    other columns of every table that states a compared field come along, a model
    those columns do not describe brings the columns of a table that states it beside another
    model ('Genesis v1.2+<br>Genesis XL v1.2+'), after the models the compared fields describe,
    and a row for one past version ('Genesis v1.2') is no fact about today's model."""
    from wikic.compile.librarian.extract import compared_facts, facts_comparison
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    body = (
        "# Overview\n\n## Intro\n\n|Model|Width|\n|---|---|\n|Express|1.2m|\n|Express (XL)|2.4m|\n\n"
        "## Economies of scale\n\n|Model|Width|Area|Cost|\n|---|---|---|---|\n"
        "|Express|1.2m|3.6m2|~$1,800|\n|Express (XL)|2.4m|14.4m2|~$2,300|\n\n"
        "## How it works\n\n|FarmBot model|Required hardware|\n|---|---|\n"
        "|Genesis v1.2+<br>Genesis XL v1.2+|Rotary encoders|\n|Express v1.0+|Stall detection|\n\n"
        "## Calibration\n\n|Kit|Calibration object|\n|---|---|\n|Genesis v1.2|Red rubber caps|\n"
        "|Genesis v1.5+ and Express v1.0+|Calibration card|\n"
    )
    doc = SourceDoc(
        "a", "1", "1", "layer1_sources/a/1.md", "Overview", {}, body, "sha256:x", tuple(split_sections(body))
    )
    devices = [
        {"title": "FarmBot Express", "match": ["Express"]},
        {"title": "FarmBot Genesis", "match": ["Genesis"]},
        {"title": "FarmBot Express XL", "match": ["Express XL", "Express (XL)"]},
        {"title": "FarmBot Genesis XL", "match": ["Genesis XL"]},
    ]
    columns, rows = compared_facts(devices, [doc], ("Width",))
    assert columns == ["Width", "Area", "Cost", "Required hardware", "Calibration object"]
    table = facts_comparison(rows, tuple(columns))
    cells = {r[0].text: [c.text for c in r[1:]] for r in table.rows}
    # the models the compared field describes first, each group in the order given
    assert list(cells) == ["FarmBot Express", "FarmBot Express XL", "FarmBot Genesis", "FarmBot Genesis XL"]
    assert cells["FarmBot Express XL"][:3] == ["2.4m", "14.4m2", "~$2,300"]
    # the calibration table has a row for a past Genesis: the card is said for the versions it is
    # for, and the past version's object follows
    assert cells["FarmBot Genesis"] == [
        "—",
        "—",
        "—",
        "Rotary encoders",
        "Calibration card (Genesis v1.5+ and Express v1.0+); Red rubber caps (Genesis v1.2)",
    ]
    assert cells["FarmBot Express"][-1] == "Calibration card"
    assert cells["FarmBot Genesis XL"] == ["—", "—", "—", "Rotary encoders", "—"]


def test_a_heading_a_reader_scans_carries_no_source_title(wiki: Path) -> None:
    """'Step 8: Flash FarmBot OS to the microSD card (Plug Everything In)': on guides and device
    pages the quoted section keeps its own heading, and its source's title goes on the trail below
    it ('From: Assembly › Plug Everything In'), which links to where it is shown whole."""
    titles = {d.title for d in load_layer1(wiki)}
    types = kinds(wiki)
    long_, trails = [], 0
    for path, text in pages(wiki).items():
        if types.get(path) not in ("guide", "device"):
            continue
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"^#{3,6} (.+) \((.+)\)$", line)
            if m and m.group(2) in titles:
                long_.append((path, line))
            trails += line.startswith("From: [") and lines[i - 2].startswith("#")
    assert long_ == []
    assert trails > 0


def test_a_line_break_reads_as_one_space() -> None:
    """'AC 100-265V<br>50/60Hz' is two values, not '100-265V50/60Hz'; a paragraph break in a cell
    ('housing.<br><br>Mount') is one space too, so the cell reads as the cited section does."""
    assert plain_inline("AC 100-265V<br>50/60Hz") == "AC 100-265V 50/60Hz"
    assert plain_inline("housing.<br><br>Mount <BR/> it") == "housing. Mount it"


def test_a_procedure_or_answer_about_the_device_is_quoted_whole_and_a_story_only_where_it_names_it() -> None:
    """A source about the device (a field lists its id, or its title names it) gives its
    procedures and answers whole: 'How do I clean the pump?' on the Canopy 12 page is the whole
    answer, not its one sentence naming the Canopy 12. A story about it gives what it says of
    the device, not its teacher's introduction."""
    from wikic.compile.gather import about_device, about_units
    from wikic.core.markdown import split_sections
    from wikic.core.models import SourceDoc

    def doc(title: str, meta: dict, body: str) -> SourceDoc:
        return SourceDoc(
            "d", "1", "1", "layer1_sources/d/1.md", title, meta, body, "x", tuple(split_sections(body))
        )

    device = {"id": "canopy-12", "title": "Canopy 12", "match": ["Canopy 12"], "others": ["Grove 6"]}
    faq = doc(
        "How do I clean the pump?",
        {"products": ["grove-6", "canopy-12"]},
        "# How do I clean the pump?\n\nThe Canopy 12 pump sits under a screen. Unplug the garden.\n\n"
        "Pull the screen up. Rinse it.\n",
    )
    story = doc(
        "A classroom garden",
        {"products": ["canopy-12"]},
        "# A classroom garden\n\nI teach science. We bought a Canopy 12 for the room.\n\n"
        "Six months later I added a Canopy 12 to my shelf. I set my Canopy 12 to 14 hours of light.\n",
    )
    other = doc("Meet the Grove 6", {}, "# Meet the Grove 6\n\nThe Grove 6 and Canopy 12 share a pump.\n")
    assert about_device(faq, device) and about_device(story, device) and not about_device(other, device)
    said = [s.text for b in about_units(faq, faq.sections[0], device, "FAQs") for s in b.sentences]
    assert said == [
        "The Canopy 12 pump sits under a screen.",
        "Unplug the garden.",
        "Pull the screen up.",
        "Rinse it.",
    ]
    for facet in ("Use", "Set-up"):  # a writer's own set-up is a story, not a procedure
        told = [s.text for b in about_units(story, story.sections[0], device, facet) for s in b.sentences]
        # an episode of the writer's ('I added a Canopy 12 …', 'We bought a Canopy 12 …') is left out,
        # a setting they give is not
        assert told == ["I set my Canopy 12 to 14 hours of light."]
    # on the example wiki: the pump-cleaning answer and the algae procedure, whole
    canopy = (REPO / "wiki/devices/canopy-12.md").read_text()
    for sentence in ("Push the screen back until it clicks.", "Unplug the garden and empty the tank."):
        assert sentence in canopy
    assert "I teach fifth grade science" not in canopy


def test_a_step_shown_apart_from_its_procedure_is_headed_without_its_number(wiki: Path) -> None:
    """'Step 4: Check for blocked ports' quoted alone on a device page or a guide reads 'Check
    for blocked ports': the number placed it in a procedure the page does not show. A section
    of a source filed under troubleshooting is troubleshooting on a device page."""
    from wikic.core.markdown import unnumbered

    assert unnumbered("Step 4: Check for blocked ports") == "Check for blocked ports"
    assert unnumbered("2. Lubricate the leadscrew") == "Lubricate the leadscrew"
    assert unnumbered("Sequence 1: Plant one seed") == "Sequence 1: Plant one seed"
    assert unnumbered("2024 results") == "2024 results"
    types = kinds(wiki)
    alone = []
    for path, text in pages(wiki).items():
        if types.get(path) not in ("guide", "device"):
            continue
        lines = text.split("\n")
        for i, line in enumerate(lines):  # a heading followed by its source trail stands alone
            heading = line.lstrip("# ")
            trail = i + 2 < len(lines) and lines[i + 2].startswith("From: [")
            if line.startswith("#") and trail and unnumbered(heading) != heading:
                alone.append((path, line))
    assert alone == []
    if wiki.name != REPO.name:
        genesis = pages(wiki).get("wiki/devices/farmbot-genesis.md", "")
        trouble = genesis.partition("## Troubleshooting the FarmBot Genesis")[2].partition("\n## ")[0]
        assert "### Check for blocked ports" in trouble


def test_every_index_keyword_is_a_word_the_page_shows(wiki: Path) -> None:
    """A keyword is a word a reader finds on the page (or in its title), never a word of a link's
    target: 'entries' was a keyword of every directory, mined from '../entries/…'."""
    missing = []
    for path, text in pages(wiki).items():
        if path.startswith("wiki/index") or path == "wiki/log.md":
            continue
        meta = front_matter(text)
        shown = set(words(" ".join(plain_inline(line) for line in body_lines(text)) + " " + meta["title"]))
        for keyword in meta.get("keywords") or ():
            missing += [(path, keyword) for w in words(keyword) if w not in shown]
    assert missing == []


def test_a_repeat_another_sentence_refers_back_to_stays() -> None:
    """Two sections that open with the same sentence ('This white LED (Genesis kits only) is user
    controllable.'): the second copy went, and left 'It is connected to pin 13.' pointing at
    nothing. A repeat the next sentence refers back to stays; one nothing refers to still goes."""
    from wikic.compile.draft import Block, Citation, Sentence
    from wikic.compile.finish import merge_repeats

    a, b = Citation("layer1_sources/a/1.md", "led-3"), Citation("layer1_sources/a/1.md", "led-4")
    same = "This white LED (Genesis kits only) is user controllable."
    blocks = [
        Block("heading", text="LED 3", level=2),
        Block("para", sentences=(Sentence(same, (a,)), Sentence("It is connected to pin 12.", (a,)))),
        Block("heading", text="LED 4", level=2),
        Block("para", sentences=(Sentence(same, (b,)), Sentence("It is connected to pin 13.", (b,)))),
        Block("heading", text="LED 5", level=2),
        Block("para", sentences=(Sentence(same, (b,)), Sentence("Pin 14 drives the buzzer.", (b,)))),
    ]
    said = [[s.text for s in x.sentences] for x in merge_repeats(blocks) if x.kind == "para"]
    assert said == [
        [same, "It is connected to pin 12."],
        [same, "It is connected to pin 13."],
        ["Pin 14 drives the buzzer."],
    ]


def test_a_repeat_that_counts_on_from_the_sentence_before_it_stays() -> None:
    """Two articles say 'There are two ways to move FarmBot to …' (a point, a weed) and both go on
    'The second way is from sequences.': the weed's copy went, so its section promised two ways
    and gave one. A repeat that counts on stays where it is counted."""
    from wikic.compile.draft import Block, Citation, Sentence
    from wikic.compile.finish import merge_repeats

    a, b = Citation("layer1_sources/a/point.md", "moving"), Citation("layer1_sources/a/weed.md", "moving")
    second = "The second way is from sequences."
    blocks = [
        Block("heading", text="Points", level=2),
        Block(
            "para",
            sentences=(Sentence("There are two ways to move to a point.", (a,)), Sentence(second, (a,))),
        ),
        Block("heading", text="Weeds", level=2),
        Block(
            "para",
            sentences=(Sentence("There are two ways to move to a weed.", (b,)), Sentence(second, (b,))),
        ),
        Block("heading", text="Plants", level=2),
        Block("para", sentences=(Sentence("Plants grow.", (b,)), Sentence("Sequences move the bot.", (b,)))),
        Block("para", sentences=(Sentence("Sequences move the bot.", (a,)),)),
    ]
    said = [[s.text for s in x.sentences] for x in merge_repeats(blocks) if x.kind == "para"]
    assert said[1] == ["There are two ways to move to a weed.", second]
    assert said[3:] == []  # a plain repeat still goes (its citation joins the first copy)


def test_an_entry_of_fields_only_says_where_it_is_filed_instead_of_repeating_its_facts(
    farmbot_planned: Path,
) -> None:
    """A crop whose record has fields and no text opens with where the plan files it (the
    schema's words, shown as such), not with its first three facts again above the fact list;
    a crop with a description still opens with it."""
    basil = body_lines(_page(farmbot_planned, "wiki/entries/basil.md"))
    opening = [x for x in basil[: basil.index("## Details")] if x.strip() and not x.startswith("# ")]
    assert opening == ["*One of the crops listed under Full sun: what its record says.*"]
    apple = body_lines(_page(farmbot_planned, "wiki/entries/apple.md"))
    first = next(x for x in apple if x.strip() and not x.startswith("#"))
    assert first.startswith("The apple is a deciduous tree"), first


def test_an_entry_opens_with_its_record_s_description_once(farmbot_planned: Path) -> None:
    """A crop's description (a long text field, which transform writes as a 'Description'
    section) opens its page whole and unheaded, above its facts: no lead sentence lifted out of
    it to be read again a few lines down (224 of 240 crop pages did)."""
    types = kinds(farmbot_planned)
    for path, text in pages(farmbot_planned).items():
        if types.get(path) != "entity":
            continue
        lines = [x for x in body_lines(text) if "layer1_sources" in x]
        assert len(lines) == len(set(lines)), (path, [x for x, n in Counter(lines).items() if n > 1])
    oyster = body_lines(_page(farmbot_planned, "wiki/entries/pink-oyster-mushroom.md"))
    said = [x for x in oyster if x.strip() and not x.startswith("# ")]
    assert said[0].startswith("Pink Oyster mushrooms are a member of the Oyster family"), said[0]
    assert "## Description" not in oyster
    facts = next(i for i, x in enumerate(oyster) if x.startswith("| Binomial name | Pleurotus djamor"))
    assert oyster.index(said[2]) < facts  # its three sentences, then its facts


def test_a_list_of_article_titles_links_each_to_where_it_is_shown() -> None:
    """A list of other articles by title links each item to where that article is shown (on the
    same page, its heading). A one-word item is a word of a list, never a title. (FarmBot's
    'What's next?' lists, links only, are navigation and no page quotes them.)"""
    from wikic.compile.draft import Block, Citation, Draft, Navigation, Sentence, render_body

    titles = unique_titles([("Water", Target("a")), ("Support Policy", Target("b")), ("Reset", Target("c"))])
    assert titles == {key_of("Support Policy"): Target("b")}
    body = "Read on:\n\n - [Support Policy](other/support-policy.md)\n - Water\n - Support Policy and more\n"
    assert listed_titles(body, titles) == {key_of("Support Policy")}
    cite = (Citation("layer1_sources/articles/1.md", "read-on"),)
    nav = Navigation(
        titled=((key_of("Accessing Configurator"), "wiki/topics/troubleshooting.md#accessing-configurator"),)
    )
    items = (Sentence("Accessing Configurator", cite), Sentence("Water", cite))
    text = render_body(
        Draft("T", "", (), (Block("bullets", sentences=items),)), "wiki/topics/troubleshooting.md", nav
    )
    assert "- [Accessing Configurator](#accessing-configurator) [articles/1]" in text
    assert "- Water [articles/1]" in text


def test_a_device_page_takes_from_a_person_s_story_only_what_it_says_of_the_device() -> None:
    """A teacher's year with a Canopy 12 is told as 'I' in its opening, and as 'we' after it:
    'Setting it up' ('We mounted the Canopy 12 on the wall next to the reading corner …') is an
    episode of that story, no set-up of the Canopy 12. A post that only quotes a customer saying
    'I' ('"I love it, but I don't have room for it."') is no story: its 'What to grow' stays."""
    canopy = _page(REPO, "wiki/devices/canopy-12.md")
    assert "We mounted the Canopy 12 on the wall" not in canopy
    sprout = _page(REPO, "wiki/devices/sprout-3.md")
    assert "We tuned the pod catalogue for the Sprout 3's height" in plain_inline(sprout)


def test_a_device_page_leaves_out_a_section_that_says_again_what_its_specifications_say() -> None:
    """The launch post's 'Built for tall plants' ('The Canopy 12 is a freestanding cabinet
    measuring 62 x 34 x 135 cm …') stood under the specifications that state each of its
    sentences: the dimensions were on the page four times. A section that says something more
    ('Price and availability': a year longer than the countertop gardens) stays."""
    canopy = _page(REPO, "wiki/devices/canopy-12.md")
    assert "### Built for tall plants" not in canopy and "### Bigger tank, smarter app" not in canopy
    assert "62 x 34 x 135" in canopy  # the specifications say it
    assert "### Price and availability" in canopy


def test_a_device_page_quotes_no_sentence_that_only_announces_what_its_source_goes_on_to_say(
    farmbot_compiled: Path,
) -> None:
    """'In these instructions we show you how to build a simple but sturdy bed suited for FarmBot
    Express.' stood alone on the Express page, the instructions on their home; and the Genesis
    page's 'Troubleshooting' was 'Also make sure to check out the hardware troubleshooting guides
    for Farmbot Genesis and Express.'"""
    assert points_ahead("In this guide, you will learn how to calibrate the camera.")
    assert not points_ahead("In this case the pump stops.")
    for device in ("farmbot-express", "farmbot-genesis"):
        text = plain_inline(_page(farmbot_compiled, f"wiki/devices/{device}.md"))
        assert "In these instructions we show you" not in text
        assert "check out the hardware troubleshooting guides" not in text


def test_a_device_page_lists_what_is_said_in_passing_and_leaves_other_models_stories_alone() -> None:
    """On the Grove 6 page: a sentence a source says of it in passing is a bullet under 'Other
    mentions' (with the pages where those sources stand), not a heading, a trail and a link of
    its own for one line; 'Meet the Canopy 12' (a post about another model) gives it nothing,
    nor does a release note naming every model ('… to all Sprout 3, Grove 6 and Canopy 12
    gardens')."""
    text = _page(REPO, "wiki/devices/grove-6.md")
    using = text.partition("## Using the Grove 6")[2].partition("\n## ")[0]
    passing = using.partition("### Other mentions")[2]
    assert passing.count("\n- ") >= 3 and "In context: [" in passing
    for block in using.split("\n### ")[1:]:  # every section quoted under its own heading says more
        said = [x for x in block.splitlines() if "layer1_sources" in x]
        assert len(said) > 1 or block.startswith("Other mentions"), block
    body = text.split("---\n", 2)[2]
    assert "blog/meet-canopy-12" not in body
    assert "starts rolling out today to all" not in body


def test_a_guide_s_keywords_are_the_words_it_is_asked_by() -> None:
    """The index line of a guide offers the words of its query and purpose that the page shows
    ('vacation', 'trip'), not words its quoted sections happen to use ('culprit', 'guarantee')."""

    def keys(path: str) -> list[str]:
        return front_matter(_page(REPO, path))["keywords"]

    holiday = keys("wiki/guides/going-on-holiday.md")
    assert {"vacation", "trip", "away"} <= set(holiday), holiday
    first = keys("wiki/guides/first-week.md")
    assert {"germination", "pods"} <= set(first) and not {"culprit", "guarantee"} & set(first), first


def test_a_superseded_note_quotes_what_changed_not_the_labels_it_was_filed_by() -> None:
    """The dated note of an older FAQ version quotes what it said that the current one does not;
    of its fields, only those that changed and say something ('Products: grove-6' when vacation
    mode was the Grove 6's alone), never its category again or its search tags."""
    notes = [
        line
        for path, text in pages(REPO).items()
        if path.startswith("wiki/topics/")
        for line in body_lines(text)
        if line.startswith("> ")
    ]
    assert notes and not [x for x in notes if "**Category:**" in x or "**Tags:**" in x]
    assert any(x.startswith("> **Products:** grove-6 [") for x in notes)


def test_a_change_is_quoted_with_the_sentence_it_leans_on() -> None:
    """'That replaces the 45-day window …' stated the change without saying what replaced it; the
    change list quotes the sentence before it too, so the entry says '60 days'."""
    line = next(x for x in body_lines(_page(REPO, "wiki/changes.md")) if x.startswith("- **2026-01-15**"))
    said = strip_citations(line).partition(": ")[2]
    assert said.startswith("From today") and "60 days" in said and "That replaces the 45-day window" in said


def test_the_change_list_opens_with_every_fact_that_changed() -> None:
    """Its first lines named only the newest change (the low-water alert); a reader scanning the
    top of the page now finds each fact, its values and when it last changed."""
    text = _page(REPO, "wiki/changes.md").split("---\n", 2)[2]
    opening = strip_citations(text.split("\n## ", 1)[0])
    headings = re.findall(r"^## (.+?): ", text, re.M)  # '## 30 days → 45 days → 60 days: Our 2026 …'
    values = [h for h in headings if "→" in h]
    assert len(values) >= 3 and all(v in opening for v in values), (values, opening)


def test_a_guide_quotes_no_entry_it_does_not_name() -> None:
    """'Fixing common problems' took the 'Common problems' of a viola and a kale (reference
    entries, about themselves) and left out the FAQ on tall, thin seedlings; an entry's section
    joins a guide only when the guide names the entry."""
    text = _page(REPO, "wiki/guides/fix-common-problems.md").split("---\n", 2)[2]
    assert "layer1_sources/plants/" not in text
    assert "faq/leggy-seedlings" in text


def test_a_field_naming_entries_or_planters_links_them() -> None:
    """A plant's companions and the planters it suits are fields ('thai-basil, dill',
    'grove-6, canopy-12') that name pages of the wiki: they link to them, as the same names in a
    sentence do (48 of 53 plant pages named their planters without a link)."""
    text = _page(REPO, "wiki/entries/cilantro.md")
    assert "| Companions | [Thai Basil](thai-basil.md), dill, [Spinach](spinach.md) [" in text
    assert (
        "| Suitable devices | [Grove 6](../devices/grove-6.md), [Canopy 12](../devices/canopy-12.md) ["
        in text
    )


def test_a_page_s_own_name_keeps_a_shorter_name_inside_it_from_linking(farmbot_compiled: Path) -> None:
    """On the Express XL's page 'Express (XL)' linked its 'Express' to the Express page, and on
    Belgian Endive's page 'Belgian Endive' linked its 'Endive': a page's own names link nowhere,
    and no shorter name inside them links either."""
    xl = _page(farmbot_compiled, "wiki/devices/farmbot-express-xl.md")
    assert "[Express](farmbot-express.md) (XL)" not in xl and "Express (XL)" in xl
    endive = _page(farmbot_compiled, "wiki/entries/belgian-endive.md")
    assert "Belgian [Endive]" not in endive and "not to be confused with [Endive](endive.md)" in endive


def _guide_doc(name: str, title: str, body: str) -> SourceDoc:
    return SourceDoc(
        "articles",
        name,
        name,
        f"layer1_sources/articles/{name}.md",
        title,
        {},
        body,
        "",
        tuple(split_sections(body)),
    )


def test_a_section_going_on_from_the_one_before_is_read_after_it_and_a_contents_list_first() -> None:
    """A section opening 'As before, …' stays after its document's section before it, in that
    one's phase (the holiday guide read 'As before, the light runs at 70%' under another heading,
    after the tank and the plant food); a unit whose list items are other units' titles is their
    contents and is read before them ('Maintenance: What's next? - General Maintenance …' came
    after the sections it lists)."""
    faq = _guide_doc(
        "faq",
        "How long can it run?",
        "# How long can it run?\n\nUp to 21 days.\n\n## How it stretches\n\nAs before, the light dims."
        "\n\n## Before you leave\n\nFill the tank to the top.\n",
    )
    clean = _guide_doc(
        "clean", "General Maintenance", "# General Maintenance\n\nWipe the rails with a damp rag.\n"
    )
    hub = _guide_doc(
        "hub",
        "Maintenance",
        "# Maintenance\n\nTips that keep the machine working.\n\n## What's next?\n\n- General Maintenance\n- Storing\n",
    )
    units = [
        [Candidate(faq, 2), Candidate(faq, 0)],  # chosen for "Before you leave" first
        [Candidate(clean, 0)],
        [Candidate(faq, 1)],
        [Candidate(hub, 0), Candidate(hub, 1)],
    ]
    placed = [(c.doc.id, c.index, phase) for c, phase in order(units)]
    faq_rows = [(i, p) for d, i, p in placed if d == "faq"]
    assert [i for i, _ in faq_rows] == [0, 1, 2] and len({p for _, p in faq_rows}) == 1
    ids = [d for d, _, _ in placed]
    assert ids.index("hub") < ids.index("clean")


def test_a_short_section_sending_the_reader_to_a_procedure_the_guide_quotes_is_left_out() -> None:
    """'Remove the card and follow our FarmBot OS installation instructions' after FarmBot OS's
    own steps only points at what the guide already holds; a list naming it is matter of its own."""
    steps = "".join(f"## Step {n}: Do part {n}\n\nDo part {n} of the install.\n\n" for n in (1, 2, 3))
    install = _guide_doc("os", "FarmBot OS", f"# FarmBot OS\n\n{steps}")
    pointer = _guide_doc(
        "box",
        "Plug Everything In",
        "# Plug Everything In\n\nRemove the card and follow our FarmBot OS installation instructions.\n"
        "Then put the card back.\n",
    )
    problems = _guide_doc(
        "why",
        "No configurator",
        "# No configurator\n\n- You flashed the wrong FarmBot OS.\n- You are out of range.\n",
    )
    procedure = [Candidate(install, i) for i in (1, 2, 3)]
    kept = without_pointers([procedure, [Candidate(pointer, 0)], [Candidate(problems, 0)]])
    assert [u[0].doc.id for u in kept] == ["os", "why"]
    assert without_pointers([[Candidate(pointer, 0)]]) == [[Candidate(pointer, 0)]]  # nothing to point at


def test_a_section_another_document_already_says_sentence_for_sentence_is_left_out_of_a_guide() -> None:
    """The holiday guide told 21-day vacation mode twice: the app 5.0 FAQ, then the app 5.0 release
    post saying the same days, pump cycle and daily summary. Of two that say each other, the later
    stays; the post's section that tells where to turn vacation mode on stays too."""
    from wikic.compile.guides import without_restatements

    faq = _guide_doc(
        "faq",
        "How long can vacation mode run?",
        "# How long can vacation mode run?\n\nVacation mode now runs for up to 21 days, up from 14.\n"
        "The pump runs for 5 minutes every 45 minutes instead of every 30.\n"
        "While you are away the app sends a daily summary of the water level.\n",
    )
    post = _guide_doc(
        "post",
        "App 5.0",
        "# App 5.0\n\n## Vacation mode: up to 21 days\n\nVacation mode can now run for up to 21 days, up from 14.\n"
        "While you are away the pump runs for 5 minutes every 45 minutes instead of every 30.\n"
        "While you are away you now get a daily summary of the water level.\n\n"
        "## Turning it on\n\nTurn on vacation mode under Garden > Vacation before you leave.\n",
    )
    units = [[Candidate(faq, 0)], [Candidate(post, 1)], [Candidate(post, 2)]]
    assert [(u[0].doc.id, u[0].index) for u in without_restatements(units)] == [("post", 1), ("post", 2)]
    longer = _guide_doc("faq2", "Before a trip", faq.body + "Fill the tank to the MAX line before you go.\n")
    units = [[Candidate(longer, 0)], [Candidate(post, 1)], [Candidate(post, 2)]]  # it says more: it stays
    assert [(u[0].doc.id, u[0].index) for u in without_restatements(units)] == [("faq2", 0), ("post", 2)]
    other = _guide_doc("other", "Sprout 3", "# Sprout 3\n\nVacation mode can run for up to 10 days.\n")
    assert len(without_restatements([[Candidate(faq, 0)], [Candidate(other, 0)]])) == 2  # another number


def _defined(body: str) -> list[str]:
    """The terms the glossary would define from one document of ``body``."""
    doc = _guide_doc("doc", "A document", body)
    said = {doc.path: [(s.anchor, t) for s in doc.sections for t in split_sentences(s.text)]}
    return [d[0] for d in pageplan.definitions([doc], said)]


def test_a_sentence_that_judges_or_ranks_is_no_glossary_definition() -> None:
    """'Bolting is the number one complaint …', 'Chives are a great companion plant …' and 'Google
    Chrome is the preferred … browser' say how good, common or chosen a thing is, not what it is, and 'Kale is a heavy feeder, so keep up the
    dose' runs on into advice; 'Chervil is a delicate French herb' defines."""
    body = (
        "# Growing\n\nChervil is a delicate French herb with a mild taste of anise.\n"
        "Bolting is the number one complaint of growers in a hot summer.\n"
        "Chives are a great companion plant for carrots and tomatoes.\n"
        "Kale is a heavy feeder, so keep up the fortnightly nutrient dose.\n"
        "Basil is the plant most people start with.\n"
        "Google Chrome is the preferred web app browser on every computer.\n"
    )
    assert _defined(body) == ["Chervil"]


def test_a_definition_that_runs_on_after_a_colon_into_a_tip_is_left_out() -> None:
    """'Mint: a heavy root grower: after three to four months, check the tank …' was a glossary
    line; a colon that says what the thing holds ('three pods on a slim base') stays."""
    body = (
        "# Growing\n\nMint is a heavy root grower: after three months, check the tank for a root mat.\n"
        "Sprout 3 is the smallest garden we make: three pods on a slim base, a desk or a sill.\n"
    )
    assert _defined(body) == ["Sprout 3"]


def test_a_figure_set_against_a_plain_statement_is_no_glossary_definition() -> None:
    """'FarmBot is a farmer that works and lives all day and night outside …' was the glossary's
    definition of FarmBot; the next sentence says 'At the same time, FarmBot is a precision CNC
    machine …': the source says what it is twice, the first time as a figure."""
    body = (
        "# Keep it clean\n\nMowbot is a farmer that works and lives all day outside in the rain.\n"
        "At the same time, Mowbot is a precision machine with parts that move to the millimetre.\n"
        "Chervil is a delicate French herb with a mild taste of anise.\n"
        "Chervil grows best in the shade of taller plants in the garden.\n"
    )
    assert _defined(body) == ["Chervil"]


def test_a_sentence_said_in_passing_joins_a_device_page_only_when_it_reads_alone() -> None:
    """'It does not cover cracks …' (the warranty, two sentences up) and 'I cook a lot …' are no
    mention a reader can use away from their section; 'The Sprout 3 has no pump' and a story's
    fact ('…, so I set the Sprout 3 to a 12-hour schedule') are."""
    assert stands_alone("The Sprout 3 has no pump at all.", "Sprout 3")
    assert stands_alone("Microgreens need 12 hours of light, so I set the Sprout 3 to 12 hours.", "Sprout 3")
    assert not stands_alone("It does not cover cracks or consumables such as Sprout 3 wicks.", "Sprout 3")
    assert not stands_alone("I cook a lot, so my Sprout 3 has become a microgreens station.", "Sprout 3")
    assert stands_alone("This garden fits a desk, says the Sprout 3 spec.", "Sprout 3 garden")
    # 'this' after an opening phrase points back too, and an aside in brackets has no subject
    assert not stands_alone("For Sprout 3 kits, this means the wick must be changed.", "Sprout 3")
    assert not stands_alone("(Only available for Sprout 3 and Grove 6 gardens).", "Sprout 3")
    assert stands_alone("For the Sprout 3, the tank holds 1.2 litres.", "Sprout 3")
    # what a sentence refers to may be in the ones around it: 'these sequences', '… for it.', 'the
    # example below', or it is a fragment; 'above the plant' and 'those of lettuce' are no reference
    assert not stands_alone("You decide to grow 10 basil plants with these sequences on March 1st.", "basil")
    assert not stands_alone("Taller plants such as Genovese basil are not offered for it.", "Genovese basil")
    assert not stands_alone("In the example below we've selected Basil and Spinach as the Types.", "Basil")
    assert not stands_alone("you may want to wash the basil first.", "basil")
    assert not stands_alone("In this example we filter by Type so that only basil is selected.", "basil")
    assert not stands_alone(
        "Plants taller than 30 cm, such as basil, are not offered for this model.", "basil"
    )
    assert not stands_alone("Now imagine you want to grow 10 more basil plants.", "basil")
    assert stands_alone("Move above the basil plant by using a Z-offset.", "basil")
    assert stands_alone("Small seeds such as those of basil need a small needle.", "basil")


def test_an_entry_quotes_only_mentions_that_read_on_their_own(wiki: Path) -> None:
    """'Elsewhere in the knowledge base' is sentences of other sources that name the entry: a
    reader reads them apart from their sections, so each reads on its own."""
    quoted = []
    for text in pages(wiki).values():
        if "\n## Elsewhere in the knowledge base\n" in text:
            part = text.split("\n## Elsewhere in the knowledge base\n", 1)[1].split("\n## ", 1)[0]
            quoted += [strip_citations(line[2:]) for line in part.splitlines() if line.startswith("- ")]
    assert len(quoted) >= 10
    assert all(stands_alone(q, "") for q in quoted), [q for q in quoted if not stands_alone(q, "")]


def test_a_procedure_on_a_guide_keeps_its_prerequisites_and_the_heading_over_its_parts(
    farmbot_compiled: Path,
) -> None:
    """'Plant Your First Garden' opens with the prerequisites to meet first, and its 'Step 1: Add
    plants to your map' has no text of its own, only parts ('Select crops' …): the guide ran
    'Select crops → Step 2' without either."""
    text = _page(farmbot_compiled, "wiki/guides/planting-seeds.md")
    lines = body_lines(text)
    heads = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
    assert heads.index("Step 1: Add plants to your map") + 1 == heads.index("Select crops")
    assert "FarmBot must be completely assembled, powered up, and connected to the web app" in text
    assert text.index("completely assembled") < text.index("Step 1: Add plants to your map")
    # an opening that lists the document's own sections is their contents, not what to have first:
    # 'three main considerations: 1. Plant size and shape …' came over the one it quoted
    assert "three main considerations" not in text or "Plant size and shape" in heads


def test_a_kept_sentence_keeps_the_lead_in_and_the_list_it_introduces() -> None:
    """'Connect the peripheral cables to the Farmduino Express board. From left to right:' and its
    list: the device page kept the first sentence alone, and the reader never learnt which cable
    goes where. A sentence about a picture the page does not show is left out."""
    from wikic.compile.gather import about_units

    body = (
        "# Step 7: Plug everything in\n\nThe diagram below illustrates the FarmBot Express schematic.\n\n"
        "Connect the peripheral cables to the Farmduino Express board. "
        "From left to right:\n\n* Vacuum pump cable to the VACUUM connector.\n* LED strip to LIGHTING.\n"
    )
    doc = _guide_doc("plug", "Plug Everything In", body)
    units = about_units(doc, doc.sections[0], {"title": "FarmBot Express", "match": ["Express"]})
    assert [b.kind for b in units] == ["para", "bullets"]
    assert units[0].sentences[-1].text == "From left to right:"
    assert not any("diagram" in s.text for b in units for s in b.sentences)  # a picture not shown


def test_a_name_of_several_words_links_however_many_sources_use_it() -> None:
    """'Genovese Basil' is named by more than a tenth of the example's documents (the companions of
    many plants): that makes a one-word name ('water') too common to link, not a name of several
    words, which stayed plain in the jalapeño's companions and the herb comparison."""
    text = _page(REPO, "wiki/entries/jalapeño-pepper.md")
    companions = next(line for line in body_lines(text) if line.startswith("| Companions"))
    assert "[Genovese Basil](genovese-basil.md)" in companions


def test_the_glossary_lists_the_words_of_the_trade_before_the_subjects_with_pages(wiki: Path) -> None:
    """A reader looking up 'Configurator' or 'Pod Club' found it among a hundred crops, each a
    definition its own page opens with: terms without a page come first, each group A to Z."""
    text = pages(wiki).get("wiki/glossary.md")
    if text is None:
        pytest.skip("no glossary in this wiki")
    items = [line for line in body_lines(text) if line.startswith("- **")]
    linked = [line.startswith("- **[") for line in items]
    assert linked == sorted(linked), "a term without a page after one with a page"
    for group in ([x for x, k in zip(items, linked) if not k], [x for x, k in zip(items, linked) if k]):
        names = [plain_inline(x.split("**")[1]).lower() for x in group]
        assert names == sorted(names)


def test_who_wrote_a_post_is_said_once_for_the_page_not_after_every_post(wiki: Path) -> None:
    """An 'Author | Hannah Lindqvist' fact table closed every blog post on a topic page: who wrote
    each is a column of the page's one 'Filed under' table."""
    for path, text in pages(wiki).items():
        if "/topics/" not in path:
            continue
        body = text.split("## Filed under")[0]
        assert not re.search(r"^\| Author \|", body, re.MULTILINE), path


def test_a_value_every_entry_shares_is_filed_once_for_the_page(wiki: Path) -> None:
    """'Filed under' repeated 'troubleshooting' on all seven rows of the troubleshooting page, and
    'express | v1.1/bom/fasteners-and-hardware' on all twelve of the screws page: a value every
    entry shares is one row for the page; no per-entry column repeats one value."""
    shared = 0
    for path, text in pages(wiki).items():
        if "\n## Filed under\n" not in text:
            continue
        part = text.split("\n## Filed under\n", 1)[1].split("\n## ", 1)[0]
        for table in re.findall(r"((?:^\|.*\n)+)", part, re.MULTILINE):
            lines = table.strip().splitlines()
            header = [c.strip() for c in lines[0].strip("|").split("|")]
            rows = [[strip_citations(c).strip() for c in x.strip("|").split("|")] for x in lines[2:]]
            if header[0] == "Field":
                shared += 1
                continue
            for i in range(1, len(header)):
                assert len(rows) < 2 or len({r[i] for r in rows}) > 1, (path, header[i])
    assert shared


def test_a_linked_from_list_cut_short_says_so(wiki: Path) -> None:
    """The Grove 6 page listed 8 of the 48 pages linking to it under a plain 'Linked from': a list
    cut short says how many it shows of how many; a short one lists them all."""
    cut = 0
    for path, text in pages(wiki).items():
        found = re.search(
            r"^## Linked from(?: \(the closest (\d+) of (\d+) pages\))?\n\n((?:- .*\n?)+)", text, re.M
        )
        if not found:
            continue
        items = found.group(3).strip().splitlines()
        if found.group(1):
            cut += 1
            assert len(items) == int(found.group(1)) < int(found.group(2)), path
        else:
            assert len(items) <= 10, path
    assert cut


def test_see_also_offers_only_pages_the_page_does_not_link_already(wiki: Path) -> None:
    """The Sprout 3's 'See also' repeated the Grove 6, the Canopy 12 and two plants its text links,
    and a directory's repeated its first three entries: it now lists what the page does not."""
    for path, text in pages(wiki).items():
        if "\n## See also\n" not in text:
            continue
        body, _, rest = text.partition("\n## See also\n")
        offered = re.findall(r"^- \[[^\]]*\]\(([^)#]+)", rest.split("\n## ")[0], re.MULTILINE)
        linked = {
            m for m in re.findall(r"\]\(([^)#\s]+)", body.split("---\n", 2)[-1]) if "layer1_sources" not in m
        }
        assert not set(offered) & linked, (path, set(offered) & linked)


def test_linked_from_lists_only_pages_not_linked_above(wiki: Path) -> None:
    """A guide's 'See also' and 'Linked from' were the same five guides and hubs: a page that links
    here and is linked back (in the text or under 'See also') is now shown once."""
    listed = 0
    for path, text in pages(wiki).items():
        above, _, rest = text.partition("\n## Linked from\n")
        if not rest:
            continue
        backlinks = re.findall(r"^- \[[^\]]*\]\(([^)#]+)", rest.split("\n## ")[0], re.MULTILINE)
        linked = {m for m in re.findall(r"\]\(([^)#\s]+)", above.split("---\n", 2)[-1])}
        assert backlinks and not set(backlinks) & linked, (path, set(backlinks) & linked)
        listed += len(backlinks)
    assert listed >= 50  # pages still say who links to them


def test_a_record_id_in_a_field_links_to_its_entry() -> None:
    """A plant's companions name other plants by record id: 'italian-parsley' is the id of 'Italian
    Flat-Leaf Parsley' and 'bush-bean' of 'Dwarf Bush Bean'; no title says them, so they stayed
    plain. They link, shown by their entries' titles."""
    basil = _page(REPO, "wiki/entries/genovese-basil.md")
    assert "[Italian Flat-Leaf Parsley](italian-flat-leaf-parsley.md)" in basil
    nasturtium = _page(REPO, "wiki/entries/dwarf-nasturtium.md")
    assert "[Dwarf Bush Bean](dwarf-bush-bean.md)" in nasturtium


def test_a_device_page_quotes_a_list_with_the_paragraph_that_introduces_it() -> None:
    """The Grove 6's page quoted the doses per model ('Grove 6 (4.0 litres): 20 ml') without 'Add 5
    ml of Verdant Feed per litre of water every 14 days. For a full tank that is:', so it did not say
    how often; and the plants per model without 'The main limit is mature plant height …:'."""
    for device in ("grove-6", "canopy-12"):
        lines = _current_lines(_page(REPO, f"wiki/devices/{device}.md"))
        dose = lines.index("For a full tank that is:")
        assert lines[dose - 1] == "Add 5 ml of Verdant Feed per litre of water every 14 days."
        assert plain_inline(lines[dose + 1]).startswith("- Sprout 3 (1.2 litres): 6 ml")
        fit = next(i for i, x in enumerate(lines) if x.startswith("The main limit is mature plant height"))
        assert plain_inline(lines[fit + 1]).startswith("- Sprout 3: plants up to 30 cm")


def test_a_device_no_source_defines_opens_with_what_its_page_holds(farmbot_compiled: Path) -> None:
    """No FarmBot source says what a Genesis is, and its page opened with a fact of which it is the
    subject ('FarmBot Genesis kits include rotary encoders on each motor …'), as did its index line
    and a hub of the Genesis models that said nothing else. A definition leads ('FarmBot Express is
    designed to be …'); without one the page says what it holds first (and the fact follows,
    ``test_a_device_no_source_defines_opens_with_what_it_has``), and the family has no hub."""
    from wikic.compile.librarian.extract import naming_sentences

    doc = _guide_doc(
        "kits",
        "Kits",
        "# Kits\n\nMowbot Max kits include rotary encoders on each motor.\n\n"
        "Mowbot Mini is designed to be an affordable mower for small lawns.\n",
    )
    assert naming_sentences(("Mowbot Max",), [doc]) == []
    assert [s.text for s in naming_sentences(("Mowbot Mini",), [doc])] == [
        "Mowbot Mini is designed to be an affordable mower for small lawns."
    ]
    genesis = _page(farmbot_compiled, "wiki/devices/farmbot-genesis.md")
    opening = body_lines(genesis.split("\n## ")[0])
    assert "*What the sources say about the FarmBot Genesis: " in "\n".join(opening)
    assert not (farmbot_compiled / "wiki/hubs/farmbot-genesis-models.md").exists()
    express = _page(farmbot_compiled, "wiki/devices/farmbot-express.md")
    assert "FarmBot Express is designed to be" in express.split("\n## ")[0]


def test_a_device_paragraph_is_quoted_whole_and_a_code_keeps_its_message(farmbot_compiled: Path) -> None:
    """The Canopy 12's page quoted 'The Canopy 12 weighs 18.5 kg …' and 'If the Canopy 12 is
    wall-mounted …' but not the sentence between them, 'Empty it before moving, and remove the
    light shelf and trellis clips.', so it never said how to move it: a paragraph that opens on the
    device is about it, whole. The FarmBot Express page gave Code 12's corrective actions without
    the message that says what the code means."""
    canopy = _current_lines(_page(REPO, "wiki/devices/canopy-12.md"))
    weighs = canopy.index("The Canopy 12 weighs 18.5 kg empty and about 28 kg with a full 9.5-litre tank.")
    assert canopy[weighs + 1] == "Empty it before moving, and remove the light shelf and trellis clips."
    express = _page(farmbot_compiled, "wiki/devices/farmbot-express.md")
    code = express.split("\n### Code 12\n", 1)[1].split("\n### ")[0]
    assert "Farmduino firmware is missing" in code.split("Corrective Action")[0]


def test_a_guide_reads_a_document_after_the_one_whose_whats_next_leads_to_it() -> None:
    """The getting-started guide quoted 'Software setup' before the assembly it follows: the
    assembly article's 'What's next?' leads on to it. Within a phase, a unit whose document another
    unit's document leads on to comes after that one, whatever fits the guide better."""
    gantry = _guide_doc("gantry", "Construct the Gantry", "# Construct the Gantry\n\nBolt the beam on.\n")
    wiring = _guide_doc("wiring", "Plug Everything In", "# Plug Everything In\n\nConnect the motor.\n")
    units = [[Candidate(wiring, 0)], [Candidate(gantry, 0)]]  # the best-fitting first
    assert [c.doc.id for c, _ in order(units)] == ["wiring", "gantry"]
    assert [c.doc.id for c, _ in order(units, {gantry.path: wiring.path})] == ["gantry", "wiring"]


def test_a_name_links_once_under_each_top_heading() -> None:
    """'FarmBot OS' was linked twelve times on one guide: at its first mention under every
    sub-heading. It links at its first mention under each top heading (a guide's phase, a topic's
    entry), not again in the sub-sections below it."""
    from wikic.compile.draft import Block, Citation, Draft, Navigation, Sentence, render_body

    cite = (Citation("layer1_sources/a/os.md", "x"),)
    said = Block("para", sentences=(Sentence("Flash FarmBot OS to the card.", cite),))
    blocks = (
        Block("heading", text="What to do", level=2),
        said,
        Block("heading", text="Step 1", level=3),
        said,
        Block("heading", text="Step 2", level=3),
        said,
        Block("heading", text="If something goes wrong", level=2),
        said,
    )
    nav = Navigation(names=((key_of("FarmBot OS"), "wiki/topics/farmbot-os.md"),))
    text = render_body(Draft("Install", "", (), blocks), "wiki/guides/install.md", nav)
    assert text.count("[FarmBot OS](../topics/farmbot-os.md)") == 2


def test_a_writers_story_gives_a_device_page_only_what_names_the_device() -> None:
    """The Grove 6's 'Setting up' quoted a renter's blog section whole because its heading names the
    model ('Adding a Grove 6'): '… I hand-pollinate the tomato by tapping the flowers every other
    morning.' A section in the first person gives a device page only its sentences about the device,
    and of those not the writer's episodes: 'Six months later I added a Grove 6 on top of my kitchen
    shelving.' was all a reader found under 'Setting up the Grove 6'."""
    grove = _current_lines(_page(REPO, "wiki/devices/grove-6.md"))
    assert not any("I hand-pollinate the tomato" in x for x in grove)
    # the teacher's 'our' is the writer's story too; the company's 'we' in a section told without
    # an 'I' is advice, and stays
    canopy = _current_lines(_page(REPO, "wiki/devices/canopy-12.md"))
    assert not any("Last school year our parent association bought a Canopy 12" in x for x in canopy)
    assert any("we start a new basil pod every three months" in x for x in canopy)
    assert not any(x.startswith("Six months later I added a Grove 6") for x in grove)
    assert "on top of my kitchen shelving" in _page(REPO, "wiki/topics/user-stories.md")  # its home keeps it


def test_a_guide_quotes_no_whats_next_section(wiki: Path) -> None:
    """The planned maintenance guide opened with a bare 'What's next?' list, and the troubleshooting
    guide listed 'What's next?' among what it covers: where a source sends its reader on is no step
    of a task (the topic page keeps it, and its links)."""
    from wikic.compile.links import NEXT

    for path, text in pages(wiki).items():
        if path.startswith("wiki/guides/"):
            headings = re.findall(r"^#{2,6} (.+)$", text, re.MULTILINE)
            assert not [h for h in headings if NEXT.match(h)], path
            assert "What's next?" not in text.split("\n## ", 1)[0], path  # nor in what it covers


def test_a_guide_quotes_no_section_that_only_says_where_the_rest_is(wiki: Path) -> None:
    """The planned maintenance guide opened on '### Maintenance: In the following sections we'll
    go over maintenance tips …', a section that says nothing but that the others follow."""
    from wikic.compile.librarian.extract import points_ahead

    assert points_ahead("In the following sections we'll go over maintenance tips.")
    assert not points_ahead("Follow the steps in the manual.")
    for path, text in pages(wiki).items():
        if path.startswith("wiki/guides/"):
            for section in re.split(r"^#{3,6} .+$", text, flags=re.MULTILINE)[1:]:
                said = [strip_citations(x) for x in section.split("\n") if "layer1_sources" in x]
                assert not said or not all(points_ahead(x) for x in said), (path, said)


def test_a_guide_quotes_no_writers_story(tmp_path: Path) -> None:
    """The planned 'Getting started' guide of the example opened on 'Starting small: I started
    with a Sprout 3 on my desk, mostly because it is silent …', a blog post's story. A section
    told mostly in the first person is no step of a task; its topic page keeps it."""
    from wikic.compile.guides import quotable_sections

    def doc(path: str, body: str) -> SourceDoc:
        return SourceDoc("s", path, path, path, path, {}, body, "", tuple(split_sections(body)))

    story = doc(
        "blog/studio.md",
        "## Starting small\n\nI started with a Sprout 3 on my desk. Its first pods were basil and parsley. "
        "My lettuce was ready in five weeks.",
    )
    steps = doc("faq/setup.md", "## Setting up\n\nFill the tank to the line. I recommend water from the tap.")
    found = [(d.path, d.sections[i].heading) for d, i in quotable_sections([story, steps], {})]
    assert found == [("faq/setup.md", "Setting up")]


def test_a_guide_ends_no_quote_on_a_sentence_that_introduces_what_it_does_not_show(wiki: Path) -> None:
    """The planned troubleshooting guide ended on 'This is the list of the 32 possible diagnosis
    codes that will help you to troubleshoot …:' and then 'See in context': the 32 codes are
    sections the guide does not quote. A sentence that introduces a list the guide shows stays."""
    from wikic.compile.draft import Block, Sentence
    from wikic.compile.librarian.offline import without_dangling

    intro, rest = Sentence("The codes are these:", ()), Sentence("Green means all is well.", ())
    listed = [Block("para", sentences=(rest, intro)), Block("bullets", sentences=(rest,))]
    assert without_dangling(listed) == listed
    dangling = [Block("para", sentences=(rest, intro)), Block("links", text="See in context")]
    assert without_dangling(dangling)[0].sentences == (rest,)
    for path, text in pages(wiki).items():
        if path.startswith("wiki/guides/"):
            lines = text.split("\n")
            for i, line in enumerate(lines):
                if "layer1_sources" in line and strip_citations(line).rstrip().endswith(":"):
                    after = next((x for x in lines[i + 1 :] if x.strip()), "")
                    assert not after.startswith(("#", "See in context", "From:")), (path, line)


def test_a_guide_quotes_a_set_of_numbered_options_whole(wiki: Path) -> None:
    """The planned troubleshooting guide quoted 'Option 2: hard reset' of 'Moving FarmBot to New
    Locations' without its 'Option 1: soft reset': alternatives, like steps, are quoted as a set."""
    from wikic.compile.guides import STEP

    assert STEP.match("Option 2: hard reset") and STEP.match("Method 1") and not STEP.match("Optional parts")
    for path, text in pages(wiki).items():
        if path.startswith("wiki/guides/"):
            shown = {int(n) for n in re.findall(r"^#{2,6} (?:Option|Method) (\d+)\b", text, re.MULTILINE)}
            assert shown == set(range(1, len(shown) + 1)), (path, sorted(shown))


def test_an_image_caption_is_not_quoted_as_text() -> None:
    """FarmBot's pages read 'Box LEDs on Genesis kit' and 'Press the refresh button … Refresh button
    in Google Chrome': the italic caption under an image the wiki does not show. A caption that
    repeats its image's text is left out with the image; italics of their own stay."""
    from wikic.compile.librarian.extract import section_content

    body = (
        "# LEDs\n\nThe box has three LEDs.\n\n![Box LEDs on Genesis kit](_images/box.png)\n\n"
        "_Box LEDs on Genesis kit_\n\n_Unplug the bot first._\n\n"
        "1. Press the refresh button.\n   ![Refresh button](_images/r.png)\n   _Refresh button_\n"
    )
    doc = _guide_doc("leds", "LEDs", body)
    said = [s.text for b in section_content(doc, doc.sections[0]) for s in b.sentences]
    assert said == ["The box has three LEDs.", "Unplug the bot first.", "Press the refresh button."]


def test_a_section_headed_with_the_device_name_alone_is_headed_with_what_it_is_a_variant_of() -> None:
    """'### Genesis' under 'Step 5: Try a wired Ethernet connection' said nothing on the Genesis
    page (every section there is about the Genesis): it reads 'Try a wired Ethernet connection
    (Genesis)'. A heading that says more than the model stays, and so does a top heading."""
    from wikic.compile.librarian.offline import _about

    body = (
        "# Connecting\n\n## Step 5: Try a wired Ethernet connection\n\nPlug it in.\n\n"
        "### Genesis\n\nUse the Pi's port.\n\n### Express v1.1+\n\nUse an adapter.\n\n"
        "### Results for both Genesis and Express\n\nIt works.\n"
    )
    sections = {s.heading: s for s in split_sections(body)}
    names = ("FarmBot Genesis", "Genesis")
    assert _about(sections["Genesis"], "Genesis", names) == "Try a wired Ethernet connection (Genesis)"
    express = ("FarmBot Express", "Express")
    assert _about(sections["Express v1.1+"], "Express v1.1+", express) == (
        "Try a wired Ethernet connection (Express v1.1+)"
    )
    results = "Results for both Genesis and Express"
    assert _about(sections[results], results, names) == results
    kits = {
        s.heading: s
        for s in split_sections("# OS\n\n## Step 3. Insert the card\n\nHere.\n\n### Genesis kits\n\nBack.\n")
    }
    assert _about(kits["Genesis kits"], "Genesis kits", names) == "Insert the card (Genesis kits)"
    assert _about(sections["Connecting"], "Connecting", names) == "Connecting"


def test_an_entry_quotes_elsewhere_only_what_its_own_record_does_not_say(wiki: Path) -> None:
    """'Genovese basil is ready for its first harvest at about six weeks …' (a blog post) under
    'Elsewhere' on the Genovese Basil page said its own Harvesting section again."""
    from wikic.compile.guides import restated, sayings

    docs = {d.path: d for d in load_layer1(wiki)}
    checked = 0
    for path, text in pages(wiki).items():
        if "## Elsewhere in the knowledge base" not in text:
            continue
        meta = front_matter(text)
        if meta["type"] != "entity" or "## Elsewhere in the knowledge base" not in text:
            continue
        own = sayings(docs[meta["sources"][0]])
        elsewhere = text.split("## Elsewhere in the knowledge base", 1)[1].split("\n## ", 1)[0]
        for line in elsewhere.split("\n"):
            if line.startswith("- "):
                checked += 1
                said = plain_inline(strip_citations(line[2:]))
                assert not restated(said, own), f"{path}: {said}"
    assert checked


def test_a_checklist_of_instructions_is_quoted_whole_and_a_post_s_sections_are_not() -> None:
    """A document that fits the guide gives every section beside the one chosen when each is
    headed by an instruction ('Keep FarmBot clean', 'Tighten loose screws' …), as a procedure
    gives its steps; a release post's sections ('Household sharing') are chosen one by one."""
    from wikic.compile.guides import Candidate, _checklist

    checklist = _guide_doc(
        "care",
        "General care",
        "# General care\n\n## Keep the tank clean\n\nRinse it monthly.\n\n## Tighten loose screws\n\n"
        "Check the screws.\n\n## Inspect for damage\n\nLook for cracks.\n",
    )
    post = _guide_doc(
        "post",
        "App 5.0",
        "# App 5.0\n\n## Vacation mode\n\nUp to 21 days.\n\n## Household sharing\n\nShare a garden.\n",
    )
    for doc, whole in ((checklist, [1, 2, 3]), (post, [])):
        at = {(doc.path, i): Candidate(doc, i) for i in range(1, len(doc.sections))}
        assert _checklist(doc, 2, at) == whole


def test_an_entry_suited_to_some_devices_sends_readers_to_no_other_device() -> None:
    """Yellow Cherry Tomato suits the Canopy 12 alone; its 'See also' offered the Sprout 3 and the
    Grove 6, which a reader takes for a recommendation."""
    the_plan = planned(REPO)
    named = pageplan.devices_named(the_plan, {d.path: d for d in load_layer1(REPO)})
    assert named["wiki/entries/yellow-cherry-tomato.md"] == {"wiki/devices/canopy-12.md"}
    for path, devices in named.items():
        see_also = _page(REPO, path).split("## See also\n", 1)[1].split("\n## ", 1)[0]
        shown = set(re.findall(r"\(\.\./devices/([^)]+)\)", see_also))
        assert {f"wiki/devices/{d}" for d in shown} <= devices, path


def test_an_entry_many_records_name_as_a_companion_still_links() -> None:
    """Chives is a companion in ten plant records, which made it 'too common' a word to link: the
    herbs comparison left its row the only one without a link, and no page linked it."""
    herbs = _page(REPO, "wiki/comparisons/herbs.md")
    assert "| [Chives](../entries/chives.md) |" in herbs
    sprout = _page(REPO, "wiki/devices/sprout-3.md")
    assert "[chives](../entries/chives.md)" in sprout


@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("Try looking through our troubleshooting guides below.", True),
        ("If you have software related issues, please see the Software Troubleshooting Guide.", True),
        ("Still having issues?", True),
        ("Please email contact@example.com or consider posting in the community forum.", True),
        ("Check the hose below the tank for leaks.", False),
        ("Email the receipt to support within 30 days to start a return.", False),
    ],
)
def test_a_sentence_that_only_says_where_to_look_or_asks_is_no_guide_material(
    text: str, points: bool
) -> None:
    """The planned troubleshooting guide quoted a section made of 'Having issues with your
    FarmBot's hardware? Try looking through our troubleshooting guides below.', with nothing
    below it."""
    from wikic.compile.librarian.extract import points_ahead

    assert points_ahead(text) is points
    section = "# Help\n\n" + (
        "Having issues? Try looking through our troubleshooting guides below. Still having issues? "
        "Please email help@example.com."
    )
    from wikic.compile.guides import quotable_sections

    assert quotable_sections([_guide_doc("help", "Help", section)], {}) == []


def test_a_guide_quotes_one_section_per_subject_and_a_procedure_s_steps_all() -> None:
    """The planned troubleshooting guide quoted 'Perform a hard reset', then the controls page's
    'Hard reset': the same advice again in other words."""
    from wikic.compile.guides import Candidate, without_namesakes

    first = _guide_doc("a", "Advanced", "# Advanced\n\n## Perform a hard reset\n\nReflash the card.\n")
    second = _guide_doc("b", "Controls", "# Controls\n\n## Hard reset\n\nErase all data.\n")
    steps = _guide_doc(
        "c",
        "Moving",
        "# Moving\n\n## Option 1: soft reset\n\nClick it.\n\n## Option 2: hard reset\n\nReflash.\n",
    )
    units = [[Candidate(first, 1)], [Candidate(steps, 1), Candidate(steps, 2)], [Candidate(second, 1)]]
    assert without_namesakes(units) == units[:2]


def test_a_guide_to_fixing_problems_diagnoses_and_fixes_first_and_gives_background_last() -> None:
    """'Fixing common problems' opened with '## What to do / ### What Wi-Fi does my garden need?',
    and its fixes (reset, algae) came after. Then it put one problem under '## Checking' and the
    next under '## If something goes wrong', where every section is a problem (review M). Its
    problems stand under one heading, checks (the grow light's) before fixes, then the rest."""
    lines = body_lines(_page(REPO, "wiki/guides/fix-common-problems.md"))
    heads = [x for x in lines if x.startswith("## ") and x != "## At a glance"]
    assert heads[:2] == ["## Problems and fixes", "## Good to know"]
    assert not {"## What to do", "## Checking", "## If something goes wrong"} & set(heads)
    light = lines.index("### My grow light won't turn on. What should I check?")
    assert light < lines.index("### How do I reset my garden?") < lines.index("## Good to know")
    holiday = body_lines(_page(REPO, "wiki/guides/going-on-holiday.md"))
    assert "## What to do" in holiday and "## Good to know" not in holiday


def test_a_device_page_gathers_no_single_step_of_a_procedure() -> None:
    """The Express page quoted 'Step 11: Sand the top surfaces' of a bed build and 'Step 1: Load the
    bottom tray' of the factory's packing, each alone and unnumbered, and the Genesis page LEDs 3
    and 4 of the electronics box's list; a step or an entry whose heading names the device, a
    troubleshooting step or entry, and a section that is no step still come."""
    from wikic.compile.gather import gather

    build = _guide_doc(
        "build",
        "Building a bed",
        "# Building a bed\n\n## Step 1: Sand the top surfaces\n\nSand them smooth for the Express.\n\n"
        "## Step 2: Mount the Express\n\nBolt it on.\n\n## Bed size\n\nThe Express needs a 1.2m bed.\n",
    )
    device = {"id": "express", "title": "FarmBot Express", "match": ["Express"]}
    found = [anchor for _, _, anchor in gather(device, [build], set())]
    assert found == ["step-2-mount-the-express", "bed-size"]
    leds = _guide_doc(
        "leds",
        "Electronics box",
        "".join(f"# LED {n}\n\nOn the Express, LED {n} shows the sync.\n\n" for n in (1, 2, 3))
        + "# LED 4 (Express)\n\nIt blinks.\n",
    )
    assert [anchor for _, _, anchor in gather(device, [leds], set())] == ["led-4-express"]
    codes = _guide_doc(  # a troubleshooting entry stands on its own, as a troubleshooting step does
        "codes", "Diagnosis codes", "".join(f"# Code {n}\n\nOn the Express, reboot.\n\n" for n in (1, 2, 3))
    )
    assert len(gather(device, [codes], set())) == 3


def test_an_entry_opens_with_its_short_description_and_heads_its_other_long_fields(
    farmbot_compiled: Path,
) -> None:
    """Beet's description is short, so transform lists it with the details; its sowing method is
    long, so it is a section. The page lost the description (the fact list holds no prose, and the
    details item was left to it) and opened with the sowing method, unheaded."""
    beet = body_lines(_page(farmbot_compiled, "wiki/entries/beet.md"))
    text = [x for x in beet if x and not x.startswith("#")]
    assert text[0].startswith("Extremely sweet, perfectly round beets")
    assert "## Sowing method" in beet
    directory = _page(farmbot_compiled, "wiki/directories/full-sun-crops.md")
    assert "- [Beet](../entries/beet.md) — Extremely sweet" in directory


def test_a_guide_keeps_an_answer_s_parts_under_its_question() -> None:
    """'Pod guarantee' of 'My seeds haven't sprouted. Is something wrong?' stood under 'If
    something goes wrong', apart from its question under 'Checking'."""
    lines = body_lines(_page(REPO, "wiki/guides/first-week.md"))
    at = lines.index("### My seeds haven't sprouted. Is something wrong?")
    guarantee = lines.index("#### Pod guarantee")
    assert at < guarantee and not any(x.startswith(("## ", "### ")) for x in lines[at + 1 : guarantee])


def test_a_device_page_leaves_a_post_s_news_of_the_day_out() -> None:
    """'Today we are announcing the Canopy 12, our first cabinet garden, shipping from 3 February
    2025.' read as current on the Canopy 12's page, and 'The headline feature is one of our most
    requested' on the Grove 6's; the posts' other sentences stay."""
    canopy = _page(REPO, "wiki/devices/canopy-12.md")
    assert "Today we are announcing" not in canopy
    assert "owners kept asking us for the big stuff" in canopy
    grove = _page(REPO, "wiki/devices/grove-6.md")  # app 4.6's news, which app 5.0 went past
    assert "The headline feature is one of our most requested" not in grove
    assert "Vacation mode needs the larger tank of the Grove 6" in grove


def test_topics_on_one_subject_from_different_sources_send_readers_to_each_other() -> None:
    """'Returns' (two posts) and 'Orders and policies' (which holds 'What is the return policy?')
    said the return policy apart, and neither page linked the other."""
    for page, other in (("returns", "orders-and-policies"), ("orders-and-policies", "returns")):
        see_also = _page(REPO, f"wiki/topics/{page}.md").split("## See also\n", 1)[1].split("\n## ", 1)[0]
        assert f"]({other}.md)" in see_also, page


def test_a_field_that_only_says_where_its_record_is_filed_is_no_fact(farmbot_compiled: Path) -> None:
    """'Section | v15/docs/troubleshooting' closed 34 FarmBot topic pages under 'Filed under': a
    path says where the help centre files the article, nothing a reader can use."""
    from wikic.core.facts import locates

    assert (
        locates("v15/app") and locates("v1.1/bom/fasteners-and-hardware") and locates("https://x.example/a")
    )
    assert not locates("Wi-Fi/Bluetooth") and not locates("1/32") and not locates("v1.1")
    shown = [p for p, text in pages(farmbot_compiled).items() if re.search(r"\| v\d+(?:\.\d+)?/", text)]
    assert shown == []


def test_a_source_s_own_link_is_linked_again_in_its_sentence_only(farmbot_compiled: Path) -> None:
    """'See the [seeds](…) page for more details.' linked 'seeds' in every sentence of its section
    that used the word ('larger, heavier [seeds]', 'Once all [seeds] are removed …'): five links in
    one answer of the planting-seeds guide."""
    guide = _page(farmbot_compiled, "wiki/guides/planting-seeds.md")
    assert guide.count("[seeds](../topics/seeds.md)") == 1 and "See the [seeds](../topics/seeds.md)" in guide
    controls = _page(farmbot_compiled, "wiki/topics/controls.md")
    assert "[MOVE](#move)" in controls  # a numbered item's own link stays


_HREF = re.compile(r"\]\(([^)\s]+)\)")


def _linked(path: str, text: str) -> set[str]:
    """The wiki pages a page's text links to, its 'Linked from' list aside."""
    own = text.split("\n## Linked from", 1)[0]
    hrefs = (h.partition("#")[0] for h in _HREF.findall(own) if not h.startswith(("http", "#")))
    return {os.path.normpath(os.path.join(os.path.dirname(path), h)) for h in hrefs if h}


def test_linked_from_lists_pages_that_link_here(wiki: Path) -> None:
    """A page's 'Linked from' lists pages that do link to it. An entry's 'Elsewhere' quotes a
    sentence, not its whole document, so the links elsewhere in that document are not the
    entry's; a glossary quotes a definition only. (Names found in a table cell or used as a verb
    are left unlinked by the rendering alone: a few stay listed, hence the share.)"""
    texts = pages(wiki)
    out = {p: _linked(p, t) for p, t in texts.items()}
    listed = [
        (p, os.path.normpath(os.path.join(os.path.dirname(p), h.partition("#")[0])))
        for p, t in texts.items()
        if "\n## Linked from" in t
        for h in _HREF.findall(t.split("\n## Linked from", 1)[1].split("\n## ")[0])
    ]
    false = [(p, q) for p, q in listed if p not in out.get(q, set())]
    assert listed and len(false) <= 0.05 * len(listed), false
    assert not [q for _, q in false if q == "wiki/glossary.md"]


def test_a_device_page_points_to_long_tables_and_leaves_the_past_out(farmbot_compiled: Path) -> None:
    """A pin table of 20 rows is looked up, not read: the device page links to where it is
    shown whole ('In the knowledge base'), and quotes no table longer than ``MAX_LIST`` rows but
    its own specifications. 'Past Versions' and 'Deprecated FarmBot Express MAX' are the Express's
    past; its page says what it is now."""
    from wikic.compile.gather import MAX_LIST

    for path, text in pages(farmbot_compiled).items():
        if not path.startswith("wiki/devices/"):
            continue
        gathered = text.split("\n## ", 2)[-1]  # after the title and the specifications
        rows = Counter(
            h for h, line in _under_headings(gathered) if line.startswith("| ") and "---" not in line
        )
        assert all(n <= MAX_LIST + 1 for n in rows.values()), (path, rows.most_common(2))
        assert not re.search(r"^### (Past Versions|Deprecated)", text, re.M), path
    express = pages(farmbot_compiled)["wiki/devices/farmbot-express.md"]
    more = express.split("## In the knowledge base", 1)[1].split("\n## ", 1)[0]
    assert (
        "[Farmduino Express v1.1 LED reference](../topics/assembly.md#farmduino-express-v11-led-reference)"
        in more
    )


def _under_headings(text: str) -> list[tuple[str, str]]:
    heading, out = "", []
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line
        out.append((heading, line))
    return out


def test_a_guide_gives_a_section_headed_by_each_subject_its_purpose_names(farmbot_planned: Path) -> None:
    """'Keeping the garden clean' is for 'dealing with algae and mould', and one FAQ is headed by
    mould ('Is the white fuzz on my pod mould?'): the guide gives it, though words alone rank it
    under the algae post's every section. The planned maintenance guide, asked about thermal
    care, gives 'Thermal Management'. A word heading many sections ('garden') names no subject."""
    clean = _page(REPO, "wiki/guides/clean-garden.md")
    assert "### Is the white fuzz on my pod mould?" in clean and "faq/mould-on-sponge" in clean
    care = _page(farmbot_planned, "wiki/guides/maintenance-and-care.md")
    assert "### Thermal Management" in care


def test_no_page_links_to_itself_but_to_a_heading_on_it(wiki: Path) -> None:
    """'[Points](app.md)' on the App page led to the top of the page the reader was on: a source's
    link to a document shown there without a heading of its own is left as text."""
    for path, text in pages(wiki).items():
        own = os.path.basename(path)
        assert f"]({own})" not in text, path


def test_no_guide_or_device_page_quotes_what_its_source_files_for_its_staff(wiki: Path) -> None:
    """FarmBot files its factory's pre-assembly under 'v1.1/manufacturing' ('not meant for end
    users of FarmBot'); the planned getting-started guide quoted 'Left Gantry Column › Step 1:
    Mount the idler pulleys' after 'Step 8: Monitor your garden', and 'Using the FarmBot
    Express' was the factory's packing list."""

    docs = {d.path: d for d in load_layer1(wiki)}
    staff = {p for p, d in docs.items() if for_staff(d)}
    assert wiki == REPO or staff  # FarmBot has such documents; the example none
    for path, text in pages(wiki).items():
        if path.startswith(("wiki/guides/", "wiki/devices/")):
            quoted = {c.path for line in text.splitlines() for c in parse_citations(line, path)}
            assert not quoted & staff, (path, sorted(quoted & staff))


def test_a_short_introduction_comes_with_what_it_introduces_or_not_at_all() -> None:
    """'FarmBot has been designed to operate in challenging environments …' opened a guide's
    'Thermal Management' and stopped there: a section that only introduces the sections under
    it is quoted with them (the empty headings that group them too), or, when they are too
    many to quote, not at all; a section that says enough on its own stands alone."""
    from wikic.compile.guides import LED_INTO, Candidate, _led_into, _unit

    doc = _guide_doc(
        "heat",
        "Thermal care",
        "# Thermal care\n\nIt copes with heat. It copes with cold too.\n\n## Hot weather\n\n### Provide shade\n\n"
        "Shade the box.\n\n### Add heatsinks\n\nFit heatsinks.\n\n## Cold weather\n\nDrain the water.\n",
    )
    at = {(doc.path, i): Candidate(doc, i) for i, s in enumerate(doc.sections) if s.text.strip()}
    shown = _unit(at[(doc.path, 0)], at, 1.0)
    assert [doc.sections[c.index].heading for c in shown] == [
        "Thermal care",
        "Hot weather",
        "Provide shade",
        "Add heatsinks",
        "Cold weather",
    ]
    long = _guide_doc(
        "long",
        "Long care",
        "# Long care\n\nIt copes.\n\n## Steps\n\n"
        + " ".join(f"Turn the wheel {n} times." for n in range(LED_INTO + 1))
        + "\n",
    )
    at = {(long.path, i): Candidate(long, i) for i in range(len(long.sections))}
    assert _led_into(at[(long.path, 0)], at) == []
    said = _guide_doc(
        "said",
        "Said",
        "# Said\n\n"
        + " ".join(f"The tank holds {n} litres." for n in range(4))
        + "\n\n## More\n\nDrain it.\n",
    )
    at = {(said.path, i): Candidate(said, i) for i in range(len(said.sections))}
    assert _led_into(at[(said.path, 0)], at) == [0]


def test_a_task_guide_takes_the_documents_its_source_files_with_the_ones_it_quotes() -> None:
    """'Maintaining your FarmBot' quoted 'General Maintenance' and 'Gantry Maintenance', filed
    under 'v1.1/extras/maintenance', and left out 'Bed Maintenance' and 'Storing FarmBot for
    Winter' of the same folder, whose words were not the guide's: once a guide for a task quotes
    two documents filed under it, the others filed with them come too, whole when short (a
    procedure with every step); a folder of another task does not."""
    from dataclasses import replace

    from wikic.compile.guides import Candidate, choose
    from wikic.compile.schema import Guide

    def filed(name: str, title: str, body: str, section: str) -> SourceDoc:
        return replace(_guide_doc(name, title, body), meta={"section": section})

    docs = [
        filed(
            "general",
            "General care",
            "# General care\n\nKeep the belts tensioned and clean.\n",
            "extras/maintenance",
        ),
        filed(
            "gantry",
            "Gantry care",
            "# Gantry care\n\nLubricate the leadscrew twice a year.\n",
            "extras/maintenance",
        ),
        filed(
            "winter",
            "Storing it for winter",
            "# Storing it for winter\n\nBefore the frost.\n\n## Step 1: Drain the water\n\nUnscrew the hose.\n\n"
            "## Step 2: Unplug it\n\nPull the plug.\n",
            "extras/maintenance",
        ),
        filed("build", "Build the bed", "# Build the bed\n\nCut the boards to length.\n", "assembly"),
    ]
    scores = {"general": 1.0, "gantry": 0.9, "winter": 0.3, "build": 0.3}
    pool = [Candidate(d, i, score=scores[d.id], doc_fit=0.5) for d in docs for i in range(len(d.sections))]
    guide = Guide(
        "care", "Maintaining the bot", "Cleaning and lubricating it over the seasons.", "belts leadscrew"
    )
    chosen = [[(c.doc.id, c.doc.sections[c.index].heading) for c in u] for u in choose(guide, pool, None)]
    assert [u[0][0] for u in chosen] == ["general", "gantry", "winter"], chosen
    assert chosen[-1] == [
        ("winter", "Storing it for winter"),
        ("winter", "Step 1: Drain the water"),
        ("winter", "Step 2: Unplug it"),
    ]


def test_a_set_up_guide_builds_before_it_configures() -> None:
    """The planned getting-started guide opened with the web app's 'Getting Started' (create an
    account, design your garden) and built the gantry after it: among units no order links, a
    guide for a task gives first what its source files under that task ('v1.1/assembly')."""
    from dataclasses import replace

    app = replace(
        _guide_doc(
            "app", "Getting started", "# Getting started\n\n## Step 1: Create an account\n\nSign up.\n"
        ),
        meta={"section": "docs"},
    )
    build = replace(
        _guide_doc(
            "gantry",
            "Construct the gantry",
            "# Construct the gantry\n\n## Step 1: Assemble the beam\n\nBolt it.\n",
        ),
        meta={"section": "v1.1/assembly"},
    )
    units = [[Candidate(app, 1)], [Candidate(build, 1)]]
    assert [c.doc.id for c, _ in order(units)] == ["app", "gantry"]  # the best fitting first
    assert [c.doc.id for c, _ in order(units, task="Set-up")] == ["gantry", "app"]


def test_an_inspection_a_source_files_under_the_guide_s_task_is_part_of_doing_it() -> None:
    """'Inspect the delrin leadscrew block' of 'Gantry Maintenance' stood under 'Checking' of a
    maintenance guide, apart from the rest of its document: what the source files under the
    guide's task is part of doing it; elsewhere an inspection checks the work."""
    from dataclasses import replace

    doc = replace(
        _guide_doc("gantry", "Gantry care", "# Gantry care\n\n## Inspect the block\n\nLook for wear.\n"),
        meta={"section": "extras/maintenance"},
    )
    units = [[Candidate(doc, 1)]]
    assert [p for _, p in order(units)] == ["check"]
    assert [p for _, p in order(units, task="Maintenance")] == ["do"]


def test_a_procedure_s_opening_that_says_what_it_requires_frames_it() -> None:
    """'Configuration requires a verified web app account …' opened the Configurator's steps,
    and the install guide quoted the steps without it, leaving the account for 'If something
    goes wrong': a document's opening that says what the procedure requires is quoted with it;
    a long preamble that requires nothing is not."""
    from wikic.compile.guides import _frames

    steps = "\n\n# Step 1: Connect\n\nJoin the network.\n\n# Step 2: Submit\n\nPress submit.\n"
    opening = " ".join(f"The tool does thing {n}." for n in range(8))
    needs = _guide_doc(
        "cfg",
        "Configurator",
        f"# Configurator\n\nConfiguration requires a verified account. {opening}{steps}",
    )
    chatter = _guide_doc("cfg2", "Configurator", f"# Configurator\n\nWelcome to the tool. {opening}{steps}")
    assert _frames(needs, 0)
    assert not _frames(chatter, 0)


def test_an_opening_beside_its_steps_is_read_with_them() -> None:
    """'Connecting FarmBot to the Internet' stood twice in the troubleshooting guide: its steps
    under 'Checking', its opening under 'If something goes wrong' with the heading again. A
    document's opening whose sections stand beside it (one heading level) goes where the guide
    puts them, before them."""
    from dataclasses import replace

    body = (
        "# Connecting to the Internet\n\nIf the bot is offline, work through these steps.\n\n"
        "# Step 1: Check the popup\n\nOpen the popup.\n\n# Step 2: Check the router\n\nRestart it.\n"
    )
    doc = replace(
        _guide_doc("net", "Connecting to the Internet", body), meta={"section": "docs/troubleshooting"}
    )
    units = [[Candidate(doc, 1), Candidate(doc, 2)], [Candidate(doc, 0)]]
    placed = order(units, fixing=True)
    assert [(c.index, p) for c, p in placed] == [(0, "problems"), (1, "problems"), (2, "problems")]


def test_a_fixing_guide_takes_the_fixes_filed_with_the_ones_it_quotes() -> None:
    """The planned troubleshooting guide quoted two of the articles FarmBot files under
    'docs/troubleshooting' and left out 'Connecting FarmBot to the Internet' of the same folder:
    a guide to fixing problems takes the others filed with two or more of its own too."""
    from dataclasses import replace

    from wikic.compile.guides import Candidate, choose
    from wikic.compile.schema import Guide

    def filed(name: str, title: str, body: str) -> SourceDoc:
        return replace(_guide_doc(name, title, body), meta={"section": "docs/troubleshooting"})

    docs = [
        filed("reset", "Hard reset", "# Hard reset\n\nHold the button to reset the bot.\n"),
        filed("codes", "Error codes", "# Error codes\n\nCode 1 means the bot is offline.\n"),
        filed(
            "net", "Connecting to the Internet", "# Connecting to the Internet\n\nCheck the router first.\n"
        ),
    ]
    scores = {"reset": 1.0, "codes": 0.9, "net": 0.3}
    pool = [Candidate(d, i, score=scores[d.id], doc_fit=0.5) for d in docs for i in range(len(d.sections))]
    guide = Guide("fix", "Troubleshooting guide", "Diagnosing and fixing problems.", "reset codes")
    assert [u[0].doc.id for u in choose(guide, pool, None)] == ["reset", "codes", "net"]


def test_a_guide_to_fixing_problems_quotes_what_answers_one() -> None:
    """The planned troubleshooting guide quoted a setting's definition ('Calibration retry reset
    distance: Distance in millimeters to group calibration retries') and a support policy: a
    fixing guide keeps a unit that is a procedure, a table, an answer to a question or that says
    what to do ('If … closed, consult your IT department'), and leaves out one that does none."""
    from wikic.compile.guides import Candidate, instructing

    setting = _guide_doc(
        "settings",
        "Error handling",
        "# Error handling\n\n## Calibration retry reset distance\n\nDistance in millimeters to group retries.\n",
    )
    tab = _guide_doc(
        "tab",
        "Connectivity",
        "# Connectivity\n\n## Network tab\n\nIt shows the ports. If a port is closed, consult your IT department.\n",
    )
    faq = _guide_doc(
        "faq", "What Wi-Fi does my garden need?", "# What Wi-Fi does my garden need?\n\n2.4 GHz only.\n"
    )
    leds = _guide_doc(
        "leds", "LEDs", "# LEDs\n\n## LED 2\n\n| Light | Meaning |\n|---|---|\n| Off | Offline |\n"
    )
    units = [[Candidate(setting, 1)], [Candidate(tab, 1)], [Candidate(faq, 0)], [Candidate(leds, 1)]]
    assert [u[0].doc.id for u in instructing(units)] == ["tab", "faq", "leds"]


def test_a_device_page_quotes_the_sentence_that_qualifies_what_it_quotes() -> None:
    """'On the Grove 6 and Canopy 12, the pump cycle is now controlled by a schedule …, rather
    than being fixed at 5 minutes every 30 minutes' stood without its source's next sentence,
    'Normal growing still uses the 30-minute cycle.', and so contradicted the page's own specs:
    a sentence that qualifies the one quoted ('still', 'However, …') comes with it."""
    text = _page(REPO, "wiki/devices/grove-6.md")
    lines = [strip_citations(x) for x in body_lines(text)]
    at = next(i for i, x in enumerate(lines) if "the pump cycle is now controlled by a schedule" in x)
    assert lines[at + 1] == "Normal growing still uses the 30-minute cycle.", lines[at : at + 2]


def test_a_comparison_leaves_out_records_that_state_none_of_its_columns(farmbot_planned: Path) -> None:
    """Five mushrooms stood in 'Partial sun crops' as rows of '—' alone. A row that states none of
    the compared fields is left out, and the comparison's line says which records give none."""
    text = _page(farmbot_planned, "wiki/comparisons/crops-partial-sun.md")
    rows = [x.split(" | ")[1:] for x in body_lines(text) if x.startswith("| [")]
    assert rows and all(any(c.strip(" |") != "—" for c in r) for r in rows), rows
    about = next(x for x in body_lines(text) if x.startswith("*"))
    assert "Their records give none of these for Pink Oyster Mushroom, Porcini Mushroom" in about, about
    assert "[Shiitake Mushroom]" not in text
    line = next(
        x
        for x in _page(farmbot_planned, "wiki/index.md").splitlines()
        if "(comparisons/crops-partial-sun.md)" in x
    )
    assert "none of these" not in line, line  # the index says what it compares, not what it leaves out


def test_a_sentence_is_said_of_every_model_only_when_it_names_each_other_model() -> None:
    """'We have one CAD model for FarmBot Express and Express XL' left the Express XL page once the
    Genesis XL was no model: two ways of writing one model ('FarmBot Express', 'Express') counted
    as two of the other three."""
    from wikic.compile.gather import names_every_model

    xl = {
        "title": "FarmBot Express XL",
        "match": ["Express XL"],
        "peers": [["FarmBot Express", "Express"], ["FarmBot Genesis", "Genesis"]],
    }
    assert not names_every_model("We have one CAD model for FarmBot Express and Express XL.", xl)
    assert names_every_model("Express, Express XL and Genesis kits ship in one box.", xl)


def test_a_task_guide_opens_with_what_its_source_files_under_the_task(farmbot_compiled: Path) -> None:
    """'Maintaining your FarmBot' opened with the assembly's spacer fit test ('1. Separate the
    extrusion from the plate.'), which 'General Maintenance' names and so came before it. What the
    source files under maintenance comes first; the fit test follows it."""
    heads = [
        x for x in body_lines(_page(farmbot_compiled, "wiki/guides/maintenance.md")) if x.startswith("### ")
    ]
    assert heads[0] == "### General Maintenance", heads
    assert heads.index("### Adjusting the eccentric spacer") > heads.index("### Storing FarmBot for Winter")


def test_a_dispute_whose_both_sides_a_page_shows_is_noted_once(farmbot_compiled: Path) -> None:
    """'Installing FarmBot OS' quotes both the Imager step and the reflash advice that names
    Etcher, and said 'Sources differ' under each, pointing each at the other's topic: the same
    dispute twice on one page. It is noted once, where the first of them stands."""
    lines = body_lines(_page(farmbot_compiled, "wiki/guides/install-farmbot-os.md"))
    notes = [x for x in lines if x.startswith("Sources differ: ") and "Etcher" in x]
    assert len(notes) == 1 and "Raspberry Pi Imager" in notes[0], notes
    imager = next(i for i, x in enumerate(lines) if "Raspberry Pi Imager" in x and "](../../layer1" in x)
    assert lines.index(notes[0]) > imager
    assert any("Etcher" in x and "](../../layer1" in x for x in lines)  # the other side still stands


def test_a_step_that_sends_the_reader_to_a_procedure_brings_it_into_the_guide(
    farmbot_planned: Path, farmbot_compiled: Path
) -> None:
    """The planned getting-started guide flashed the card with 'Step 8: … follow our FarmBot OS
    installation instructions', a link, and never quoted them (a reviewer's worst passage). A step
    of a procedure that links to another document's procedure brings that one, every step, after
    it. A tip's 'see here' (bed alignment's thicker boards, the bed build) and a fix's 'reflash'
    bring nothing."""
    lines = body_lines(_page(farmbot_planned, "wiki/guides/getting-started-guide.md"))
    heads = [x for x in lines if x.startswith("#")]
    assert heads.index("### FarmBot OS") > heads.index("#### Step 8: Flash FarmBot OS to the microSD card")
    # and on to what its 'What's next?' leads to, before the web app's tour (a reviewer found
    # Configurator after 'Schedule events')
    third = [x for x in heads if x.startswith("### ")]
    assert third[third.index("### FarmBot OS") + 1] == "### Configurator", third
    assert "#### Step 2. Write FarmBot OS onto the microSD card" in heads
    maintenance = _page(farmbot_compiled, "wiki/guides/maintenance.md")
    assert "Building a Fixed Raised Bed" not in maintenance
    assert "Write FarmBot OS onto the microSD card" not in _page(
        farmbot_compiled, "wiki/guides/connection-problems.md"
    )


def test_a_task_guide_takes_its_folder_s_documents_whatever_their_words(
    farmbot_compiled: Path, farmbot_planned: Path
) -> None:
    """'Maintaining your FarmBot' left out 'Thermal Management' (drain the water before a freeze),
    and the planned maintenance guide 'Storing FarmBot for Winter', though both sit in the
    maintenance folder with the documents they quote: their words fit the query less than a
    quarter as well as the best. The folder says they belong; a folder of fixes still gives only
    what fits (no 'Support Policy' in the planned troubleshooting guide)."""
    configured = body_lines(_page(farmbot_compiled, "wiki/guides/maintenance.md"))
    assert "### Thermal Management" in configured and "##### Disconnect and drain water" in configured
    planned = body_lines(_page(farmbot_planned, "wiki/guides/maintenance-and-care.md"))
    steps = [x for x in planned if x.startswith("#### Step ")]
    assert "### Storing FarmBot for Winter" in planned and len(steps) >= 7, steps
    assert "### Support Policy" not in _page(farmbot_planned, "wiki/guides/troubleshooting-guide.md")


def test_a_device_page_quotes_nothing_its_source_says_of_its_documentation(farmbot_compiled: Path) -> None:
    """'About the FarmBot Express' opened with 'Announcing: FarmBot Express v1.1 documentation!'
    and how to pick an older version of the docs: the help site speaking of itself. What the
    section says of the kit stays."""
    text = _page(farmbot_compiled, "wiki/devices/farmbot-express.md")
    for said in (
        "Announcing: FarmBot Express v1.1 documentation",
        "version picker",
        "This documentation covers",
    ):
        assert said not in text, said
    assert "The driving factors behind the design are simplicity, ease-of-setup, and affordability." in text
    assert "The reference designs shown on this documentation page" in text  # of the bed the kit needs


def test_a_device_page_quotes_no_promise_of_what_is_to_come() -> None:
    """The Grove 6 page said 'This change lays the groundwork for longer vacation mode in an
    upcoming app release …' under 'Vacation mode: up to 21 days', a release that has shipped (a
    reviewer's worst passage). A device page leaves out what a source promises for later; its
    release notes keep it where they stand."""
    assert "upcoming app release" not in _page(REPO, "wiki/devices/grove-6.md")
    assert "Normal growing still uses the 30-minute cycle." in _page(REPO, "wiki/devices/grove-6.md")
    assert "upcoming app release" in _page(REPO, "wiki/topics/firmware-releases.md")


def test_a_home_keeps_its_source_s_heading_depth_and_group_headings() -> None:
    """A help center heads an article's sections H1 and their parts H2: on the maintenance topic
    'Add tensioning cables' stood level with 'Maintain bed alignment', which it is part of, and
    'Provide shade' lost 'Hot weather management', an empty heading over it. Depth is counted
    from the document's top heading, and an empty heading over deeper ones stays."""
    from wikic.compile.librarian.extract import home_blocks

    doc = _guide_doc(
        "m",
        "Care",
        "# Care\n\nKeep it well.\n\n# Bed alignment\n\nKeep it square.\n\n## Add cables\n\nTension them.\n\n"
        "# Hot weather\n\n## Provide shade\n\nShade the box.\n",
    )
    heads = [(b.text, b.level) for b in home_blocks(doc, 2) if b.kind == "heading"]
    assert heads == [("Bed alignment", 3), ("Add cables", 4), ("Hot weather", 3), ("Provide shade", 4)]
    usual = _guide_doc("u", "Care", "# Care\n\nKeep it.\n\n## Bed\n\nSquare.\n\n### Cables\n\nTension.\n")
    assert [(b.text, b.level) for b in home_blocks(usual, 2) if b.kind == "heading"] == [
        ("Bed", 3),
        ("Cables", 4),
    ]


def test_a_guide_s_index_line_says_what_it_holds(farmbot_planned: Path) -> None:
    """The planned guides' index lines were their purposes alone ('Diagnosing and fixing
    problems.'), which a reviewer found said nothing. A guide's line is its purpose and what it
    holds, cut to length."""
    index = _page(farmbot_planned, "wiki/index.md")
    line = next(x for x in index.splitlines() if "(guides/getting-started-guide.md)" in x)
    assert "Installing, setting up and connecting. In this guide: Construct the Gantry" in line, line
    assert len(line.split(" — ", 1)[1].split(" *Keywords:*")[0]) <= 160


def test_a_device_page_leaves_out_what_a_newer_source_changed() -> None:
    """The Sprout 3 page quoted the firmware 3.1 notes' 'The low-water alert is unchanged in this
    release and still triggers at 20%' as a Superseded note under 'Other fixes', and never the
    current 15% (a reviewer's worst passage). A page gathering what holds of a device leaves out
    what a newer source changed; the release notes' home keeps the dated note."""
    for device in ("sprout-3", "grove-6", "canopy-12"):
        text = _page(REPO, f"wiki/devices/{device}.md")
        assert "still triggers at 20%" not in text and "**Superseded**" not in text, device
    assert "Water level readings on the Sprout 3 are smoother" in _page(REPO, "wiki/devices/sprout-3.md")
    assert "still triggers at 20%" in _page(REPO, "wiki/topics/firmware-releases.md")


def test_a_summary_cut_to_length_ends_between_two_items() -> None:
    """A guide's index line, cut to length, ended inside a question ('How long can vacation mode
    run with app 5.0? · Vacation mode · How…'): it ends between two items of its contents."""
    from wikic.compile.librarian.extract import summary_of

    line = "What to do before a trip. In this guide: " + " · ".join(
        [
            "How long can vacation mode run with app 5.0?",
            "Vacation mode",
            "How long does a full water tank last?",
        ]
        * 3
    )
    cut = summary_of([line])
    assert cut.endswith("?…") or cut.endswith("mode…"), cut
    assert len(cut) <= 160


def test_a_device_page_quotes_no_part_of_a_pair_without_its_sibling(farmbot_compiled: Path) -> None:
    """The Genesis page quoted 'Sequence 2: Plant one seed for every plant in the group' of 'Plant
    Your First Garden' for its 'Genesis kits only', meaningless without Sequence 1 (review L's
    worst FarmBot passage). A numbered part beside a sibling reads only in its document."""
    text = _page(farmbot_compiled, "wiki/devices/farmbot-genesis.md")
    assert "Sequence 2: Plant one seed" not in text


def test_a_guide_s_overview_table_compares_two_things_to_four() -> None:
    """The cleaning guide opened with '| Model | Tank capacity (l) |', a column that compares
    nothing the guide is about, and the first-week guide with seven columns, two of them headed by
    FAQ questions (review M). The holiday guide's table (tank, refills, vacation mode) stays."""

    def table_head(name: str) -> str | None:
        lines = body_lines(_page(REPO, f"wiki/guides/{name}.md"))
        return next((x for x in lines if x.startswith("| Model |")), None)

    assert table_head("clean-garden") is None
    assert (
        table_head("going-on-holiday")
        == "| Model | Tank capacity (l) | Typical refill intervals | Vacation mode |"
    )
    first_week = table_head("first-week")
    assert first_week is not None and 3 <= first_week.count("|") - 1 <= 5


def test_a_device_no_source_defines_opens_with_what_it_has() -> None:
    """The Genesis page opened with 'What the sources say about the FarmBot Genesis: …' and nothing
    about the Genesis itself (reviews L and M: 'never says what a Genesis is'). Its lead quotes a
    sentence of which it is the subject and that says what it has; a sentence that only names it,
    or of which a variant is the subject, is no lead."""
    from wikic.compile.librarian.extract import subject_sentences

    names = ("FarmBot Genesis", "Genesis")
    mentions = _guide_doc(
        "tools",
        "Tools",
        "# Tools\n\nThe seeder is used with Genesis kits and more.\n\n"
        "Genesis XL kits include a longer gantry.\n",
    )
    has = _guide_doc(
        "encoders",
        "Encoders",
        "# Rotary encoders\n\nAll of our top-of-the-line Genesis kits include rotary encoders on every motor.\n",
    )
    assert subject_sentences(names, [mentions]) == []
    found = subject_sentences(names, [mentions, has])
    assert [s.text for s in found] == [
        "All of our top-of-the-line Genesis kits include rotary encoders on every motor."
    ]


def test_the_genesis_page_says_what_the_genesis_has(farmbot_compiled: Path) -> None:
    lines = body_lines(_page(farmbot_compiled, "wiki/devices/farmbot-genesis.md"))
    lead = lines[: next(n for n, x in enumerate(lines) if x.startswith("## "))]
    assert any("Genesis kits include rotary encoders" in x for x in lead), lead
    # its index line says what the page holds, not the one thing its lead says the Genesis has
    index = _page(farmbot_compiled, "wiki/index.md")
    line = next(x for x in index.splitlines() if "(devices/farmbot-genesis.md)" in x)
    assert "What the sources say about the FarmBot Genesis" in line and "rotary" not in line


def test_a_topic_opens_with_its_namesake_s_opening_without_repeating_its_title(
    farmbot_compiled: Path,
) -> None:
    """'Getting Started' (one article, the page's namesake) read '# Getting Started', a line of its
    headings, then '## Getting Started' over its opening; 'Electronics and Wiring' did so over its
    namesake's description, its only prose (review M). The opening opens the page, unheaded, and
    the namesake's own sections follow at the page's first level."""
    started = body_lines(_page(farmbot_compiled, "wiki/topics/getting-started.md"))
    assert "## Getting Started" not in started
    contents = next(n for n, x in enumerate(started) if x.startswith("*On this page: "))
    assert any(x.startswith("If you just finished your FarmBot hardware") for x in started[:contents])
    assert "## Step 1: Create a web app account" in started
    wiring = body_lines(_page(farmbot_compiled, "wiki/topics/electronics-and-wiring.md"))
    assert "## Electronics and Wiring" not in wiring
    assert [x for x in wiring if x and not x.startswith("# ")][0].startswith(
        "Tech specs for the electronics and wiring in FarmBot Express."
    )


def test_two_lists_of_ports_to_open_that_differ_are_flagged() -> None:
    """'Port 8883 - MQTT · Port 80 · Port 443 · Port 3002 - WebSockets' in one article, 'ports 1883
    (MQTT), 8883 (MQTT over SSL), 80 (HTTP), and 443 (HTTPS) … UDP port 123' in another: both
    stood as current, unflagged, and two readers of review M ranked it first (an IT department is
    handed one list). Numbers after 'ports' that are no ports ('2 USB ports … 0°C to 70°C') and
    a list inside the other are no disagreement."""
    from wikic.compile.disagreements import port_lists

    def said(doc):
        return {doc.path: [(s.anchor, x) for s in doc.sections for x in s.text.splitlines() if x.strip()]}

    blocked = _guide_doc(
        "blocked",
        "Blocked ports",
        "# Check for blocked ports\n\nPort 8883 - MQTT\nPort 80 - HTTP\nPort 443 - HTTPS\nPort 3002 - WebSockets\n",
    )
    firewall = _guide_doc(
        "firewall",
        "Firewall",
        "# Firewall\n\nFarmBot needs access to ports 1883 (MQTT), 8883 (MQTT over SSL), 80 (HTTP), and 443 (HTTPS).\n"
        "The services are provided on UDP port 123.\n",
    )
    chips = _guide_doc(
        "chips",
        "Temperature",
        "# Temperature\n\nThe hub (on models with 2 USB ports) runs from 0°C to 70°C, 85 at most, 40 typical.\n",
    )
    fewer = _guide_doc("fewer", "Fewer", "# Fewer\n\nOpen port 8883, port 80 and port 443.\n")
    found = port_lists(
        [blocked, firewall, chips, fewer], {**said(blocked), **said(firewall), **said(chips), **said(fewer)}
    )
    assert [(d.a.doc.id, d.b.doc.id, d.choice_a, d.choice_b) for d in found] == [
        ("blocked", "firewall", "ports 80, 443, 3002 and 8883", "ports 80, 123, 443, 1883 and 8883")
    ]


def test_the_connection_guide_flags_the_other_list_of_ports(farmbot_compiled: Path) -> None:
    guide = _page(farmbot_compiled, "wiki/guides/connection-problems.md")
    notes = [x for x in guide.splitlines() if x.startswith("Sources differ:") and "ports" in x]
    assert any("1883" in x and "3002" in x for x in notes), notes


def test_a_device_comparison_says_which_row_the_sources_say_little_of(farmbot_compiled: Path) -> None:
    """The Genesis row of 'FarmBot models compared' is dashes in all but two columns, which read
    as a table that does not compare (review N). Its lead says so; a full row is not named."""
    from wikic.compile.pageplan import _little_said

    rows = [(None, {"Width": 1, "Length": 2, "Cost": 3}), (None, {"Required hardware": 4})]
    devices = [{"title": "Mowbot Mini"}, {"title": "Mowbot Max"}]
    assert _little_said(devices, rows) == " For the Mowbot Max the sources state only required hardware."
    lines = body_lines(_page(farmbot_compiled, "wiki/comparisons/farmbot-models.md"))
    about = next(x for x in lines if x.startswith("*"))
    assert "For the FarmBot Genesis the sources state only required hardware" in about
    assert "For the FarmBot Express " not in about


def test_a_guide_brings_the_sections_its_steps_send_the_reader_to_by_name(farmbot_compiled: Path) -> None:
    """The connection guide said '1. Bring your device into "isolated mode" …' and '1. Perform a
    hard reset …', and the maintenance guide '… do another fit test', and neither quoted the
    sections of the same article that say how (review N). A section a quoted one names by its
    heading comes too, and so does what that one names in turn; 'Code 1' is not 'Code 12'."""
    from wikic.compile.guides import _named_as, with_named

    assert _named_as('Use "Isolated Mode" to find problem sources') == "isolated mode"
    assert _named_as("Perform a hard reset") == "hard reset"
    assert _named_as("Fit test") == "fit test" and _named_as("Troubleshooting") is None
    doc = _guide_doc(
        "net",
        "Troubleshooting",
        "# Troubleshooting\n\nStart here.\n\n# Perform a hard reset\n\nReflash the card.\n\n"
        '# Use "Isolated Mode"\n\n1. Perform a hard reset first.\n\n'
        '# Disconnects\n\n1. Bring the bot into "isolated mode".\n2. See code 12.\n\n# Code 1\n\nOffline.\n',
    )
    pool = [Candidate(doc, i) for i in range(len(doc.sections))]
    units = with_named([[pool[3]]], pool)
    assert sorted(c.index for u in units for c in u) == [1, 2, 3]
    connection = body_lines(_page(farmbot_compiled, "wiki/guides/connection-problems.md"))
    assert {'#### Use "Isolated Mode" to find problem sources', "#### Perform a hard reset"} <= set(
        connection
    )
    assert "### Fit test" in body_lines(_page(farmbot_compiled, "wiki/guides/maintenance.md"))


def test_a_line_giving_each_model_its_own_figure_is_on_each_model_s_page() -> None:
    """'At 15% there is about 0.18 litres left in a Sprout 3, 0.6 litres in a Grove 6 and 1.4
    litres in a Canopy 12 …' and the replacement panels' prices name every model, so no device
    page quoted them, and review N found the Sprout 3 page without its alert volume or panel
    price. A sentence that gives each model its own figure is each model's; one said of all of
    them ('Firmware 3.2 starts rolling out today to all Sprout 3, Grove 6 and Canopy 12 gardens')
    still is no one's."""
    from wikic.compile.gather import gives_each, names_every_model

    peers = [["Grove 6"], ["Canopy 12"]]
    sprout = {"title": "Sprout 3", "match": [], "peers": peers}
    each = "At 15% there is 0.18 litres left in a Sprout 3, 0.6 litres in a Grove 6 and 1.4 litres in a Canopy 12."
    every = "Firmware 3.2 starts rolling out today to all Sprout 3, Grove 6 and Canopy 12 gardens."
    assert gives_each(each, sprout) and not names_every_model(each, sprout)
    assert names_every_model(every, sprout) and not gives_each(every, sprout)
    for device in ("sprout-3", "grove-6", "canopy-12"):
        page = strip_citations(_page(REPO, f"wiki/devices/{device}.md"))
        assert "0.6 litres in a" in page and "replacement panels cost $29" in page, device
