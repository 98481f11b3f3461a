"""Planning heuristics that need no compile: which field groups a source into topics."""

from __future__ import annotations

from wikic.compile.pageplan import group_field
from wikic.core.models import SourceDoc


def doc(n: int, **meta) -> SourceDoc:
    return SourceDoc("s", str(n), str(n), f"layer1_sources/s/{n}.md", f"Doc {n}", meta, "", "sha256:x", ())


def test_group_field_prefers_categories_with_groups_near_the_target_size():
    docs = [
        doc(
            i,
            product=["hardware", "software"][i % 2],  # 2 groups of 30: too coarse
            section=f"docs/part-{i % 6}",  # 6 groups of 10: close to 12
            slug=f"page-{i}",  # unique: not a category
            height=i,  # a number, not a category
            updated_at=f"2024-01-{i % 28 + 1:02d}",  # a date
            url=f"https://example.com/{i % 5}",
        )
        for i in range(60)
    ]
    assert group_field(docs) == "section"


def test_group_field_needs_coverage_and_skips_multi_valued_tags():
    sparse = [doc(i, kind="a" if i < 5 else "", tags=["x", "y"]) for i in range(40)]
    assert group_field(sparse) == ""  # 'kind' covers an eighth of the records; tags are lists
    single = [doc(i, kind=["a", "b", "c"][i % 3]) for i in range(30)]
    assert group_field(single) == "kind"
    assert group_field(single[:3]) == ""  # too few records to group


def test_a_large_group_split_by_subject_then_in_parts_gives_every_part_its_own_page():
    """'Getting started: screws' too large for one page is numbered ('…: screws 1: A to B'): each
    part has a slug of its own, so no page gathers every part again."""
    from wikic.compile.pageplan import topic_groups
    from wikic.compile.schema import TopicRule

    screws = [doc(i, category="getting-started") for i in range(40)]
    nuts = [doc(100 + i, category="getting-started") for i in range(5)]
    for d, n in zip(screws, range(40)):
        object.__setattr__(d, "title", f"M{n} Screws")
    for d, n in zip(nuts, range(5)):
        object.__setattr__(d, "title", f"M{n} Nuts")
    care = [doc(200 + i, category="getting-started") for i in range(4)]
    for d, part in zip(care, ["Bed", "Gantry", "Track", "Belt"]):
        object.__setattr__(d, "title", f"{part} Maintenance")
    screws += care
    pages = topic_groups(TopicRule("s", group_by="category", max_sources=12), screws + nuts, by_meaning=False)
    slugs = [slug for _, _, _, slug in pages]
    assert len(slugs) == len(set(slugs)), slugs
    assert all(len(members) <= 12 * 1.5 for _, members, _, _ in pages)
    assert sorted(p for _, members, _, _ in pages for p in (d.path for d in members)) == sorted(
        d.path for d in screws + nuts
    )
    assert "getting-started-screws-2" in slugs and "getting-started-nuts" in slugs, slugs
    assert "Getting started: maintenance" in [title for title, _, _, _ in pages]  # no 'maintenances'
