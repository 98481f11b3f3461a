"""Meaning, not only words: a text embedding that needs no download.

WordLlama's ``l2_supercat`` model is a table of 256-dimension vectors, one per token of the Llama-2
vocabulary, shipped in the ``wordllama`` wheel with its tokenizer. A text's vector is the mean of
its tokens' vectors, scaled to length 1, the same as ``WordLlama.embed(texts, norm=True)``.
``wordllama`` itself is never imported (it loads pydantic, configures the root logger and reaches
for the network when a file is not where it looks): its two files are found with
``importlib.util.find_spec``, checked against the sizes and SHA-256 they were released with, and
read directly.

- ``model_files()`` finds and checks the files; ``Unavailable`` says, in one sentence meant for
  the user, why they cannot be used (the caller shows it as a note and searches by words only).
- ``BatchEmbedder`` (numpy and ``tokenizers``) embeds many texts at once, for a compile.
- ``write_query_assets()`` stores the tokenizer as compact tables and the token vectors as raw
  float16 rows in one file under ``.wikic/``; ``QueryEmbedder`` reads it with the standard library
  only, loading just the rows of the query's tokens, so a search does not pay for numpy.
"""

from __future__ import annotations

import functools
import json
import math
import mmap
import re
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from operator import add
from pathlib import Path

from .bpe import BPE, normalised_words, tables
from .errors import WikicError

TYPE_CHECKING = False  # not typing's: importing typing would cost a search more than its lookup
if TYPE_CHECKING:
    import numpy as np

MODEL = "wordllama/l2_supercat_256"
DIM = 256
ROWS = 32000
PACKAGE = "wordllama"
QUERY_ASSETS = ".wikic/embedding.bin"  # relative to the KB root
_MAGIC = b"WKEMBED1"
_HEADER = struct.Struct("<I")
_ROW = struct.Struct(f"<{DIM}e")


class Unavailable(WikicError):
    """The embedding cannot be used; the message is a note for the user (what is wrong, what to
    do, and that search goes on by words only)."""


# The files of the wheel as released: (path in the package, size, SHA-256).
WEIGHTS = (
    "weights/l2_supercat_256.safetensors",
    16_384_096,
    "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
)
TOKENIZER = (
    "tokenizers/l2_supercat_tokenizer_config.json",
    1_842_796,
    "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
)


class ModelFiles:
    """The model's two files, found and checked (a plain class: a search imports this module,
    and building a dataclass costs more than the lookup it serves)."""

    __slots__ = ("weights", "tokenizer")

    def __init__(self, weights: Path, tokenizer: Path):
        self.weights, self.tokenizer = weights, tokenizer


def off(reason: str) -> Unavailable:
    return Unavailable(f"semantic search is off: {reason}; searching by words only")


def package_dir(find_spec: Callable[[str], object] | None = None) -> Path:
    """The installed ``wordllama`` package's folder, found without importing it."""
    if find_spec is None:
        import importlib.util  # here: a search never looks for the package

        find_spec = importlib.util.find_spec
    try:
        spec = find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    if not locations:
        raise off(f"the '{PACKAGE}' package is not installed (pip install '{PACKAGE}>=0.4')")
    return Path(locations[0])


def model_files(package: Path | None = None) -> ModelFiles:
    """The model's files in ``package`` (default: the installed ``wordllama``), after checking
    their size and SHA-256; ``Unavailable`` if the package or a file is missing or damaged."""
    folder = package_dir() if package is None else package
    found = []
    for rel, size, sha256 in (WEIGHTS, TOKENIZER):
        path = folder / rel
        try:
            st = path.stat()
        except OSError:
            raise off(
                f"{path} is missing; reinstall {PACKAGE} (pip install --force-reinstall {PACKAGE})"
            ) from None
        if st.st_size != size or _sha256(path, st.st_size, st.st_mtime_ns) != sha256:
            raise off(
                f"{path} is damaged or not the release wikic knows ({st.st_size} bytes, expected "
                f"{size} with SHA-256 {sha256[:12]}…); reinstall {PACKAGE} "
                f"(pip install --force-reinstall '{PACKAGE}>=0.4')"
            )
        found.append(path)
    return ModelFiles(*found)


@functools.lru_cache(maxsize=8)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    """A file's SHA-256, remembered for as long as its size and time stay the same."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def matrix_span(weights: Path) -> tuple[int, int]:
    """(offset, length) of the float16 (ROWS, DIM) token matrix inside the safetensors file: an
    8-byte little-endian header length, a JSON header, then the raw tensor."""
    with open(weights, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(length))
    tensor = header.get("embedding.weight") or {}
    start, end = tensor.get("data_offsets") or (0, 0)
    if tensor.get("dtype") != "F16" or tensor.get("shape") != [ROWS, DIM] or end - start != ROWS * DIM * 2:
        raise off(f"{weights} does not hold a float16 {ROWS}×{DIM} matrix")
    return 8 + length + start, end - start


# ---------------------------------------------------------------- compile time: many texts


class BatchEmbedder:
    """Embeds lists of texts with numpy and Hugging Face ``tokenizers``: the vectors of
    ``WordLlama.embed(texts, norm=True)``, except that a text without tokens (the empty string)
    gets a zero vector rather than NaN.

    The tokenizer has no pre-tokenizer, but no merge of its vocabulary joins a character to a
    following '▁' (a space, once normalised): so a text's tokens are those of its words, each a run
    of spaces and what follows it up to the next space, encoded on their own. Each distinct word is encoded once
    and remembered (``WORD_CACHE`` of them), which makes a knowledge base's many texts about three
    times quicker to tokenize than whole."""

    WORD_CACHE = 200_000

    def __init__(self, files: ModelFiles):
        try:
            import numpy as np
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise off(f"{exc.name or exc} cannot be imported ({exc}); reinstall wikic") from None
        self.np = np
        self.tokenizer = Tokenizer.from_file(str(files.tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        offset, _ = matrix_span(files.weights)
        raw = np.fromfile(files.weights, dtype="<f2", count=ROWS * DIM, offset=offset)
        self.matrix = raw.reshape(ROWS, DIM).astype(np.float32)
        specials = {t.content: i for i, t in self.tokenizer.get_added_tokens_decoder().items()}
        self.specials = specials
        self.special_re = re.compile("(" + "|".join(map(re.escape, sorted(specials, key=len)[::-1])) + ")")
        self.words: dict[str, list[int]] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array (len(texts), DIM) of unit vectors."""
        np = self.np
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.ids(text)
            if ids:
                out[row] = self.matrix[ids].sum(axis=0, dtype=np.float32) / np.float32(len(ids))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text``, as ``Tokenizer.encode(text, add_special_tokens=False)``:
        the special tokens matched first, each piece between them encoded word by word."""
        if len(self.words) > self.WORD_CACHE:
            self.words.clear()
        ids: list[int] = []
        for n, piece in enumerate(self.special_re.split(text) if self.specials else [text]):
            if n % 2:
                ids.append(self.specials[piece])
            elif piece:
                for word in normalised_words(piece):
                    found = self.words.get(word)
                    if found is None:
                        found = self.words[word] = [t.id for t in self.tokenizer.model.tokenize(word)]
                    ids += found
        return ids


def batch_embedder(package: Path | None = None) -> BatchEmbedder:
    """A ``BatchEmbedder`` on the checked model files; ``Unavailable`` if they cannot be used."""
    return BatchEmbedder(model_files(package))


def shared_embedder() -> BatchEmbedder:
    """The installed model's ``BatchEmbedder``, loaded once per process however many parts of a
    compile embed (the planner, the search index); its files are checked at every call."""
    files = model_files()
    return _loaded(files.weights, files.tokenizer)


@functools.lru_cache(maxsize=1)
def _loaded(weights: Path, tokenizer: Path) -> BatchEmbedder:
    return BatchEmbedder(ModelFiles(weights, tokenizer))


# ---------------------------------------------------------------- query time: one text, stdlib only


def write_query_assets(path: Path, files: ModelFiles) -> bool:
    """Write the query path's file (tokenizer tables, then the float16 token matrix) unless it
    already holds what ``files`` hold. True when it was written."""
    from .fsutil import atomic_write

    stamp = {"weights": _stamp(files.weights), "tokenizer": _stamp(files.tokenizer)}
    try:
        current = QueryEmbedder.open(path)
    except Unavailable:
        pass
    else:
        current.close()
        if current.header.get("source") == stamp:
            return False
    bpe = _bpe_tables(files.tokenizer, *stamp["tokenizer"])
    offset, length = matrix_span(files.weights)
    with open(files.weights, "rb") as fh:
        fh.seek(offset)
        matrix = fh.read(length)
    header = {"model": MODEL, "dim": DIM, "rows": ROWS, "bpe": len(bpe), "source": stamp}
    head = json.dumps(header, sort_keys=True).encode()
    atomic_write(path, b"".join([_MAGIC, _HEADER.pack(len(head)), head, bpe, matrix]))
    return True


@functools.lru_cache(maxsize=2)
def _bpe_tables(tokenizer: Path, size: int, mtime_ns: int, sha256: str) -> bytes:
    """The tokenizer's tables, made once per process for as long as its file stays the same (every
    new KB's compile writes them into its query file)."""
    try:
        return tables(json.loads(tokenizer.read_text("utf-8")))
    except ValueError as exc:
        raise off(f"{tokenizer}: {exc}") from None


def _stamp(path: Path) -> list:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, _sha256(path, st.st_size, st.st_mtime_ns)]


class QueryEmbedder:
    """Embeds one text at a time with the standard library, from ``write_query_assets``' file,
    mapped into memory: a query reads the tokenizer's tables in place and only its tokens' rows."""

    def __init__(self, path: Path, data: mmap.mmap, header: dict, bpe: BPE, matrix_offset: int):
        self.path, self.data, self.header, self.bpe = path, data, header, bpe
        self.matrix_offset = matrix_offset

    @classmethod
    def open(cls, path: Path) -> QueryEmbedder:
        """``Unavailable`` when the file is missing, cut short or not one this version wrote."""
        try:
            with open(path, "rb") as fh:
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
            raise off(f"{path} is missing or empty; run 'wikic compile' to write it") from None
        try:
            return cls._read(path, data)
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            problem = str(exc)
        data.close()  # only now: the failed reader's views of the map went with the exception
        raise off(f"{path} is damaged ({problem}); delete it and run 'wikic compile'")

    @classmethod
    def _read(cls, path: Path, data: mmap.mmap) -> QueryEmbedder:
        if data[: len(_MAGIC)] != _MAGIC:
            raise ValueError("not an embedding file of this wikic")
        (length,) = _HEADER.unpack_from(data, len(_MAGIC))
        start = len(_MAGIC) + _HEADER.size
        header = json.loads(data[start : start + length])
        if (header["model"], header["dim"], header["rows"]) != (MODEL, DIM, ROWS):
            raise ValueError(f"it holds {header['model']}, not {MODEL}")
        offset = start + length + header["bpe"]
        if len(data) != offset + ROWS * _ROW.size:
            raise ValueError(f"{len(data)} bytes, expected {offset + ROWS * _ROW.size}")
        return cls(path, data, header, BPE(memoryview(data)[start + length : offset]), offset)

    def close(self) -> None:
        self.bpe = None  # its views of the map must go before the map can close
        self.data.close()

    def row(self, token: int) -> tuple[float, ...]:
        return _ROW.unpack_from(self.data, self.matrix_offset + token * _ROW.size)

    def embed(self, text: str) -> list[float]:
        """The unit vector of ``text`` (DIM floats); all zeros for a text without tokens."""
        total = [0.0] * DIM
        for token, count in Counter(self.bpe.encode(text)).items():
            row = self.row(token)
            total = list(map(add, total, row)) if count == 1 else [t + count * x for t, x in zip(total, row)]
        return unit(total)


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (all zeros stays all zeros)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0] * len(vector)
