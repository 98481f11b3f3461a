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
