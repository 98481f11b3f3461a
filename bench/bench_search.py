"""Search latency over 10,000 generated sections: wikic's FTS5 search next to a pure-Python BM25 loop,
and with the dense list (search.semantic: the sections nearest each query by meaning) next to
words alone, query by query in turn on the same index.

All answer the same queries over the same sections. Reported, never asserted (DESIGN §10:
target p50 ≤ 10 ms; with the dense list, ≤ 12 ms).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wikic.compile.searchindex.chunks import Chunk
from wikic.compile.searchindex.store import UpdateStats
from wikic.core.bm25 import BM25
from wikic.lookup.search import SearchIndex

N_SECTIONS = 10_000
N_QUERIES = 200
SEED = 7

TOPICS = (
    "tank pump light water seed pod basil tomato firmware wifi app reset algae mould nutrient schedule "
    "vacation sensor camera belt axis motor gantry needle tray sequence soil moisture harvest germination "
    "warranty shipping return garden plant leaf root wick sponge filter timer alert battery cable router "
    "network password update calendar curve point weed tool slot bed frame bracket screw nut wheel"
).split()
# A Zipf-distributed vocabulary: a few hundred common domain words and thousands of rarer ones,
# as in real help-centre text, so posting lists have realistic lengths.
SYLLABLES = "ka lo mi ne ru ta vo si pe du ga ri zo fe lu ma".split()
FILLER = "the a of to and in is for with on that it as be are this by can".split()


def vocabulary(rng: random.Random, n: int = 8000) -> list[str]:
    words = list(TOPICS)
    while len(words) < n:
        words.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return list(dict.fromkeys(words))


VOCAB = vocabulary(random.Random(SEED))
WEIGHTS = [1 / (i + 1) for i in range(len(VOCAB))]


def sentence(rng: random.Random, n: int) -> str:
    picks = rng.choices(VOCAB, WEIGHTS, k=n)
    return " ".join(w if rng.random() < 0.5 else rng.choice(FILLER) for w in picks) + "."


def sections(rng: random.Random) -> list[Chunk]:
    out = []
    for i in range(N_SECTIONS):
        title = " ".join(rng.choices(VOCAB, WEIGHTS, k=3)).capitalize() + f" guide {i // 5}"
        heading = " ".join(rng.choices(VOCAB, WEIGHTS, k=2)).capitalize()
        body = " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(3, 8)))
        path = f"layer1_sources/bench/doc-{i // 5}.md"
        out.append(Chunk("source", path, f"s{i}", heading, title, heading, body, (f"{path}#s{i}",)))
    return out


def questions(rng: random.Random) -> list[str]:
    return [
        "how do I " + " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(2, 5))) + " with my garden?"
        for _ in range(N_QUERIES)
    ]


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def main() -> int:
    rng = random.Random(SEED)
    chunks = sections(rng)
    qs = questions(rng)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        index = SearchIndex(root)
        with index.conn:
            index.add_chunks("bench", chunks)
        build = time.perf_counter() - started

        started = time.perf_counter()
        stats = UpdateStats()
        index.sync_dense(stats, True, True)  # embeds every section (numpy), as compile does
        embed = time.perf_counter() - started
        index.close()
        index = SearchIndex(root, semantic=False)  # words alone
        dense = SearchIndex(root) if not stats.semantic else None
        ours, meaning, strong = [], [], 0
        for q in qs:  # in turn: a drift in the machine's speed reaches both alike
            t = time.perf_counter()
            index.search(q, k=10, kinds=("page", "source", "index"))
            ours.append((time.perf_counter() - t) * 1000)
            if dense is not None:
                t = time.perf_counter()
                strong += dense.search(q, k=10, kinds=("page", "source", "index")).strong_signal
                meaning.append((time.perf_counter() - t) * 1000)
        single = []
        for q in qs:
            t = time.perf_counter()
            index.query("source", q, 10)
            single.append((time.perf_counter() - t) * 1000)
        index.close()
        if dense is not None:
            dense.close()

    started = time.perf_counter()
    bm25 = BM25([f"{c.title} {c.headings} {c.body}" for c in chunks])
    base_build = time.perf_counter() - started
    base = []
    for q in qs[: N_QUERIES // 4]:  # the pure-Python loop is slow; a quarter of the queries suffices
        t = time.perf_counter()
        bm25.top(q, 10)
        base.append((time.perf_counter() - t) * 1000)

    rows = [
        ("wikic search (3 FTS5 lists + RRF)", ours, build),
        ("  + the dense list (semantic)", meaning, build + embed),
        ("wikic FTS5 single list", single, build),
        ("pure-Python BM25 loop (baseline)", base, base_build),
    ]
    print(f"search over {N_SECTIONS:,} sections, {N_QUERIES} natural-language queries")
    print(f"{'':36} {'p50 ms':>8} {'p95 ms':>8} {'build s':>8}")
    for name, values, b in rows:
        if values:
            print(f"{name:36} {pct(values, 50):8.2f} {pct(values, 95):8.2f} {b:8.2f}")
    p50 = pct(ours, 50)
    print(
        f"target p50 <= 10 ms: {'met' if p50 <= 10 else 'NOT met'} ({p50:.2f} ms); "
        f"{pct(base, 50) / p50:.0f}x faster than the baseline at p50"
    )
    if meaning:
        with_dense = pct(meaning, 50)
        print(
            f"with the dense list, target p50 <= 12 ms: {'met' if with_dense <= 12 else 'NOT met'} "
            f"({with_dense:.2f} ms, {with_dense / p50:.2f}x words alone; the dense list read for "
            f"{N_QUERIES - strong} of {N_QUERIES} queries, the others a strong BM25 signal)"
        )
    else:
        print(f"the dense list: not measured ({stats.semantic})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
