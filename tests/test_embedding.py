"""The bundled embedding: WordLlama's vectors without WordLlama, a query path without numpy, a
clear note when the model cannot be used, and a vector store that re-embeds only what changed."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from wikic.compile.schema import load_wiki_schema
from wikic.core import embedding
from wikic.core.bpe import BPE, tables
from wikic.core.embedding import QueryEmbedder, Unavailable, batch_embedder, model_files
from wikic.core.errors import ConfigError
from wikic.core.facts import plural_stem
from wikic.core.markdown import content_words
from wikic.core.vectors import VectorStore, embed_missing, text_key
from wikic.transform.layer1 import load_layer1

REPO = Path(__file__).resolve().parents[1]
TEXTS = [
    "How long does a full tank last?",
    "Soak the sponge in the tank water for a minute, then place two to five seeds in the hole.",
    "<s>special</s> tokens <unk> inside text",
    "水箱容量 and émojis 🌱🍅, tabs\tand\nnew lines",
    "x" * 700,
    " leading and  double  spaces ",
]


@pytest.fixture(scope="module")
def files() -> embedding.ModelFiles:
    try:
        return model_files()
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def assets(files: embedding.ModelFiles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("assets") / "embedding.bin"
    assert embedding.write_query_assets(path, files)
    return path


def test_vectors_are_wordllamas_own(files: embedding.ModelFiles, assets: Path) -> None:
    pytest.importorskip("wordllama")
    np = pytest.importorskip("numpy")
    # WordLlama itself runs in a child process with the network refused: importing it configures
    # the root logger, and its loader must not reach for a download.
    script = (
        "import json, socket, sys\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "from pathlib import Path\n"
        "import wordllama\n"
        "wl = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)\n"
        "print(json.dumps(wl.embed(json.loads(sys.stdin.read()), norm=True).tolist()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(TEXTS), capture_output=True, text=True, check=True
    )
    expected = np.array(json.loads(done.stdout))
    batch = batch_embedder().embed(TEXTS)
    assert batch.shape == (len(TEXTS), embedding.DIM) and batch.dtype == np.float32
    assert np.abs(batch - expected).max() <= 1e-6
    query = QueryEmbedder.open(assets)
    assert np.abs(np.array([query.embed(t) for t in TEXTS]) - expected).max() <= 1e-6
    assert query.embed("") == [0.0] * embedding.DIM and not batch_embedder().embed([""]).any()


def test_the_tokenizer_port_gives_the_ids_tokenizers_gives(files: embedding.ModelFiles) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(files.tokenizer))
    ported = BPE(tables(json.loads(files.tokenizer.read_text("utf-8"))))
    rng = random.Random(20)
    alphabet = "abcdefghij klmnop<>/s\u2581\n\t.,-'\"é水日🌱0123456789"
    samples = TEXTS + ["", " ", "a<s>b", "</s", "<unk", "<<s>>", "\u2581 already"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    expected = {t: reference.encode(t, add_special_tokens=False).ids for t in samples}
    assert [t for t in samples if ported.encode(t) != expected[t]] == []
    # and the compile's embedder, word by word, gives them too (the second time from its cache)
    batch = batch_embedder()
    for _ in range(2):
        assert [t for t in samples if batch.ids(t) != expected[t]] == []


def test_an_unsupported_tokenizer_is_refused(files: embedding.ModelFiles) -> None:
    config = json.loads(files.tokenizer.read_text("utf-8"))
    config["pre_tokenizer"] = {"type": "Whitespace"}
    with pytest.raises(ValueError, match="pre-tokenizer"):
        tables(config)


def test_a_query_is_embedded_and_searched_without_numpy(
    files: embedding.ModelFiles, assets: Path, tmp_path: Path
) -> None:
    db = tmp_path / "vectors.sqlite"
    store = VectorStore(sqlite3.connect(db), "sections")
    texts = ["Fill the water tank every two weeks.", "The light runs 16 hours a day.", "Pods hold seeds."]
    embed_missing(store, texts, batch_embedder)
    script = (
        "import json, sqlite3, sys\n"
        "from pathlib import Path\n"
        "from wikic.core.embedding import QueryEmbedder\n"
        "from wikic.core.vectors import VectorStore\n"
        f"query = QueryEmbedder.open(Path({str(assets)!r}))\n"
        f"store = VectorStore(sqlite3.connect({str(db)!r}), 'sections')\n"
        "hits = store.nearest(query.embed('how many hours is the lamp on'), 3)\n"
        "print(json.dumps({'hits': [k for _, k in hits], 'modules': sorted(sys.modules)}))\n"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout)
    assert out["hits"][0] == text_key(texts[1]) and len(out["hits"]) == 3
    heavy = {"numpy", "tokenizers", "wordllama", "pydantic", "safetensors", "huggingface_hub"}
    assert heavy & {m.split(".")[0] for m in out["modules"]} == set()


# ---------------------------------------------------------------- when the model cannot be used


def _one_clear_line(exc: pytest.ExceptionInfo[Unavailable]) -> str:
    message = str(exc.value)
    assert "\n" not in message and message.startswith("semantic search is off: ")
    assert message.endswith("searching by words only")
    return message


def test_without_the_package_the_note_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Unavailable) as exc:
        model_files()
    assert "'wordllama' package is not installed (pip install" in _one_clear_line(exc)

    def broken(name: str) -> None:
        raise ValueError("wordllama.__spec__ is None")

    with pytest.raises(Unavailable, match="not installed"):
        embedding.package_dir(broken)


def _package_copy(files: embedding.ModelFiles, dest: Path) -> Path:
    for path, rel in ((files.weights, embedding.WEIGHTS[0]), (files.tokenizer, embedding.TOKENIZER[0])):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
    return dest


def _rewrite(path: Path, data: bytes, second: int) -> None:
    """Write ``data`` and give the file a time of its own: a check remembers a file's hash by its
    size and time, and two writes within one tick of the clock would share a time."""
    path.write_bytes(data)
    os.utime(path, ns=(second * 10**9, second * 10**9))


def test_a_damaged_package_file_is_refused_with_a_note(files: embedding.ModelFiles, tmp_path: Path) -> None:
    package = _package_copy(files, tmp_path / "wordllama")
    assert model_files(package).weights == package / embedding.WEIGHTS[0]
    weights = package / embedding.WEIGHTS[0]
    data = weights.read_bytes()
    _rewrite(weights, data[: len(data) // 2], 1)  # cut short
    with pytest.raises(Unavailable) as exc:
        batch_embedder(package)
    assert f"{weights} is damaged" in _one_clear_line(exc) and "reinstall wordllama" in str(exc.value)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # same size, one byte changed: only the SHA-256 tells
    _rewrite(weights, bytes(flipped), 2)
    with pytest.raises(Unavailable, match="is damaged"):
        model_files(package)
    _rewrite(weights, data, 3)
    (package / embedding.TOKENIZER[0]).unlink()
    with pytest.raises(Unavailable) as exc:
        model_files(package)
    assert "l2_supercat_tokenizer_config.json is missing" in _one_clear_line(exc)


def test_a_damaged_query_file_is_refused_then_written_again(
    files: embedding.ModelFiles, tmp_path: Path
) -> None:
    path = tmp_path / "embedding.bin"
    with pytest.raises(Unavailable) as exc:
        QueryEmbedder.open(path)
    assert "run 'wikic compile'" in _one_clear_line(exc)
    assert embedding.write_query_assets(path, files)
    good = path.read_bytes()
    bad_table = good.replace(b"WBPE1", b"XBPE1", 1)  # the right size, a tokenizer table that is not one
    for damaged in (good[:-1], good[: len(good) // 3], b"", b"not an embedding file" * 10, bad_table):
        path.write_bytes(damaged)
        with pytest.raises(Unavailable) as exc:
            QueryEmbedder.open(path)
        _one_clear_line(exc)
        assert embedding.write_query_assets(path, files) and path.read_bytes() == good
    stamp = path.stat().st_mtime_ns
    assert not embedding.write_query_assets(path, files) and path.stat().st_mtime_ns == stamp


# ---------------------------------------------------------------- meaning, on the example KB


PARAPHRASES = [
    ("sowing something I collected myself", "faq:grow-your-own-seeds"),
    ("the lamp never switches on", "faq:light-not-turning-on"),
    ("how do I get my money back", "faq:return-policy"),
    ("bill for energy", "faq:electricity-use"),
    ("is it noisy", "faq:pump-noise"),
]


def test_a_question_in_other_words_finds_its_section(files: embedding.ModelFiles, assets: Path) -> None:
    sections = [(doc, s) for doc in load_layer1(REPO) for s in doc.sections]
    texts = [f"{doc.title}\n{' > '.join(s.path)}\n{s.text}" for doc, s in sections]
    matrix = batch_embedder().embed(texts)
    query = QueryEmbedder.open(assets)

    def stems(text: str) -> set[str]:
        return {plural_stem(w) for w in content_words(text)}

    for question, expected in PARAPHRASES:
        scores = matrix @ query.embed(question)
        best = int(scores.argmax())
        doc, section = sections[best]
        assert doc.ref == expected, (question, doc.ref, section.anchor)
        assert stems(question) & stems(texts[best]) == set()  # no word in common


# ---------------------------------------------------------------- the switch


def test_the_semantic_switch_is_read_strictly(tmp_path: Path) -> None:
    (tmp_path / "schema").mkdir()
    (tmp_path / "schema" / "librarian.md").write_text("rules\n", "utf-8")
    assert load_wiki_schema(tmp_path, "{}\n").semantic is True
    assert load_wiki_schema(tmp_path, "search: {semantic: false}\n").semantic is False
    assert load_wiki_schema(REPO).semantic is True
    with pytest.raises(ConfigError, match=r"search\.semantic: expected bool"):
        load_wiki_schema(tmp_path, "search: {semantic: 'no'}\n")
    with pytest.raises(ConfigError, match=r"search: unknown key\(s\): dense"):
        load_wiki_schema(tmp_path, "search: {dense: true}\n")


def test_one_embedder_per_process_while_the_package_is_there(
    files: embedding.ModelFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = embedding.shared_embedder()
    assert embedding.shared_embedder() is first and first.embed(["a pod"]).shape == (1, embedding.DIM)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Unavailable, match="not installed"):
        embedding.shared_embedder()
