"""The offline answer: units of layer-1 sections, how a question picks them, when it is refused,
and how eval scores answers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wikic.core.markdown import split_sections
from wikic.core.models import SourceDoc
from wikic.lookup.answer import Scorer, Shape, compose, fact_units, section_units, whole_lists
from wikic.lookup.ask import REFUSAL, Lookup
from wikic.lookup.eval import contains, load_questions, run_eval
from wikic.lookup.evidence import coverage, feature, judge, names, near
from wikic.transform.layer1 import parse_doc


def _doc(body: str, **meta) -> SourceDoc:
    meta = {"title": "Carrot", **meta}
    return SourceDoc(
        "crops",
        "carrot",
        "carrot",
        "layer1_sources/crops/carrot.md",
        meta["title"],
        meta,
        body,
        "",
        tuple(split_sections(body)),
    )


def _source(title: str, body: str, meta: str = "") -> str:
    return f"---\ntitle: {title}\n{meta}---\n\n# {title}\n\n{body}\n"


BODY = """# Setup

**Be patient** It can take up to 2 minutes to start.

To install it, follow these steps:

1. Download the image.
2. Flash the card.
   Keep it in the reader until done.
3. Insert the card.

|Model  |Width|Max Plant Height|
|-------|-----|----------------|
|Express|1.2m |0.5m
|XL     |2.4m |0.5m

- **Row spacing:** 20
- A plain bullet about soil.

**Step 1:** MOVE TO the tool.

**Step 2:** READ the sensor.
"""


def test_section_units_keep_rows_steps_items_and_callouts_whole():
    doc = _doc(BODY, row_spacing=20)
    units = section_units(doc, doc.sections[0])
    by_kind = {}
    for u in units:
        by_kind.setdefault(u.kind, []).append(u.text)
    assert "Be patient: It can take up to 2 minutes to start." in by_kind["sentence"]
    assert by_kind["row"] == [
        "Express — Width: 1.2m; Max Plant Height: 0.5m",
        "XL — Width: 2.4m; Max Plant Height: 0.5m",
    ]
    steps = [u for u in units if u.kind == "steps"]
    assert [s.parts for s in steps] == [
        ("Download the image.", "Flash the card. Keep it in the reader until done.", "Insert the card."),
        ("MOVE TO the tool.", "READ the sensor."),
    ]
    assert steps[0].context.endswith("follow these steps:")  # the lead-in travels with the list
    # a field rendered as a list item is left to the fact list, which names its subject
    assert "A plain bullet about soil." in by_kind["item"] and not any(
        "Row spacing" in t for t in by_kind["item"]
    )
    assert all(u.ref == "layer1_sources/crops/carrot.md#setup" for u in units)


def test_fact_units_name_the_subject_and_skip_record_fields():
    doc = _doc(
        "# Carrot\n\n## Details\n\n- **Row spacing:** 20\n- **Sun requirements:** Full Sun\n",
        row_spacing=20,
        sun_requirements="Full Sun",
        tank_capacity_l=1.2,
        html_url="https://example.com/carrot",
        image="/crops/carrot.jpg",
        description="A root.",
        common_names=["Karotte"],
        products=["grove-6", "canopy-12"],  # where the record is filed: no answer says it
        tags=["roots"],
        author="Hannah Lindqvist",  # who wrote it: no answer says it either
    )
    [facts] = fact_units(doc)
    assert facts.text == (
        "Carrot — Row spacing: 20; Sun requirements: Full Sun; Tank capacity (l): 1.2; Common names: Karotte"
    )
    assert facts.ref == "layer1_sources/crops/carrot.md#details"  # the section stating the values


def test_question_shapes():
    assert Shape.of("How far apart should I plant carrots?").quantities == ("spacing",)
    assert "duration" in Shape.of("How long until I see sprouts?").quantities
    assert Shape.of("How do I flash the card?").how_to
    assert not Shape.of("On a Genesis, what value for the missed-steps threshold?").how_to
    assert Shape.of("Which voltage does it run on?").quantities == ("voltage",)
    assert "area" in Shape.of("How much more growing area does the XL give me?").quantities


def test_a_quantity_question_gets_the_labelled_fact_first_and_a_how_to_question_the_steps():
    carrot = _doc(
        "# Carrot\n\n## Details\n\n- **Row spacing:** 20\n- **Height:** 35\n\n## Description\n\n"
        "Carrots are orange roots that children like to pull from the ground.\n",
        title="Carrot",
        height=35,
        row_spacing=20,
    )
    guide = SourceDoc(
        "docs",
        "flash",
        "flash",
        "layer1_sources/docs/flash.md",
        "Flashing",
        {"title": "Flashing"},
        BODY,
        "",
        tuple(split_sections(BODY)),
    )
    docs = {carrot.path: carrot, guide.path: guide}
    refs = [carrot.path + "#description", guide.path + "#setup"]
    units = compose("How far apart should I plant carrots?", docs, refs, lambda t: 1.0)
    assert units[0].kind == "facts" and units[0].text.startswith("Carrot — Row spacing: 20")
    units = compose("How do I install and flash the card?", docs, [guide.path + "#setup"], lambda t: 1.0)
    assert [u.kind for u in units] == ["steps"] and units[0].parts[0] == "Download the image."


def test_names_and_features_a_question_asks_about():
    assert names("Is there an official Home Assistant integration for FarmBot?") == [
        "Home Assistant",
        "FarmBot",
    ]
    assert names("I'm teaching the bot where my 16-pocket tray sits. Does it run on a Pi 5?") == ["Pi 5"]
    assert names("Does FarmBot work with Apple HomeKit?") == ["FarmBot", "Apple HomeKit"]
    assert feature("Is there a dark mode in the web app?") == ["dark", "mode"]
    assert feature("Does the web app support two-factor authentication?") == [
        "two",
        "factor",
        "authentication",
    ]
    assert feature("Is there a cap on how many it adds?") == []  # one word names no feature
    # a thing asked for ('get a…'), or said to come with something
    assert feature("I forgot my password. How do I get a reset link emailed to me?") == [
        "reset",
        "link",
        "emailed",
    ]
    assert feature("How many years of warranty come with an Express kit?") == ["years", "warranty"]
    assert feature("What spare parts are included with the kit?") == ["spare", "parts"]
    assert near(["v1.1", "farmduino"], "the Farmduino Express v1.1 board")
    assert not near(["dark", "mode"], "dark images ... " + "word " * 20 + "isolated mode")


def test_judge_refuses_named_things_and_features_the_evidence_does_not_hold():
    evidence = [
        "The camera takes dark photos at night. " + "It has a lens and a sensor. " * 3 + "A read-only mode."
    ]

    def verdict(question: str):
        return judge(
            question, evidence, lambda t: 1.0, lambda t, prefix=False: not t.startswith("zigb"), _coverage
        )

    assert verdict("Does the camera take dark photos?").reason == ""
    assert "Home Assistant" in verdict("Does the camera work with Home Assistant?").reason
    # 'dark' and 'mode' both occur, but not as one thing: 'is there a dark mode' is not answered
    assert "dark mode" in verdict("Is there a dark mode for the camera?").reason
    assert "zigbee" in verdict("zigbee zigbee camera?").reason
    assert verdict("What about soil moisture calibration weights?").refused  # too little covered


def test_a_personal_pronoun_is_no_word_of_the_question():
    # 'me' is as rare in a KB as a product name, but a source saying it ('Can you hear me now?')
    # holds nothing of a question asking 'can it tell me…'
    verdict = judge(
        "Can the camera tell me whether my squash leaves have powdery mildew?",
        ["Squash leaves grow on long vines. Can you hear me now?"],
        lambda t: 1.0,
        lambda t, prefix=False: True,
        lambda terms, text: coverage(terms, text, lambda t: 1.0),
    )
    assert verdict.coverage == pytest.approx(2 / 7)  # squash, leaves of seven words; 'me' is none


def test_a_section_sharing_one_word_with_the_question_is_no_evidence():
    question = "Can the camera tell me whether my squash leaves have powdery mildew?"

    def weight(term):
        return 4.0 if term in ("powdery", "mildew") else 1.0

    def verdict(evidence):
        return judge(
            question,
            evidence,
            weight,
            lambda t, prefix=False: True,
            lambda terms, text: coverage(terms, text, weight),
        )

    leaves = "Squash leaves are large and rough."
    # a setting that 'tells' the motors how far to turn says nothing of cameras or squash
    chance = verdict([leaves, "This setting tells the motors how far to turn."])
    assert chance.refused and chance.coverage == pytest.approx(2 / 13)
    # the same word beside another of the question's counts
    held = verdict([leaves, "The camera tells you how far the plants have grown."])
    assert not held.refused and held.coverage == pytest.approx(4 / 13)


def _coverage(terms, text):
    low = text.lower()
    return sum(t in low for t in terms) / max(1, len(terms))


def test_contains_matches_numbers_whole():
    assert contains("Thin to 10 cm apart", "10")
    assert contains("up to 10mm deep", "10")  # a number followed by its unit
    assert not contains("at most 100 plants", "10") and not contains("version 1.10", "1.1")
    assert contains("about 5,000 per hour", "5,000") and contains("FULL   SUN", "full sun")
    assert not contains("page 25,000", "5,000")


def test_eval_scores_answers_per_type_and_lists_failures(tree):
    root = tree(
        {
            "layer1_sources/crops/carrot.md": _source(
                "Carrot",
                "## Details\n\n- **Row spacing:** 20\n- **Height:** 35\n",
                "row_spacing: 20\nheight: 35\n",
            ),
            "layer1_sources/faq/pump.md": _source(
                "Pump", "## Noise\n\nThe pump hums for 5 minutes every 30 minutes."
            ),
            "questions.yaml": {
                "questions": [
                    {
                        "id": "a",
                        "type": "crop",
                        "question": "What row spacing do carrots need?",
                        "expected": ["crops:carrot"],
                        "answer_contains": ["20"],
                        "answer_field": "row_spacing",
                    },
                    {
                        "id": "b",
                        "type": "factoid",
                        "question": "When does the pump hum?",
                        "expected": ["faq:pump"],
                        "answer_contains": ["every 30 minutes", "99 days"],
                    },
                    {
                        "id": "c",
                        "type": "unanswerable",
                        "question": "Does it work with Apple HomeKit?",
                        "expected": [],
                    },
                ]
            },
        }
    )
    report = run_eval(root, load_questions(root / "questions.yaml"), "raw")
    a, b, c = report.cases
    assert a.answer_correct and a.cited_gold and a.field_stated and a.string_recall == 1.0
    assert b.answer_correct is False and b.missing == ["99 days"] and b.string_recall == 0.5
    assert b.problems == ["answer lacks ['99 days']"] and "every 30 minutes" in b.answer
    assert c.refused and c.answer_correct is None and not c.failed
    s = report.summary
    assert s["answer_accuracy"] == 0.5 and s["string_recall"] == 0.75 and s["field_stated"] == 1.0
    assert set(report.by_type) == {"crop", "factoid", "unanswerable"}
    assert (
        report.by_type["crop"]["answer_accuracy"] == 1.0
        and report.by_type["factoid"]["answer_accuracy"] == 0.0
    )
    assert report.as_dict()["cases"][1]["missing"] == ["99 days"]


def test_a_question_naming_what_the_kb_lacks_is_refused_though_its_words_occur(tree):
    files = {
        "layer1_sources/faq/camera.md": _source("Camera", "## Photos\n\nPhotos taken at night look dark."),
        "layer1_sources/faq/modes.md": _source(
            "Modes", "## Read-only mode\n\nThe read-only mode locks the account."
        ),
    }
    for i in range(10):
        files[f"layer1_sources/faq/other-{i}.md"] = _source(
            f"Other {i}", f"## Part\n\nThe app shows item {i}."
        )
    lookup = Lookup(tree(files))
    try:
        assert lookup.answer("Is there a dark mode in the app?", "search").text == REFUSAL
        assert not lookup.answer("Do photos taken at night look dark?", "search").refused
    finally:
        lookup.close()


def test_the_example_kb_answers(example_kb):
    """Answer-level figures on the example KB's own questions (issue 11 asks for 0.9)."""
    report = run_eval(example_kb, load_questions(example_kb / "examples" / "questions.yaml"), "search")
    s = report.summary
    assert s["answer_accuracy"] >= 0.75 and s["correct_refusal"] >= 0.8 and s["false_refusal"] <= 0.05


def test_parse_doc_reads_frontmatter_lazily(tmp_path: Path):
    """layer1 no longer imports frontmatter at module level (search and ask start faster)."""
    (tmp_path / "layer1_sources" / "faq").mkdir(parents=True)
    path = tmp_path / "layer1_sources" / "faq" / "x.md"
    path.write_text(yaml.safe_dump({"title": "X"}).join(["---\n", "---\n\n# X\n\nText.\n"]))
    assert parse_doc(tmp_path, path).title == "X"


def test_scorer_names_longest_first():
    radish = _doc("# x\n", title="Cherry Belle Radish")
    cherry = SourceDoc(
        "crops",
        "bing",
        "bing",
        "layer1_sources/crops/bing.md",
        "Bing Cherry",
        {"title": "Bing Cherry", "common_names": ["Cherry"]},
        "",
        "",
        (),
    )
    radish = SourceDoc(
        "crops",
        "cb",
        "cb",
        "layer1_sources/crops/cb.md",
        "Cherry Belle Radish",
        {"title": "Cherry Belle Radish"},
        "",
        "",
        (),
    )
    scorer = Scorer("Do I thin Cherry Belle radishes like French Breakfast ones?", lambda t: 5.0)
    assert scorer.named([cherry, radish]) == {radish.path}


def _returns(body: str) -> SourceDoc:
    return SourceDoc(
        "faq",
        "r",
        "r",
        "layer1_sources/faq/r.md",
        "Returns",
        {"title": "Returns"},
        body,
        "",
        tuple(split_sections(body)),
    )


def test_a_short_section_is_given_whole_in_its_own_order():
    body = "# Returns\n\nYou can return a garden within 60 days of delivery.\nThis replaces the older return policy.\n"
    doc = _returns(body)
    units = compose("What is the return policy?", {doc.path: doc}, [doc.path + "#returns"], lambda t: 1.0)
    assert [u.text for u in units] == [
        "You can return a garden within 60 days of delivery.",
        "This replaces the older return policy.",
    ]


def test_a_superseded_section_is_never_stated():
    body = (
        "# Returns\n\n## Window\n\nReturn within 30 days.\n\n## Label\n\nA free return label is included.\n"
    )
    doc = _returns(body)
    refs = [doc.path + "#window", doc.path + "#label"]
    stated = compose("How many days is the return window?", {doc.path: doc}, refs, lambda t: 1.0)
    assert "Return within 30 days." in [u.text for u in stated]
    newer = {doc.path + "#window": "layer1_sources/faq/r2.md"}  # only that section was replaced
    stated = compose("How many days is the return window?", {doc.path: doc}, refs, lambda t: 1.0, newer)
    assert stated and all(u.ref != doc.path + "#window" for u in stated)


def test_a_question_title_names_no_subject_and_tags_state_no_fact():
    faq = SourceDoc(
        "faq",
        "ret",
        "ret",
        "layer1_sources/faq/ret.md",
        "What is the return policy?",
        {"title": "What is the return policy?", "tags": ["returns", "policy"], "window_days": 60},
        "# What is the return policy?\n\nReturn within 60 days.\n",
        "",
        (),
    )
    scorer = Scorer("What is the return policy?", lambda t: 5.0)
    assert scorer.named([faq]) == set()  # a question for a title is not a name
    [facts] = fact_units(faq)
    assert facts.parts == ("Window days: 60",)  # tags file the record; they say nothing of it


def _article(body: str, title: str = "Logs", key: str = "logs") -> SourceDoc:
    return SourceDoc(
        "docs",
        key,
        key,
        f"layer1_sources/docs/{key}.md",
        title,
        {"title": title},
        body,
        "",
        split_sections(body),
    )


LIMITS = """# Log limits

We limit how many logs a device can store within a given time period.

Time Period | Max Number of Logs
--- | ---
1 minute | 250
1 hour | 5,000
1 day | 25,000

Warnings are shown when a limit is reached.
"""


def test_a_short_table_is_a_unit_whole_with_its_column_labels():
    doc = _article(LIMITS)
    units = section_units(doc, doc.sections[0])
    table = [u for u in units if u.kind == "table"]
    assert [u.parts for u in table] == [
        (
            "Time Period: 1 minute, Max Number of Logs: 250",
            "Time Period: 1 hour, Max Number of Logs: 5,000",
            "Time Period: 1 day, Max Number of Logs: 25,000",
        )
    ]
    rows = [u for u in units if u.kind == "row"]
    assert {u.block for u in rows} == {table[0].block}  # rows know the table they belong to
    # a quantity question gets the whole labelled table ('max' labels a limit), and none of its
    # rows again
    units = compose(
        "Is there a cap on how many logs it can send?",
        {doc.path: doc},
        [doc.path + "#log-limits"],
        lambda t: 1.0,
    )
    assert units[0].kind == "table"
    assert not [u for u in units if u.kind == "row"]


def test_a_limit_labelled_by_a_phrase_is_a_labelled_quantity():
    scorer = Scorer("Is there a cap on how many plants it adds?", lambda t: 1.0)
    assert scorer.quantity_of("You can only add up to 100 plants at a time.") > scorer.quantity_of(
        "Planting 100 seeds takes a while."
    )


def test_two_items_of_one_short_list_are_given_as_the_list_whole_in_its_order():
    doc = _doc(
        "# Refills\n\nIt depends on the garden.\n\n- Sprout 3: about 7 days.\n- Grove 6: about 14 days."
        "\n- Canopy 12: about 14 days.\n"
    )
    units = section_units(doc, doc.sections[0])
    items = [u for u in units if u.kind == "item"]
    lead = units[0]
    merged = whole_lists([items[2], lead, items[0]], units)
    assert [u.kind for u in merged] == ["list", "sentence"]
    assert merged[0].parts == (
        "Sprout 3: about 7 days.",
        "Grove 6: about 14 days.",
        "Canopy 12: about 14 days.",
    )
    assert whole_lists([items[1], lead], units) == [items[1], lead]  # one item stays an item


def test_a_measured_number_is_labelled_by_its_section_heading():
    """'about 14 days' under 'How long does a full tank last?' states the duration asked for, as
    much as a sentence saying 'lasts'."""
    scorer = Scorer("How many days will a full tank keep my plants watered?", lambda t: 1.0)
    heading = "How long does a full water tank last? Typical refill intervals"
    item = "Grove 6 (4.0-litre tank): about 14 days with six mature plants."
    assert scorer.quantity_of(item, heading) > scorer.quantity_of(item)
    assert scorer.quantity_of(item, heading) == scorer.quantity_of("A full tank lasts about 14 days.")
    # a heading labels a number only when the number is measured as the quantity is
    assert scorer.quantity_of("Grove 6 holds 6 plants.", heading) == scorer.quantity_of(
        "Grove 6 holds 6 plants."
    )


def test_a_derived_word_finds_its_answer_and_an_unknown_name_is_still_refused(tmp_path: Path):
    """'crusty' is answered as 'crust'; a product the sources never name
    ('HomeKit', which splits into 'home kit') is judged as typed, so it is still refused."""
    (tmp_path / "layer1_sources" / "faq").mkdir(parents=True)
    faq = {
        "crust": ("Crust on pods", "Crust on the pods is mineral salt from hard water."),
        "fuzz": ("Fuzz on pods", "White fuzz on the roots of pods is usually root hairs."),
        "home": ("The home kit", "The white home kit works with any wall socket in a bright room."),
    }
    for name, (title, body) in faq.items():
        (tmp_path / "layer1_sources" / "faq" / f"{name}.md").write_text(_source(title, body), "utf-8")
    lookup = Lookup(tmp_path)
    try:
        crusty = lookup.answer("Why are my pods white and crusty?", mode="search")
        homekit = lookup.answer("Does the kit work with HomeKit?", mode="search")
    finally:
        lookup.close()
    assert not crusty.refused and "mineral salt" in crusty.sentences[0].text
    assert homekit.refused


TWO_PARTS = """# Area

The XL gives 14.4m2 of growing area, the Express 3.6m2.

The growing area of the XL fits a raised bed of 2.4m by 6m.

Much of the XL growing area suits a raised bed of vegetables.

# Build time

Building it will take about 12 hours.
"""


def test_support_covers_the_part_of_the_question_the_best_unit_leaves_out():
    doc = _article(TWO_PARTS, "Express models", "express")
    refs = [doc.path + "#area", doc.path + "#build-time"]
    question = "How much growing area does the XL give, and how long does its raised bed take to build?"
    text = " ".join(u.text for u in compose(question, {doc.path: doc}, refs, lambda t: 1.0))
    assert "14.4m2" in text and "12 hours" in text


SYMPTOMS = """# Choose the needle

Some seeds are heavy. The seed may get picked up but then dropped while the bot is moving to the planting spot. In either case, switch to a larger needle.

Every kit includes three needles of different sizes so that you can pick one for each kind of seed, from tiny lettuce seeds to large squash seeds, and change them in seconds.
"""


def test_a_reported_problem_gets_what_follows_the_sentence_describing_it():
    doc = _article(SYMPTOMS, "Picking up seeds", "seeds")
    refs = [doc.path + "#choose-the-needle"]
    report = "The seed gets picked up but is dropped while the bot is moving to the planting spot."
    assert Shape.of(report).report and not Shape.of("Why is the seed dropped?").report
    units = compose(report, {doc.path: doc}, refs, lambda t: 1.0)
    assert units[0].text.startswith("The seed may get picked up")
    assert units[1].text == "In either case, switch to a larger needle."


def test_question_parts():
    from wikic.lookup.answer import question_parts

    assert question_parts("How deep do beet seeds go, and how long until I see sprouts?") == [
        "How deep do beet seeds go",
        "how long until I see sprouts?",
    ]
    # a statement sets the scene and asks nothing; one question is not in parts
    assert question_parts("I'm torn between the two. How much area does the XL give?") == []
    assert question_parts("What should I put on the leadscrew? Is normal grease fine?") == [
        "What should I put on the leadscrew?",
        "Is normal grease fine?",
    ]


def test_each_part_of_a_question_gets_its_best_unit_and_other_subjects_facts_stay_out():
    spinach = _doc(
        "# Spinach\n\n## Details\n\n- **Row spacing:** 30\n",
        title="Spinach",
        row_spacing=30,
        sowing_method="Direct seed outdoors, thin to 15cm when seedlings are 3cm high",
    )
    endive = SourceDoc(
        "crops",
        "endive",
        "endive",
        "layer1_sources/crops/endive.md",
        "Belgian Endive",
        {"title": "Belgian Endive", "row_spacing": 15, "sowing_method": "Direct seed, thin to 15cm apart"},
        "# Belgian Endive\n\n## Details\n\n- **Row spacing:** 15\n",
        "",
        tuple(split_sections("# Belgian Endive\n\n## Details\n\n- **Row spacing:** 15\n")),
    )
    seq = _article(
        "# Plant one seed\n\nThe planting sequence pushes the seed 10 to 40mm deep into the soil.\n",
        "Sequences",
        "sequences",
    )
    docs = {d.path: d for d in (spinach, endive, seq)}
    refs = [spinach.path + "#details", endive.path + "#details", seq.path + "#plant-one-seed"]
    question = (
        "I'm sowing spinach. How deep should the bot push the seed, and how far apart will the plants end up?"
    )
    rare = {"spinach", "belgian", "endive"}  # names are rare words
    units = compose(question, docs, refs, lambda t: 5.0 if t in rare else 1.0)
    text = " ".join(u.text for u in units)
    assert "10 to 40" in text and "15cm" in text
    assert "Belgian Endive" not in text
    assert len([u for u in units if u.kind == "facts"]) == 1  # one fact list, once


def test_the_second_part_of_a_question_is_answered_though_the_first_part_scores_higher():
    seeding = _article(
        "# Seeding\n\nThe bot pushes the seed 5mm deep into the soil when seeding.\n\n"
        "The seeding depth of the bot depends on the seed.\n\n"
        "Deep seeds and shallow seeds need different settings for the bot to push.\n",
        "Seeding",
        "seeding",
    )
    thinning = _article("# Thinning\n\nThin the plants 15cm apart.\n", "Thinning", "thinning")
    docs = {seeding.path: seeding, thinning.path: thinning}
    refs = [seeding.path + "#seeding", thinning.path + "#thinning"]
    question = "How deep should the bot push the seed, and how far apart will the plants end up?"
    texts = [u.text for u in compose(question, docs, refs, lambda t: 1.0)]
    assert texts[0] == "The bot pushes the seed 5mm deep into the soil when seeding."
    assert "Thin the plants 15cm apart." in texts


WIRED = """# Try a wired connection

A cable is the most reliable way to connect the bot to the internet, with no interference at all.

## Genesis

Connect an Ethernet cable between the Raspberry Pi and your router, then choose Ethernet when prompted.

## Express v1.1

Connect an Ethernet cable between the Ethernet port on the board and your router, then choose Ethernet when prompted.
The board also carries a USB hub and three status lights beside the port for the link and its speed.

## Express v1.0

Buy a USB hub from a third party vendor first: these kits have no port of their own.

# Improve the signal

Move the router closer to the bot, or add a range extender near the garden.
"""


def test_a_question_naming_two_variants_gets_the_sibling_section_of_each():
    doc = _article(WIRED, "Connecting to the internet", "internet")
    board = _article(
        "# Express board v1.1\n\nThe Express v1.1 board is not compatible with the Pi of Express v1.0 kits.\n",
        "Express boards",
        "boards",
    )
    docs = {doc.path: doc, board.path: board}
    refs = [doc.path + "#express-v11", board.path + "#express-board-v11", doc.path + "#genesis"]
    refs += [doc.path + "#improve-the-signal"]
    question = "Can I plug an Ethernet cable into an Express? Mine's a v1.0 and my neighbour's is a v1.1."
    texts = [u.text for u in compose(question, docs, refs, lambda t: 1.0)]
    assert texts[0].startswith("Connect an Ethernet cable between the Ethernet port")
    assert any(t.startswith("Buy a USB hub") for t in texts)
    # a sibling of another subject (Genesis) and a heading unlike the best one's are no variants
    assert not any("Raspberry Pi" in t or "range extender" in t for t in texts)
    one = [
        u.text
        for u in compose("Can I plug an Ethernet cable into my Express v1.1?", docs, refs, lambda t: 1.0)
    ]
    assert not any(t.startswith("Buy a USB hub") for t in one)


REFILLS = """# Typical refill intervals

- **Sprout 3** (1.2-litre tank): about 7 days.
- **Grove 6** (4.0-litre tank): about 14 days.

Warm rooms increase water use.

- Commercial use
- Large farms
"""


def test_a_short_bulleted_list_is_a_unit_whole_and_its_items_are_not_repeated():
    doc = _article(REFILLS, "Refills", "refills")
    units = section_units(doc, doc.sections[0])
    lists = [u for u in units if u.kind == "list"]
    assert [u.parts for u in lists] == [
        ("Sprout 3 (1.2-litre tank): about 7 days.", "Grove 6 (4.0-litre tank): about 14 days."),
        ("Commercial use", "Large farms"),
    ]
    items = [u for u in units if u.kind == "item"]
    assert [u.block for u in items] == [lists[0].block] * 2 + [lists[1].block] * 2
    refs = [doc.path + "#typical-refill-intervals"]
    units = compose("How many days does a tank last?", {doc.path: doc}, refs, lambda t: 1.0)
    said = [part for u in units for part in (u.parts if u.kind == "list" else (u.text,))]
    assert (
        "Sprout 3 (1.2-litre tank): about 7 days." in said
        and "Grove 6 (4.0-litre tank): about 14 days." in said
    )
    assert len(said) == len(set(said))  # a list and its own items are never both given
    # a whole list holding none of the question's words is about something else
    scorer = Scorer("How many days does a tank last?", lambda t: 1.0)
    assert scorer.score(lists[1], 0) < scorer.score(lists[0], 0) / 2


def test_an_area_asked_for_is_the_number_labelled_area_not_a_better_ranked_width():
    beds = _article(
        "# Bed size\n\n|Model|Outer Bed Width|Outer Bed Length|\n|---|---|---|\n"
        "|Express|1.13m max|3m recommended|\n|Express XL|2.3m max|6m recommended|\n",
        "Building a raised bed",
        "beds",
    )
    models = _article(
        "# Economies of scale\n\n|Model|Width|Length|Area|\n|---|---|---|---|\n"
        "|Express|1.2m|3m|3.6m2|\n|Express XL|2.4m|6m|14.4m2|\n",
        "Comparing the kits",
        "kits",
    )
    docs = {beds.path: beds, models.path: models}
    refs = [beds.path + "#bed-size", models.path + "#economies-of-scale"]  # the widths rank first
    question = "How much more growing area does the XL give me, and how much longer will it take to build?"
    texts = " ".join(u.text for u in compose(question, docs, refs, lambda t: 1.0))
    assert "14.4m2" in texts
