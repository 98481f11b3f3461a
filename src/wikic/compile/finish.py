"""Finishing a draft before it may be written: sanitise it, verify every citation, let an LLM
backend repair what failed, drop what still fails, and mark superseded and disputed statements.
A page is never written half-valid."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..core.markdown import github_slug, plain_inline
from .citations import Verifier
from .draft import PROSE_KINDS, Block, Cell, Draft, Navigation, Sentence
from .librarian.base import Failure, Librarian, PageJob
from .librarian.offline import DERIVED_TYPES, OfflineLibrarian
from .librarian.offline import write_page as offline_page
from .report import CompileReport
from .safety import sanitize_draft, suspicious, vet_draft


@dataclass
class _Check:
    blocks: list[Block]
    failures: list[tuple[int, int, Failure]]  # (block index, sentence/cell index, failure)


def verify_blocks(blocks: tuple[Block, ...], verifier: Verifier) -> _Check:
    failures: list[tuple[int, int, Failure]] = []
    for bi, b in enumerate(blocks):
        if b.kind in PROSE_KINDS:
            for si, s in enumerate(b.sentences):
                result = verifier.check(s.text, s.cites)
                if not result.ok:
                    failures.append((bi, si, Failure(s.text, tuple(map(str, s.cites)), result.reason)))
        elif b.kind == "table":
            width = len(b.header)
            for ri, row in enumerate(b.rows):
                for ci, cell in enumerate(row):
                    if cell.cites:
                        result = verifier.check(cell.text, cell.cites)
                        if not result.ok:
                            failures.append(
                                (
                                    bi,
                                    ri * width + ci,
                                    Failure(cell.text, tuple(map(str, cell.cites)), result.reason),
                                )
                            )
    return _Check(list(blocks), failures)


def drop_failures(check: _Check) -> list[Block]:
    """Remove failed sentences (and blank failed table cells), then prune empty sections."""
    bad: dict[int, set[int]] = {}
    for bi, si, _ in check.failures:
        bad.setdefault(bi, set()).add(si)
    kept: list[Block] = []
    for bi, b in enumerate(check.blocks):
        drop = bad.get(bi, set())
        if b.kind in PROSE_KINDS:
            sentences = tuple(s for si, s in enumerate(b.sentences) if si not in drop)
            if sentences:
                kept.append(Block(b.kind, text=b.text, level=b.level, sentences=sentences))
        elif b.kind == "table" and drop:
            width = len(b.header)
            rows = tuple(
                tuple(Cell("—") if ri * width + ci in drop else c for ci, c in enumerate(row))
                for ri, row in enumerate(b.rows)
            )
            kept.append(Block("table", header=b.header, rows=rows))
        else:
            kept.append(b)
    return prune(kept)


def prune(blocks: list[Block]) -> list[Block]:
    """Drop headings with nothing under them (before the next heading of the same or higher level)."""
    out: list[Block] = []
    for i, b in enumerate(blocks):
        if b.kind == "heading":
            has_content = False
            for x in blocks[i + 1 :]:
                if x.kind != "heading":
                    has_content = True
                    break
                if x.level <= b.level:
                    break
            if not has_content:
                continue
        out.append(b)
    return out


def mark_outdated(blocks: list[Block], nav: Navigation) -> list[Block]:
    """A statement a newer source changed is never stated as current: it becomes a dated
    Superseded note that says what holds now and links to it."""
    stale = {" ".join(s.split()): (when, now, href, title) for s, when, now, href, title in nav.outdated}
    if not stale:
        return blocks
    out: list[Block] = []
    for b in blocks:
        if b.kind not in ("para", "bullets", "steps") or not any(
            " ".join(s.text.split()) in stale for s in b.sentences
        ):
            out.append(b)
            continue
        run: list[Sentence] = []
        for s in b.sentences:
            found = stale.get(" ".join(s.text.split()))
            if found is None:
                if out and out[-1].kind == "note" and not run and goes_on_about(s.text):
                    out[-1] = replace(out[-1], sentences=(*out[-1].sentences, s))
                    continue
                run.append(s)
                continue
            if run:
                out.append(replace(b, sentences=tuple(run)))
                run = []
            when, now, href, title = found
            out.append(
                Block(
                    "note",
                    text=f"(stated {when}; now {now}, see {{link}}):",
                    sentences=(s,),
                    links=((href, title),),
                )
            )
        if run:
            out.append(replace(b, sentences=tuple(run)))
    return out


# a sentence that goes on about the one before it: 'It …', 'This …', or 'the limit' it set
_ABOUT_IT = re.compile(
    r"^(?:it|its|this|that|these|those|such)\b|\bthe (?:limit|maximum|minimum|threshold|cap|interval)\b",
    re.IGNORECASE,
)


def goes_on_about(text: str) -> bool:
    """Whether a sentence after an outdated statement only goes on about it, giving no figure of
    its own: 'We set the limit conservatively …' after '… up to 14 days ahead' explained the old
    limit, and stood after its Superseded note as if it were the reason for the new one."""
    return not any(c.isdigit() for c in text) and _ABOUT_IT.search(text) is not None


def mark_disputes(blocks: list[Block], nav: Navigation, page: str = "") -> list[Block]:
    """At the end of a section that states something another source disagrees with, a line
    linking to what that source says, for review: both sides stay cited where they are, neither
    is blended into the other, and a step or a procedure is never cut in two by the note. When
    both stand on ``page``, it links to the other's heading there, if the page shows that heading
    (else to where the other is at home)."""
    headings = {github_slug(plain_inline(b.text)) for b in blocks if b.kind == "heading"}
    differ: dict[str, list[tuple[str, str]]] = {}
    for sentence, href, label, home, home_label in nav.disputes:
        path, _, anchor = href.partition("#")
        if path == page and anchor not in headings:
            href, label = home, home_label
        differ.setdefault(" ".join(sentence.split()), []).append((href, label))
    if not differ:
        return blocks
    out: list[Block] = []
    found: list[tuple[str, str]] = []
    for b in [*blocks, None]:
        if found and (b is None or b.kind == "heading"):
            out.append(Block("links", text="Sources differ", links=tuple(dict.fromkeys(found))))
            found = []
        if b is None:
            break
        out.append(b)
        if b.kind in ("para", "bullets", "steps"):
            found += [x for s in b.sentences for x in differ.get(" ".join(s.text.split()), ())]
    return out


def merge_repeats(blocks: list[Block]) -> list[Block]:
    """No sentence twice on a page: when two sources on it say the same thing, the later copy is
    dropped and its citations join the first (so both sources still reach the page); a source
    that says it again under another of its headings keeps it there. A section whose every
    sentence is a repeat keeps them: its heading, where links to it land, stays. The lead
    (before the first heading) quotes the body, so its sentences are no first copies."""
    first: dict[str, tuple[int, int]] = {}
    shown: dict[str, set[str]] = {}  # sentence → the anchors its copies so far cite
    repeats: list[tuple[tuple[int, int], tuple[int, int]]] = []  # (a later copy, the first)
    lead = next((i for i, b in enumerate(blocks) if b.kind == "heading"), len(blocks))
    for bi, b in enumerate(blocks):
        if b.kind not in PROSE_KINDS or b.kind == "note" or bi < lead:
            continue
        if b.kind in ("bullets", "steps"):  # a list is quoted whole: its items are never dropped
            for si, s in enumerate(b.sentences):
                first.setdefault(key := " ".join(s.text.split()), (bi, si))
                shown.setdefault(key, set()).update(c.anchor for c in s.cites)
            continue
        for si, s in enumerate(b.sentences):
            key = " ".join(s.text.split())
            if key not in first:
                first[key] = (bi, si)
            elif not _own_again(s, blocks[first[key][0]].sentences[first[key][1]], shown[key]):
                repeats.append(((bi, si), first[key]))
            shown.setdefault(key, set()).update(c.anchor for c in s.cites)
    kept = _whole_sections(blocks, {at for at, _ in repeats})
    drop = {at for at, _ in repeats} - kept | _again_within(blocks, kept)
    drop -= _referred_back(blocks, drop)
    firsts = dict(repeats)
    drop = {
        (bi, si)
        for bi, si in drop
        if not _label(blocks[bi].sentences[si].text) and not _leads_in(blocks, (bi, si), firsts.get((bi, si)))
    }
    drop -= _about_their_own(blocks, drop)
    if not drop:
        return blocks
    extra: dict[tuple[int, int], list] = {}
    for (bi, si), to in repeats:
        if (bi, si) in drop:
            extra.setdefault(to, []).extend(blocks[bi].sentences[si].cites)
    out = []
    for bi, b in enumerate(blocks):
        if b.kind not in PROSE_KINDS or b.kind == "note":
            out.append(b)
            continue
        sentences = tuple(
            Sentence(s.text, tuple(dict.fromkeys(s.cites + tuple(extra.get((bi, si), ())))))
            for si, s in enumerate(b.sentences)
            if (bi, si) not in drop
        )
        if sentences:
            out.append(replace(b, sentences=sentences))
    return prune(out)


def _label(text: str) -> bool:
    """Whether a line heads what follows it in its section rather than saying something: an
    ordinal ('Step 1') or a few words with no sentence's end nor a lead-in's colon ('**Component
    tests**' over each part's table, which stood once on a page, over the first table, with
    fifteen citations)."""
    plain = text.strip().strip("*_ ")
    return bool(_ORDINAL.match(plain)) or (
        len(plain.split()) <= LABEL_WORDS and not plain.endswith((".", "!", "?", ":"))
    )


LABEL_WORDS = 4


def _about_their_own(blocks: list[Block], repeats: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Of the repeats, those about their own section's subject, said there and nowhere earlier on
    the page ('This advanced setting is not shown by default.' under each of seven settings stood
    once, under 'Auto update', with eight citations, and the other six no longer said they were
    hidden): what 'this' names differs in each. The same section's words twice still go."""
    earlier: dict[str, set[tuple[str, str]]] = {}
    out = set()
    for bi, b in enumerate(blocks):
        if b.kind not in PROSE_KINDS or b.kind == "note":
            continue
        for si, s in enumerate(b.sentences):
            key, cites = " ".join(s.text.split()), {(c.path, c.anchor) for c in s.cites}
            seen = earlier.setdefault(key, set())
            if (
                (bi, si) in repeats
                and _REFERS_BACK.match(plain_inline(s.text).lstrip("*_ "))
                and not cites & seen
            ):
                out.add((bi, si))
            seen |= cites
    return out


def _leads_in(blocks: list[Block], at: tuple[int, int], first: tuple[int, int] | None) -> bool:
    """Whether a repeated sentence introduces the list right after it ('Before we get started, make
    sure … the following prerequisites:') in another source than the first copy's: the Genesis
    page's second list of prerequisites stood without it."""
    bi, si = at
    b = blocks[bi]
    if si != len(b.sentences) - 1 or not b.sentences[si].text.rstrip().endswith(":"):
        return False
    if bi + 1 >= len(blocks) or blocks[bi + 1].kind not in ("bullets", "steps") or first is None:
        return False
    mine = {c.path for c in b.sentences[si].cites}
    return not mine & {c.path for c in blocks[first[0]].sentences[first[1]].cites}


def _own_again(later: Sentence, first: Sentence, anchors: set[str]) -> bool:
    """Whether the source of a sentence says it again under another of its own headings ('Corrective
    Action: See Code 1' under each of Codes 2 to 9), one no copy so far cites: each copy belongs
    to its heading and stays."""
    paths = {c.path for c in later.cites}
    return paths == {c.path for c in first.cites} and not {c.anchor for c in later.cites} & anchors


# a sentence that counts on from the one before it ('There are two ways … The second way is from
# sequences.'): its copy stays where it is counted, or the count there misses one
_ORDINAL = re.compile(
    r"^(?:the\s+)?(?:first|second|third|fourth|fifth|last|final|next|other)\b|^(?:secondly|thirdly|finally|lastly)\b",
    re.IGNORECASE,
)
# a sentence that opens with one of these goes on about what the sentence before it said
_REFERS_BACK = re.compile(
    r"^(?:it|its|it's|this|these|those|they|their|them|he|she|his|her)\b", re.IGNORECASE
)


def _referred_back(blocks: list[Block], drop: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The repeats a kept sentence right after them refers back to ('This white LED … It is
    connected to pin 13.'): dropped, they would leave 'It' pointing at nothing."""
    out: set[tuple[int, int]] = set()
    for bi, si in sorted(drop, reverse=True):  # from the end: a chain of them stays together
        after, sentences = (bi, si + 1), blocks[bi].sentences
        shown = si + 1 < len(sentences) and (after not in drop or after in out)
        if shown and _REFERS_BACK.match(sentences[si + 1].text.lstrip("*_ ")):
            out.add((bi, si))
    return out


def _again_within(blocks: list[Block], kept: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Of the sentences of sections kept whole, those their own section already said (a source
    that repeats a sentence as a caption): these still go."""
    above, last = [], -1  # the heading above each block
    for i, b in enumerate(blocks):
        above.append(last)
        last = i if b.kind == "heading" else last
    heading, out, seen = -1, set(), set()
    for bi, si in sorted(kept):
        under = above[bi]
        if under != heading:
            heading, seen = under, set()
        key = " ".join(blocks[bi].sentences[si].text.split())
        if key in seen:
            out.add((bi, si))
        seen.add(key)
    return out


def _whole_sections(blocks: list[Block], repeats: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The repeats that are all a heading's own text says (up to the next heading), with nothing
    else under it: dropping them would take the heading off the page."""
    out: set[tuple[int, int]] = set()
    sections: list[list[int]] = []
    for bi, b in enumerate(blocks):
        if b.kind == "heading":
            sections.append([])
        elif sections:
            sections[-1].append(bi)
    for section in sections:
        mine = {(bi, si) for bi in section for si in range(len(blocks[bi].sentences))}
        merged = all(blocks[bi].kind in PROSE_KINDS and blocks[bi].kind != "note" for bi in section)
        if mine and merged and mine <= repeats:
            out |= mine
    return out


def count_facts(blocks: list[Block] | tuple[Block, ...]) -> tuple[int, int]:
    """(sentences and cited cells, citations) in a draft."""
    facts = cites = 0
    for b in blocks:
        for s in b.sentences:
            facts += 1
            cites += len(s.cites)
        for row in b.rows:
            for c in row:
                if c.cites:
                    facts += 1
                    cites += len(c.cites)
    return facts, cites


def finish_draft(
    job: PageJob,
    draft: Draft,
    lib: Librarian,
    verifier: Verifier,
    report: CompileReport,
    outline: tuple[str, ...] = (),
) -> Draft | None:
    """Sanitise, verify, repair (LLM backends) or drop; returns a fully valid draft or None.

    An LLM backend's verified prose is merged into the offline draft (``fill``), so a page is never
    poorer than offline; what it writes besides its sentences (headings, summary, keywords) is
    held to the sources too, and rebuilt from them where it fails."""
    draft = keep_out_of_lead(sanitize_draft(draft, job.spec.path))
    rejected = draft.stats.get("rejected", [])  # refused by the librarian before verification
    total, _ = count_facts(draft.blocks)
    report.sentences += total + len(rejected)
    report.cited += sum(1 for b in draft.blocks for s in b.sentences if s.cites) + sum(
        1 for b in draft.blocks for r in b.rows for c in r if c.cites
    )
    check = verify_blocks(draft.blocks, verifier)
    first_failures = len(check.failures)
    report.verified += total - first_failures
    repaired = 0
    if check.failures and lib.can_repair:
        fixed = lib.repair(job, draft, [f for _, _, f in check.failures])
        if fixed is not None:
            fixed = keep_out_of_lead(sanitize_draft(fixed, job.spec.path))
            again = verify_blocks(fixed.blocks, verifier)
            passing = count_facts(fixed.blocks)[0] - len(again.failures)
            repaired = max(0, min(first_failures, passing - (total - first_failures)))
            draft, check = fixed, again
    # Whatever was not repaired is dropped, whether the repair left it failing or removed it,
    # so verified + repaired + dropped always equals the sentences drafted.
    report.repaired += repaired
    report.dropped += first_failures - repaired + len(rejected)
    reasons = [(t, why) for t, why in rejected] + [(f.text, f.reason) for _, _, f in check.failures]
    report.drop_reasons += [f"{job.spec.path}: {t[:80]!r}: {why}" for t, why in reasons][:50]
    blocks = drop_failures(check) if check.failures else prune(check.blocks)
    fill = getattr(lib, "fill", None)
    if fill is not None and job.spec.type not in DERIVED_TYPES:  # the offline text where the model fell short
        draft = keep_out_of_lead(fill(job, draft.with_blocks(blocks)))
        for key in ("published", "fallback", "set_aside"):
            setattr(report, key, getattr(report, key) + draft.stats.get(key, 0))
        check = verify_blocks(draft.blocks, verifier)
        report.sentences += len(check.failures)
        report.dropped += len(check.failures)
        report.drop_reasons += [f"{job.spec.path}: {f.text[:80]!r}: {f.reason}" for _, _, f in check.failures]
        blocks = drop_failures(check) if check.failures else prune(check.blocks)
    blocks = mark_disputes(mark_outdated(merge_repeats(blocks), job.nav), job.nav, job.spec.path)
    facts, cites = count_facts(blocks)
    if facts == 0:
        return None
    report.citations += cites
    final = draft.with_blocks(blocks)
    if lib.name != OfflineLibrarian.name and job.spec.type not in DERIVED_TYPES:  # those are offline's
        final, notes = vet_draft(final, verifier, job.spec.sources, outline, lambda: offline_page(job))
        report.notes += [f"{job.spec.path}: {n}" for n in notes]
    return final


def keep_out_of_lead(draft: Draft) -> Draft:
    """A page's lead (what comes before its first heading) holds no sentence that instructs the
    reader; such a sentence stays cited where it belongs (moved under the first
    heading when it stood in the lead), never in the opening lines."""
    blocks: list[Block] = []
    moved: list[Sentence] = []
    in_lead = True
    for b in draft.blocks:
        if in_lead and b.kind == "heading":
            in_lead = False
            blocks.append(b)
            if moved:
                blocks.append(Block("para", sentences=tuple(moved)))
            continue
        if in_lead and b.sentences:
            kept = tuple(s for s in b.sentences if not suspicious(s.text))
            moved += [s for s in b.sentences if suspicious(s.text)]
            if len(kept) < len(b.sentences):
                if not kept:
                    continue
                b = Block(b.kind, text=b.text, level=b.level, sentences=kept)
        blocks.append(b)
    return draft.with_blocks(blocks) if moved else draft
