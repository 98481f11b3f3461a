"""Versioned documents: ``supersedes`` with a source id, a file name or a ``#section``, version
chains proposed by ``plan``, and a folder of policies that compiles with no hand edit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from wikic.check.run import check
from wikic.cli.app import app
from wikic.compile.schema import VersionChain
from wikic.compile.versions import resolve_supersedes, version_chains, version_of
from wikic.core.markdown import split_sections
from wikic.core.models import SourceDoc
from wikic.lookup.ask import Lookup

runner = CliRunner()


def doc(path: str, body: str = "# T\n\n## Alpha\n\nA.\n\n## Beta\n\nB.\n", **meta) -> SourceDoc:
    source, key = path.split("/", 1)
    key = key.removesuffix(".md")
    return SourceDoc(
        source,
        meta.pop("id", key + ".md"),
        key,
        f"layer1_sources/{path}",
        meta.pop("title", key),
        meta,
        body,
        "sha256:x",
        tuple(split_sections(body)),
    )


def test_supersedes_names_an_id_a_file_or_another_source_and_optionally_a_section() -> None:
    docs = [
        doc("pol/a.md"),
        doc("pol/b.md", supersedes="a.md"),  # a file name in the same source
        doc("pol/c.md", supersedes=["b", "faq:q1#beta"]),  # a key, and a section of another source
        doc("faq/q1.md", id="q1"),
        doc("pol/d.md", supersedes="c.md#Alpha"),  # a heading's text works as well as its anchor
        doc("pol/e.md", supersedes=["nope.md", "a.md#gamma", "e.md"]),
    ]
    superseded, problems = resolve_supersedes(docs)
    assert superseded == {
        "layer1_sources/pol/a.md": "layer1_sources/pol/b.md",
        "layer1_sources/pol/b.md": "layer1_sources/pol/c.md",
        "layer1_sources/faq/q1.md#beta": "layer1_sources/pol/c.md",
        "layer1_sources/pol/c.md#alpha": "layer1_sources/pol/d.md",
    }
    assert [(p.value, p.reason) for p in problems] == [
        ("nope.md", "no document of that name"),
        ("a.md#gamma", "layer1_sources/pol/a.md has no section 'gamma'"),
        ("e.md", "a document cannot supersede itself"),
    ]
    chained, problems = resolve_supersedes(docs, [VersionChain("faq", ("q1", "gone"))])
    assert chained == superseded  # a chain naming one document links nothing
    assert ("schema/wiki.yaml", "faq:gone") in [(p.path, p.value) for p in problems]


def test_version_suffixes_and_dates_order_a_chain() -> None:
    assert version_of("refunds_v2") == ("refunds", (2,))
    assert version_of("refunds-v1.1") == ("refunds", (1, 1))
    assert version_of("refunds-2025-03") == ("refunds", (2025, 3))
    assert version_of("firmware-3") == ("firmware-3", ())  # a bare number names a thing
    docs = [
        doc("pol/ship_v2.md", updated_at="2024-05-01"),
        doc("pol/ship.md", updated_at="2023-01-01"),
        doc("pol/ship_v10.md", updated_at="2025-01-01"),
        doc("pol/hr/leave.md", updated="2025-02-01"),
        doc("pol/archive/leave.md", updated="2023-09-01"),
        doc("pol/tips_v1.md"),
        doc("pol/old/tips_v1.md"),
        doc("pol/alone-2025.md"),
    ]
    chains = {c.docs[0].key: c for c in version_chains(docs, {})}
    assert [d.key for d in chains["ship"].docs] == ["ship", "ship_v2", "ship_v10"]
    assert [d.key for d in chains["archive/leave"].docs] == ["archive/leave", "hr/leave"]
    assert "ordered by updated date" in chains["archive/leave"].evidence
    assert chains["old/tips_v1"].todo  # same version, no dates: a person must order them
    declared = {"layer1_sources/pol/ship.md": "layer1_sources/pol/ship_v2.md"}
    declared["layer1_sources/pol/ship_v2.md"] = "layer1_sources/pol/ship_v10.md"
    assert "ship" not in {c.docs[0].key for c in version_chains(docs, declared)}  # already stated


def md(meta: dict, body: str) -> str:
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + body


# A company handbook in Markdown: version chains by suffix, by year and by folder+date, whole-document
# and section-level ``supersedes``, files without a title (first H1) and without any heading.
POLICIES = {
    "returns.md": md(
        {"title": "Returns", "department": "Sales", "updated": "2024-01-10"},
        "## Return window\n\nCustomers may return unused items within 30 days of delivery.\n\n"
        "## Refund method\n\nRefunds go back to the original card within 5 business days.\n",
    ),
    "returns-2025.md": md(
        {"title": "Returns", "department": "Sales", "updated": "2025-03-01"},
        "## Return window\n\nCustomers may return unused items within 45 days of delivery.\n\n"
        "## Refund method\n\nRefunds go back to the original card within 3 business days.\n",
    ),
    "shipping_v1.md": md(
        {"title": "Shipping", "department": "Sales", "updated": "2023-02-01"},
        "## Delivery times\n\nStandard parcels arrive within 7 working days.\n",
    ),
    "shipping_v2.md": md(
        {"title": "Shipping", "department": "Sales", "updated": "2024-02-01"},
        "## Delivery times\n\nStandard parcels arrive within 5 working days.\n",
    ),
    "shipping_v3.md": md(
        {"title": "Shipping", "department": "Sales", "updated": "2025-02-01"},
        "## Delivery times\n\nStandard parcels arrive within 3 working days across the mainland.\n",
    ),
    "security-handbook.md": md(
        {"title": "Security handbook", "department": "IT", "updated": "2023-05-01"},
        "## Passwords\n\nPasswords need at least 8 characters and are rotated every 90 days.\n\n"
        "## Laptops\n\nLaptops lock the screen after 5 minutes without input.\n\n"
        "## Visitors\n\nVisitors sign the guest book at reception and wear a red badge all day.\n",
    ),
    "password-standard.md": md(
        {
            "title": "Password standard",
            "department": "IT",
            "updated": "2025-06-01",
            "supersedes": "security-handbook.md#passwords",
        },
        "## Length and rotation\n\nPasswords need at least 14 characters and are never rotated on a schedule.\n",
    ),
    "onboarding.md": md(
        {"title": "Onboarding", "department": "HR", "updated": "2024-04-01"},
        "## First day\n\nNew starters meet their buddy at nine in the main lobby.\n\n"
        "## Equipment\n\nEvery new starter receives a 13-inch laptop and a headset.\n",
    ),
    "equipment-2025.md": md(
        {"title": "Equipment for new starters", "department": "IT", "supersedes": "onboarding.md#Equipment"},
        "## Standard kit\n\nEvery new starter receives a 14-inch laptop, a headset and a docking station.\n",
    ),
    "hr/leave.md": md(
        {"title": "Annual leave", "department": "HR", "updated": "2025-01-15"},
        "## Allowance\n\nFull-time staff take 28 days of paid leave a year.\n",
    ),
    "archive/leave.md": md(
        {"title": "Annual leave", "department": "HR", "updated": "2022-01-15"},
        "## Allowance\n\nFull-time staff take 25 days of paid leave a year.\n",
    ),
    "travel-expenses-old.md": md(
        {"title": "Travel expenses", "department": "Finance", "updated": "2022-06-01"},
        "## Meals\n\nMeals on business trips are refunded up to 30 euros a day.\n",
    ),
    "expenses.md": md(
        {
            "title": "Expenses",
            "department": "Finance",
            "updated": "2025-01-01",
            "supersedes": "travel-expenses-old.md",
        },
        "## Meals\n\nMeals on business trips are refunded up to 40 euros a day.\n\n"
        "## Receipts\n\nReceipts are uploaded to the finance portal within 30 days.\n",
    ),
    "holidays.md": "# Public holidays\n\nThe office closes on public holidays and between Christmas and New Year.\n",
    "it-support.md": "Call the service desk on extension 4400 when a laptop will not start.\n\n"
    "Troubleshooting the VPN starts with restarting the client and checking the network.\n",
    "code-of-conduct.md": md(
        {"title": "Code of conduct", "department": "HR"},
        "## Respect\n\nColleagues treat each other with courtesy in meetings and in writing.\n",
    ),
    "remote-work.md": md(
        {"title": "Remote work", "department": "HR", "updated": "2024-09-01"},
        "## Home office\n\nStaff may work from home up to three days a week.\n",
    ),
    "meeting-rooms.md": md(
        {"title": "Meeting rooms", "department": "Finance"},
        "## Booking\n\nRooms are booked in the calendar and released after 15 minutes without use.\n",
    ),
}


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The policy folder onboarded, fetched, planned and compiled with the CLI and no hand edit."""
    base = tmp_path_factory.mktemp("versions")
    for rel, text in POLICIES.items():
        (base / "policies" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "policies" / rel).write_text(text, "utf-8")
    kb = base / "kb"
    steps = [
        ["init", str(kb), "--from", str(base / "policies")],
        ["--root", str(kb), "fetch"],
        ["--root", str(kb), "transform"],
        ["--root", str(kb), "plan", "--write"],
        ["--root", str(kb), "compile"],
    ]
    for args in steps:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
    return kb


def test_the_handbook_compiles_with_no_hand_edit_and_checks_clean(handbook: Path) -> None:
    assert len(POLICIES) >= 15
    wiki = yaml.safe_load((handbook / "schema" / "wiki.yaml").read_text("utf-8"))
    chains = sorted(tuple(c["chain"]) for c in wiki["versions"])
    assert chains == [
        ("archive/leave.md", "hr/leave.md"),
        ("returns.md", "returns-2025.md"),
        ("shipping_v1.md", "shipping_v2.md", "shipping_v3.md"),
    ]
    assert wiki["topics"] == [{"source": "policies", "group_by": "department"}]
    report = check(handbook)
    assert report.errors == [], [str(f) for f in report.errors]
    text = "\n".join(p.read_text("utf-8") for p in (handbook / "wiki").rglob("*.md"))
    # Older versions appear only in dated superseded notes.
    for old in (
        "within 30 days of delivery",
        "within 7 working days",
        "at least 8 characters",
        "25 days of paid",
    ):
        lines = [line for line in text.splitlines() if old in line]
        assert lines and all(line.startswith(">") for line in lines), (old, lines)
    for new in (
        "within 45 days of delivery",
        "within 3 working days",
        "at least 14 characters",
        "28 days of paid",
    ):
        assert any(new in line and not line.startswith(">") for line in text.splitlines()), new
    assert "Visitors sign the guest book" in text  # the rest of the handbook is still current


@pytest.mark.parametrize(
    "question, current, superseded, says",
    [
        (
            "How many characters must a password have?",
            "password-standard",
            "security-handbook",
            "14 characters",
        ),
        ("How many days do customers have to return unused items?", "returns-2025", "returns.md", "45 days"),
        ("How long do standard parcels take to arrive?", "shipping_v3", "shipping_v1", "3 working days"),
        ("How many days of paid leave do full-time staff take?", "hr/leave", "archive/leave", "28 days"),
        ("What laptop does a new starter receive?", "equipment-2025", "onboarding", "14-inch laptop"),
    ],
)
def test_ask_answers_from_the_current_version_of_each_section(
    handbook: Path, question: str, current: str, superseded: str, says: str
) -> None:
    lookup = Lookup(handbook)
    try:
        answer = lookup.answer(question)
    finally:
        lookup.close()
    assert not answer.refused, question
    cites = [c for s in answer.sentences for c in s.cites]
    assert any(current in c for c in cites), cites
    assert not any(superseded in c for c in cites), cites
    assert says in " ".join(s.text for s in answer.sentences)


def test_a_superseded_section_of_an_otherwise_current_document(handbook: Path) -> None:
    """The handbook's Passwords section is replaced; its Visitors section still answers."""
    lookup = Lookup(handbook)
    try:
        old = "layer1_sources/policies/security-handbook.md#passwords"
        assert lookup.current([old, "layer1_sources/policies/security-handbook.md#visitors"]) == [
            "layer1_sources/policies/security-handbook.md#visitors"
        ]
        answer = lookup.answer("What badge do visitors wear at reception?")
    finally:
        lookup.close()
    assert [c for s in answer.sentences for c in s.cites][0].endswith("security-handbook.md#visitors")
    assert "8 characters" not in " ".join(s.text for s in answer.sentences)


def test_citing_a_superseded_section_outside_a_note_is_an_error(handbook: Path, tmp_path: Path) -> None:
    import shutil

    kb = shutil.copytree(handbook, tmp_path / "kb")
    page = next(p for p in (kb / "wiki").rglob("*.md") if "Visitors sign" in p.read_text("utf-8"))
    link = "../../layer1_sources/policies/security-handbook.md#passwords"
    page.write_text(
        page.read_text("utf-8")
        + f"\nPasswords need at least 8 characters and are rotated every 90 days. [policies/security-handbook]({link})\n",
        "utf-8",
    )
    found = [f for f in check(kb).findings if f.rule == "superseded-citation"]
    assert len(found) == 1
    assert (
        "security-handbook.md#passwords, superseded by layer1_sources/policies/password-standard.md"
        in found[0].message
    )


def test_a_supersedes_that_names_nothing_is_reported_by_check(handbook: Path, tmp_path: Path) -> None:
    import shutil

    kb = shutil.copytree(handbook, tmp_path / "kb")
    note = kb / "layer1_sources" / "notes" / "memo.md"
    note.parent.mkdir()
    note.write_text(
        md({"title": "Memo", "supersedes": ["policies:returns.md#refunds", "old-memo.md"]}, "Text.\n"),
        "utf-8",
    )
    found = {str(f) for f in check(kb).findings if f.rule == "unresolved-supersedes"}
    assert found == {
        "layer1_sources/notes/memo.md: warning [unresolved-supersedes] supersedes 'policies:returns.md#refunds': "
        "layer1_sources/policies/returns.md has no section 'refunds'; name a record id or file name of the same "
        "source (or source:name), optionally with #section",
        "layer1_sources/notes/memo.md: warning [unresolved-supersedes] supersedes 'old-memo.md': no document "
        "of that name; name a record id or file name of the same source (or source:name), optionally with #section",
    }
