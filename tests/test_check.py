"""``wikic check``: a clean compiled KB has no errors; each planted defect is reported under its rule.

The example KB (copied from the repository) and the FarmBot corpus (served on loopback, built once
per session, compiled offline) are checked clean; then every defect is planted in a fresh copy.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from apiserver import ApiServer
from conftest import copy_example, copy_kb
from farmbot_kb import available
from typer.testing import CliRunner
from wikiasserts import front_matter

from wikic.check.run import CheckReport, check, quantities
from wikic.cli.app import app
from wikic.compile.draft import CITE_LINK
from wikic.compile.run import compile_wiki
from wikic.core.config import load_sources
from wikic.core.models import Record
from wikic.fetch.layer0 import SourceStore
from wikic.fetch.run import fetch
from wikic.transform.run import transform

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def rules(findings) -> set[str]:
    return {f.rule for f in findings}


def outside_notes(text: str) -> str:
    """A page body without its '> **Superseded**' notes."""
    body = text.split("\n---\n", 1)[1]
    return "\n".join(line for line in body.split("\n") if not line.startswith(">"))


# --- the example KB ------------------------------------------------------------------------------


@pytest.fixture
def example(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "kb")


def test_example_kb_is_clean_and_states_the_current_return_policy(example: Path) -> None:
    result = runner.invoke(app, ["--root", str(example), "check", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["errors"] == []
    assert all(set(w) == {"rule", "severity", "path", "line", "message"} for w in data["warnings"])
    assert "superseded-citation" not in {w["rule"] for w in data["warnings"]}

    policies = (example / "wiki/topics/orders-and-policies.md").read_text("utf-8")
    current = outside_notes(policies)
    assert "within 60 days of delivery" in current
    assert "within 30 days" not in current and "within 45 days" not in current
    # the older versions are only mentioned inside Superseded notes
    assert "> **Superseded**" in policies and "within 30 days" in policies

    human = runner.invoke(app, ["--root", str(example), "check"])
    assert human.exit_code == 0
    assert re.search(
        r"checked \d+ pages, \d+ statements and \d+ sources in [\d.]+s: 0 error\(s\)", human.output
    )


def test_generated_file_edited_by_hand_is_found_without_transform_state(example: Path) -> None:
    """A fresh clone has no .wikic/transform.json: check renders the file again from layer 0."""
    assert not (example / ".wikic").exists()
    target = example / "layer1_sources/faq/shipping.md"
    target.write_text(target.read_text("utf-8").replace("$5.95", "$4.95"), "utf-8")
    report = check(example)
    edited = [f for f in report.errors if f.rule == "hand-edited-generated"]
    assert [f.path for f in edited] == ["layer1_sources/faq/shipping.md"]
    # the page that quotes "$5.95" is now stale and its sentence unsupported: both related
    assert rules(report.errors) <= {"hand-edited-generated", "stale-page", "unsupported-citation"}


def test_superseded_version_cited_outside_a_note_is_reported(example: Path) -> None:
    page = example / "wiki/topics/orders-and-policies.md"
    text = page.read_text("utf-8")
    text = text.replace(
        "Smaller orders ship for a flat $5.95.",
        "You can return any Verdant garden within 30 days of delivery for a full refund, whether or not "
        "it has been used. [faq/return-policy](../../layer1_sources/faq/return-policy.md#what-is-the-return-policy)"
        "\nSmaller orders ship for a flat $5.95.",
    )
    page.write_text(text, "utf-8")
    report = check(example)
    found = [f for f in report.errors if f.rule == "superseded-citation"]
    assert len(found) == 1 and found[0].path == "wiki/topics/orders-and-policies.md"
    assert "return-policy-2026.md" in found[0].message
    assert text.split("\n")[found[0].line - 1].startswith("You can return any Verdant garden within 30")
    assert rules(report.errors) == {"superseded-citation"}


def test_check_is_diff_friendly_json_and_exit_code(example: Path) -> None:
    (example / "wiki/topics/watering.md").write_text(
        "---\ntitle: broken\n---\n\n# Broken\n\nNo source here.\n"
    )
    result = runner.invoke(app, ["--root", str(example), "check", "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.output)["errors"]
    uncited = [e for e in errors if e["rule"] == "uncited-sentence"]
    assert uncited == [
        {
            "rule": "uncited-sentence",
            "severity": "error",
            "path": "wiki/topics/watering.md",
            "line": 7,
            "message": uncited[0]["message"],
        }
    ]


def test_deleted_page_leaves_a_dangling_index_line(example: Path) -> None:
    (example / "wiki/topics/app-releases.md").unlink()
    report = check(example)
    dangling = [f for f in report.errors if f.rule == "index-dangling"]
    assert [(f.path, "wiki/topics/app-releases.md" in f.message) for f in dangling] == [
        ("wiki/index.md", True)
    ]
    assert rules(report.errors) <= {"index-dangling", "broken-link"}  # 'See also' links to it break too
    assert any(f.rule == "stale-page" and f.path == "wiki/topics/app-releases.md" for f in report.warnings)


def test_changed_number_in_a_wiki_sentence_is_unsupported(example: Path) -> None:
    page = example / "wiki/topics/orders-and-policies.md"
    page.write_text(page.read_text("utf-8").replace("ship for a flat $5.95.", "ship for a flat $4.95."))
    (found,) = expect(check(example), "unsupported-citation")
    assert found.path == "wiki/topics/orders-and-policies.md" and "4.95" in found.message


@pytest.mark.parametrize(
    ("page", "before", "after"),
    [
        (
            "wiki/devices/grove-6.md",
            "The tank holds 4.0 litres, which lasts about 14 days",
            "The tank holds 14 litres, which lasts about 4.0 days",
        ),
        ("wiki/topics/algae.md", "Algae is not dangerous to you", "Algae is dangerous to you"),
        (
            "wiki/entries/borage.md",
            "so it does not shade fruiting plants",
            "so it shades fruiting plants",
        ),
        # a field listing records by id shows their pages' titles; another record's page is refused
        (
            "wiki/entries/alpine-strawberry.md",
            "| Suitable devices | [Grove 6](../devices/grove-6.md),",
            "| Suitable devices | [Sprout 3](../devices/sprout-3.md),",
        ),
        (
            "wiki/entries/alpine-strawberry.md",
            "| Companions | [Viola](viola.md),",
            "| Companions | [Spinach](spinach.md),",
        ),
    ],
)
def test_hand_edit_that_swaps_numbers_or_flips_a_negation_is_unsupported(
    example: Path, page: str, before: str, after: str
) -> None:
    path = example / page
    meta, end, body = path.read_text("utf-8").partition("\n---\n")  # the body, not the summary
    assert before in body
    path.write_text(meta + end + body.replace(before, after, 1), "utf-8")
    (found,) = expect(check(example), "unsupported-citation")
    assert found.path == page


# --- a policy KB with versions v1, v2 and v3 ---------------------------------------------------------


POLICY_WIKI = {
    "librarian": {"backend": "offline"},
    "topics": [{"source": "policies", "group_by": "category"}],
}


def policy_records(*, chained: bool) -> list[dict]:
    def rec(rid: str, when: str, days: int, supersedes: str | None) -> dict:
        r = {
            "id": rid,
            "title": "How long do I have to return a garden?",
            "category": "returns",
            "updated_at": when,
            "body": f"You can return any garden within {days} days of delivery for a full refund.\n\n"
            "## Refunds\n\nRefunds go to the original payment method.",
        }
        if supersedes and chained:
            r["supersedes"] = supersedes
        return r

    return [
        rec("returns-v1", "2024-01-10", 30, None),
        rec("returns-v2", "2025-02-01", 45, "returns-v1"),
        rec("returns-v3", "2026-03-01", 60, "returns-v2"),
        {
            "id": "shipping",
            "title": "How much is shipping?",
            "category": "returns",
            "updated_at": "2025-01-01",
            "body": "Shipping is free on orders over $50 and costs $5 otherwise.",
        },
    ]


def build_policy_kb(root: Path, api: ApiServer, *, chained: bool) -> Path:
    url = api.add("policies", policy_records(chained=chained), page_size=2)
    (root / "schema").mkdir(parents=True)
    (root / "schema/sources.yaml").write_text(
        yaml.safe_dump(
            {
                "sources": {
                    "policies": {
                        "kind": "http",
                        "url": url,
                        "items": "data",
                        "pagination": {"style": "next_field", "field": "next"},
                        "title": "title",
                        "body": "body",
                    }
                }
            }
        )
    )
    (root / "schema/wiki.yaml").write_text(yaml.safe_dump(POLICY_WIKI))
    shutil.copy(REPO / "schema/librarian.md", root / "schema/librarian.md")
    config = load_sources(root)
    for r in fetch(root, config, sleep=lambda s: None):
        assert not r.errors, r.errors
    assert all(not r.errors for r in transform(root, config))
    assert not compile_wiki(root).failed
    return root


def test_policy_versions_compile_to_v3_and_check_clean(tmp_path: Path, api: ApiServer) -> None:
    root = build_policy_kb(tmp_path / "kb", api, chained=True)
    (page,) = (root / "wiki/topics").glob("*.md")
    text = page.read_text("utf-8")
    assert "within 60 days of delivery" in outside_notes(text)
    assert "30 days" not in outside_notes(text) and "45 days" not in outside_notes(text)
    assert text.count("> **Superseded**") == 2
    report = check(root)
    assert report.errors == []
    assert "superseded-citation" not in rules(report.findings)
    assert "contradiction" not in rules(report.findings)

    # trace reaches the API URL of the v3 snapshot
    line = next(
        n for n, s in enumerate(text.split("\n"), 1) if s.startswith("You can return any garden within 60")
    )
    rel = page.relative_to(root).as_posix()
    result = runner.invoke(app, ["--root", str(root), "trace", f"{rel}:{line}", "--json"])
    assert result.exit_code == 0, result.output
    (cite,) = json.loads(result.output)["sentences"][0]["citations"]
    assert cite["record_id"] == "returns-v3"
    assert cite["layer0"]["api_url"].startswith(f"http://127.0.0.1:{api.port}/policies")
    assert cite["layer0"]["verified"] is True


def test_unchained_policy_versions_are_a_contradiction(tmp_path: Path, api: ApiServer) -> None:
    root = build_policy_kb(tmp_path / "kb", api, chained=False)
    found = [f for f in check(root).findings if f.rule == "contradiction"]
    assert found, "three current documents state 30, 45 and 60 days for the same return window"
    assert all("supersedes" in f.message for f in found)
    assert any("60 day" in f.message and "30 day" in f.message for f in found)


def test_quantities_read_ranges_hyphenated_units_and_prices() -> None:
    q = quantities("the 45-day policy, 8–10 cm, 12 to 18 hours, $179, a 1.2-litre tank, 3 pods")
    assert q == {
        "day": {"45"},
        "cm": {"8", "10"},
        "hour": {"12", "18"},
        "usd": {"179"},
        "l": {"1.2"},
    }


# --- the FarmBot KB: clean, then one planted defect per copy -------------------------------------------

farmbot = pytest.mark.skipif(not available(), reason="FarmBot corpus not found in ../shared/corpora/farmbot")


@pytest.fixture(scope="session")
def farm_built(farmbot_compiled: Path) -> tuple[Path, CheckReport]:
    return farmbot_compiled, check(farmbot_compiled)


@pytest.fixture
def farm(farm_built: tuple[Path, CheckReport], tmp_path: Path) -> Path:
    return copy_kb(farm_built[0], tmp_path / "kb")


@farmbot
def test_compiled_farmbot_kb_has_no_errors(farm_built: tuple[Path, CheckReport]) -> None:
    root, report = farm_built
    assert report.errors == [], "\n".join(map(str, report.errors))
    assert report.pages > 50 and report.sources == 487 and report.statements > 3000
    result = runner.invoke(app, ["--root", str(root), "check"])
    assert result.exit_code == 0
    assert "0 error(s)" in result.output.splitlines()[-1]


@farmbot
def test_farmbot_disagreements_are_warnings_with_both_sides_cited(
    farm_built: tuple[Path, CheckReport],
) -> None:
    """Undeclared contradictions are listed for review (issue 10): the flashing tool and the
    leadscrew lubricant, each side with its cited section. The Raspberry Pi model is none: the
    'Raspberry Pi Zero W' against the v1.1 kit's 'Zero 2 W' was a photo's caption and an image's
    text, which state nothing."""
    _, report = farm_built
    found = [f.message for f in report.warnings if f.rule == "contradiction"]
    for a, b in (
        ("Raspberry Pi Imager", "Etcher"),
        ("synthetic lubricant", "graphite lubricant"),
    ):
        (message,) = [m for m in found if f"'{a}'" in m and f"'{b}'" in m][:1]
        assert len(set(re.findall(r"layer1_sources/[\w/.-]+\.md#[\w-]+", message))) == 2, message
    assert not [m for m in found if "'Raspberry Pi Zero W'" in m], found
    assert not [f for f in report.errors if f.rule == "contradiction"]


def cited_anchor(root: Path, pattern: str) -> tuple[str, str]:
    """(layer-1 path, anchor) of the first citation matching ``pattern`` in the wiki."""
    for page in sorted((root / "wiki").rglob("*.md")):
        m = re.search(pattern, page.read_text("utf-8"))
        if m:
            return f"layer1_sources/{m.group(1)}.md", m.group(2)
    raise AssertionError(f"no citation matches {pattern}")


def change_record(root: Path, source: str, rid: str, mutate: Callable[[dict], None]) -> None:
    """What a fetch does when the API changed one record, then transform (but no compile)."""
    store = SourceStore(root, source)
    snap = next(s for s in store.current() if s.id == rid)
    data = copy.deepcopy(store.load(snap).data)
    mutate(data)
    store.put(Record(source, rid, data, snap.url), "2030-01-01T00:00:00Z")
    store.save()
    assert all(not r.errors for r in transform(root, load_sources(root)))


def expect(report: CheckReport, rule: str, related: set[str] = frozenset()) -> list:
    found = [f for f in report.errors if f.rule == rule]
    assert found, f"{rule} not reported; errors: {[str(f) for f in report.errors]}"
    assert rules(report.errors) <= {rule} | set(related), "\n".join(map(str, report.errors))
    return found


@farmbot
def test_heading_removed_from_cited_source_is_a_broken_link(farm: Path) -> None:
    path, anchor = cited_anchor(farm, r"layer1_sources/(crops/[\w-]+)\.md#(description)\)")
    key = path.rsplit("/", 1)[1][:-3]
    change_record(farm, "crops", key, lambda d: d.pop("description"))
    found = expect(check(farm), "broken-link", {"stale-page"})
    assert all(f"{path}" in f.message or "#description" in f.message for f in found)
    assert all(f.line for f in found)


@farmbot
def test_citation_deleted_from_a_sentence_is_uncited(farm: Path) -> None:
    topics = sorted((farm / "wiki/topics").glob("*.md"))
    page = next(p for p in topics if "layer1_sources/articles/" in p.read_text("utf-8"))
    lines = page.read_text("utf-8").split("\n")
    n = next(i for i, line in enumerate(lines) if line[:1].isupper() and len(CITE_LINK.findall(line)) == 1)
    lines[n] = CITE_LINK.sub("", lines[n]).rstrip()
    page.write_text("\n".join(lines), "utf-8")
    (found,) = expect(check(farm), "uncited-sentence")
    assert (found.path, found.line) == (page.relative_to(farm).as_posix(), n + 1)


@farmbot
def test_new_page_nothing_links_to_is_an_orphan(farm: Path) -> None:
    src = next((farm / "wiki/entries").glob("*.md")).read_text("utf-8").split("\n")
    cited = next(line for line in src if CITE_LINK.search(line) and not line.startswith(("|", ">")))
    (farm / "wiki/topics/my-notes.md").write_text(f"---\ntitle: My notes\n---\n\n# My notes\n\n{cited}\n")
    (found,) = expect(check(farm), "orphan-page")
    assert found.path == "wiki/topics/my-notes.md"


@farmbot
def test_page_linked_but_not_indexed_is_unindexed(farm: Path) -> None:
    (farm / "wiki/topics/my-notes.md").write_text("---\ntitle: My notes\n---\n\n# My notes\n")
    guide = farm / "wiki/guides/maintenance.md"
    guide.write_text(guide.read_text("utf-8") + "\n- [my notes](../topics/my-notes.md)\n")
    report = check(farm)
    assert [f.path for f in report.findings if f.rule == "unindexed-page"] == ["wiki/topics/my-notes.md"]
    assert report.errors == []


@farmbot
def test_source_changed_without_recompile_makes_its_pages_stale(farm: Path) -> None:
    path, _ = cited_anchor(farm, r"layer1_sources/(crops/[\w-]+)\.md#(details)\)")
    key = path.rsplit("/", 1)[1][:-3]
    change_record(
        farm, "crops", key, lambda d: d.update(description=str(d.get("description")) + " Loves mulch.")
    )
    found = expect(check(farm), "stale-page")
    users = {
        p.relative_to(farm).as_posix() for p in (farm / "wiki").rglob("*.md") if path in p.read_text("utf-8")
    }
    assert {f.path for f in found} == users - {"wiki/index.md"}
    compile_wiki(farm)
    assert check(farm).errors == []


@farmbot
def test_edited_layer0_snapshot_is_tampered(farm: Path) -> None:
    snap = sorted((farm / "layer0_raw/crops").glob("*@*.json"))[3]
    body = json.loads(snap.read_text("utf-8"))
    body["record"]["row_spacing"] = 999
    snap.write_text(json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    (found,) = expect(check(farm), "layer0-tampered")
    assert found.path == snap.relative_to(farm).as_posix()


@farmbot
def test_two_sources_disagreeing_on_row_spacing_contradict(farm: Path) -> None:
    crop = farm / "layer1_sources/crops/carrot.md"
    meta = front_matter(crop.read_text("utf-8"))
    notes = farm / "layer1_sources/notes/carrot.md"
    notes.parent.mkdir()
    notes.write_text(
        f"---\ntitle: {meta['title']}\nsource: notes\nrow_spacing: {meta['row_spacing'] + 10}\n---\n\n"
        f"# {meta['title']}\n\nOur own bed notes.\n"
    )
    compile_wiki(farm)  # nothing stale: the disagreement itself is the defect
    (found,) = expect(check(farm), "contradiction")
    assert found.path in ("layer1_sources/notes/carrot.md", "layer1_sources/crops/carrot.md")
    assert "row_spacing" in found.message and str(meta["row_spacing"]) in found.message
    assert found.line is not None


@farmbot
def test_generated_layer1_file_edited_by_hand(farm: Path) -> None:
    edited = "layer1_sources/crops/carrot.md"
    target = farm / edited
    target.write_text(target.read_text("utf-8") + "\nA line added by hand.\n")
    found = expect(check(farm), "hand-edited-generated", {"stale-page"})  # its home page is stale too
    assert [f.path for f in found] == [edited]


# --- the review workflow -------------------------------------------------------------------------------


def test_compile_prints_a_diffstat_and_check_follows_the_change(example: Path) -> None:
    spec = example / "layer1_sources/specs/sprout-3.md"  # hand-maintained
    spec.write_text(
        spec.read_text("utf-8")
        .replace("weight_kg: 1.4", "weight_kg: 1.5")
        .replace("It weighs 1.4 kg with an empty tank.", "It weighs 1.5 kg with an empty tank.")
    )
    stale = check(example)
    assert {f.path for f in stale.errors if f.rule == "stale-page"} >= {
        "wiki/devices/sprout-3.md",
        "wiki/comparisons/planters.md",
    }
    # the pages still say 1.4 kg, which the source no longer supports
    assert rules(stale.errors) == {"stale-page", "unsupported-citation"}

    result = runner.invoke(app, ["--root", str(example), "compile", "--librarian", "offline"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    stat = {m.group(1): m for line in lines if (m := re.match(r"^ (wiki/\S+\.md) \| (\d+) (\+*)(-*)$", line))}
    # the spec's home and every page quoting it: the comparison, the overview, the glossary and
    # the guides whose cross-device tables quote its fields
    quoting = {
        p.relative_to(example).as_posix()
        for p in (example / "wiki").rglob("*.md")
        if "layer1_sources/specs/sprout-3.md" in p.read_text("utf-8").split("\n---\n", 1)[0]
    }
    assert {"wiki/comparisons/planters.md", "wiki/hubs/devices.md", "wiki/glossary.md"} <= quoting
    assert set(stat) == {"wiki/devices/sprout-3.md"} | quoting
    assert all(m.group(3) and m.group(4) for m in stat.values())  # lines added and removed
    total = next(line for line in lines if "pages changed" in line)
    m = re.fullmatch(rf" {len(stat)} pages changed, (\d+) insertions\(\+\), (\d+) deletions\(-\)", total)
    assert m and int(m.group(1)) + int(m.group(2)) == sum(int(s.group(2)) for s in stat.values())
    assert "It weighs 1.5 kg" in (example / "wiki/devices/sprout-3.md").read_text("utf-8")
    assert check(example).errors == []


def test_example_review_workflow_files() -> None:
    hooks = yaml.safe_load((REPO / "examples/pre-commit-config.yaml").read_text("utf-8"))
    entries = {h["entry"] for repo in hooks["repos"] for h in repo["hooks"]}
    assert entries == {"wikic verify", "wikic check"}
    assert all(h["pass_filenames"] is False and h["language"] == "system" for h in hooks["repos"][0]["hooks"])

    flow = yaml.safe_load((REPO / "examples/github-workflow.yml").read_text("utf-8"))
    triggers = flow[True]  # YAML 1.1 reads the key 'on' as a boolean
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    steps = flow["jobs"]["refresh"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    script = "\n".join(s.get("run", "") for s in steps)
    order = ["pip install", "wikic fetch", "wikic transform", "wikic compile --json", "wikic check"]
    assert [script.index(cmd) for cmd in order] == sorted(script.index(cmd) for cmd in order)
    pr = next(s for s in steps if s.get("uses", "").startswith("peter-evans/create-pull-request@"))
    assert pr["with"]["body-path"] == "pr-body.md" and "wiki/**" in pr["with"]["add-paths"]


def test_a_record_of_a_folder_source_is_named_by_its_key() -> None:
    """FarmBot's crops read from a folder have ids that are file names ('tomato.json'), while
    another crop's companions name it 'tomato'. check --full read the Companions cell
    '[Tomato](tomato.md)' back as 'tomato.json' and reported 41 unsupported citations on the
    planned wiki (and coverage counted those fields unplaced), though compile had verified them."""
    from wikic.compile.draft import as_recorded, record_id
    from wikic.core.models import SourceDoc

    def doc(rid: str, key: str) -> SourceDoc:
        return SourceDoc("crops", rid, key, f"layer1_sources/crops/{key}.md", key.title(), {}, "", "", ())

    assert record_id(doc("tomato.json", "tomato")) == "tomato"
    assert record_id(doc("42", "tomato")) == "42"  # an id fields can name stays the id
    assert as_recorded("Tomato, Dill", {"Tomato": record_id(doc("tomato.json", "tomato"))}) == "Tomato, Dill"
    assert as_recorded("Tomato", {"Tomato": record_id(doc("tomato.json", "tomato"))}) == "tomato"
