"""The byte-pair encoding of WordLlama's tokenizer (a Llama-2 SentencePiece BPE, stored in the
Hugging Face ``tokenizers`` format), redone with the standard library so that a query is tokenized
without loading ``tokenizers`` (whose start-up alone costs more than a search).

``tables`` turns the tokenizer's JSON into compact sorted arrays once; ``BPE`` reads them and
encodes a text to the very ids ``tokenizers`` gives (``add_special_tokens=False``):

- the special tokens (``<unk>``, ``<s>``, ``</s>``) are matched in the raw text first, and each
  piece between them is encoded on its own;
- a piece is normalised by putting '▁' before it and turning each space into '▁';
- there is no pre-tokenizer: the whole piece is one word, split into characters (a character the
  vocabulary lacks becomes its UTF-8 bytes, ``<0xNN>``) and merged by rank, lowest first, leftmost
  first among equal ranks. No merge joins a character to a following '▁', so each run of '▁' and
  what follows it up to the next '▁' is merged on its own: the same ids, from smaller heaps.
"""

from __future__ import annotations

import array
import functools
import json
import re
import struct
import sys
from bisect import bisect_left
from heapq import heapify, heappop, heappush

MAGIC = b"WBPE1\0\0\0"
SPACE = "\u2581"
NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
    ],
}
_COUNTS = struct.Struct("<III")  # characters, merges, bytes of the special tokens' JSON


def tables(config: dict) -> bytes:
    """The arrays ``BPE`` reads, from a parsed ``tokenizer.json``. A ValueError names what this
    port does not reproduce (another normaliser, a pre-tokenizer, dropout…)."""
    model = config.get("model") or {}
    vocab = model.get("vocab") or {}
    _check_supported(config, model, vocab)
    chars = sorted((ord(piece), i) for piece, i in vocab.items() if len(piece) == 1)
    merges = {}
    for rank, merge in enumerate(model["merges"]):
        a, b = merge.split(" ") if isinstance(merge, str) else merge
        merges[vocab[a] << 32 | vocab[b]] = rank << 32 | vocab[a + b]
    keys = sorted(merges)
    specials = json.dumps({t["content"]: t["id"] for t in config.get("added_tokens") or []}).encode()
    parts = [
        array.array("I", [c for c, _ in chars]),
        array.array("I", [i for _, i in chars]),
        array.array("I", [vocab[f"<0x{b:02X}>"] for b in range(256)]),
        array.array("Q", keys),
        array.array("Q", [merges[k] for k in keys]),
    ]
    if sys.byteorder == "big":
        for part in parts:
            part.byteswap()
    body = b"".join(part.tobytes() for part in parts)
    return MAGIC + _COUNTS.pack(len(chars), len(keys), len(specials)) + body + specials


def _check_supported(config: dict, model: dict, vocab: dict) -> None:
    problems = []
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        problems.append("the model is not a byte-fallback BPE")
    if model.get("dropout") or model.get("ignore_merges"):
        problems.append("dropout or ignore_merges is set")
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        problems.append("sub-word affixes are set")
    if config.get("normalizer") != NORMALIZER or config.get("pre_tokenizer") is not None:
        problems.append("the normaliser or pre-tokenizer differs from Llama-2's")
    for token in config.get("added_tokens") or []:
        if token.get("normalized") or token.get("single_word") or token.get("lstrip") or token.get("rstrip"):
            problems.append(f"the added token {token.get('content')!r} has matching options")
    if any(f"<0x{b:02X}>" not in vocab for b in range(256)):
        problems.append("the vocabulary lacks byte tokens")
    if vocab and max(vocab.values()) >= 1 << 32:
        problems.append("token ids do not fit 32 bits")
    if problems:
        raise ValueError("unsupported tokenizer: " + "; ".join(problems))


def normalised_words(piece: str) -> list[str]:
    """``piece`` normalised as the tokenizer does ('▁' before it, every space a '▁'), cut into the
    words its merges never cross: a run of '▁' and what follows it up to the next '▁'."""
    return _word_re().findall(SPACE + piece.replace(" ", SPACE))


@functools.cache
def _word_re() -> re.Pattern:
    return re.compile(f"{SPACE}*[^{SPACE}]+|{SPACE}+")


class BPE:
    """Encodes text as the tokenizer does, from the arrays ``tables`` wrote, read in place (a
    bytes object or a memory map: nothing is copied on a little-endian machine). Each distinct
    word is merged once and remembered (``WORD_CACHE`` of them), for a process that asks many
    questions."""

    WORD_CACHE = 50_000

    def __init__(self, data: bytes | memoryview):
        view = memoryview(data)
        if bytes(view[: len(MAGIC)]) != MAGIC:
            raise ValueError("not a BPE table")
        n_chars, n_merges, n_special = _COUNTS.unpack_from(view, len(MAGIC))
        offset = len(MAGIC) + _COUNTS.size
        parts: list = []
        for code, n in (("I", n_chars), ("I", n_chars), ("I", 256), ("Q", n_merges), ("Q", n_merges)):
            end = offset + n * (4 if code == "I" else 8)
            part = view[offset:end].cast(code)
            if sys.byteorder == "big":
                part = array.array(code, part)
                part.byteswap()
            parts.append(part)
            offset = end
        if offset + n_special != len(view):
            raise ValueError(f"BPE table of {len(view)} bytes, expected {offset + n_special}")
        self.chars, self.char_ids, self.byte_ids, self.merge_keys, self.merge_values = parts
        self.specials: dict[str, int] = json.loads(bytes(view[offset:]))
        names = sorted(self.specials, key=len, reverse=True)
        self.special_re = re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else None
        self.words: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``, as ``Tokenizer.encode(text, add_special_tokens=False)``."""
        pieces = [text] if self.special_re is None else self.special_re.split(text)
        ids: list[int] = []
        for n, piece in enumerate(pieces):
            if n % 2:
                ids.append(self.specials[piece])
            elif piece:
                for word in normalised_words(piece):
                    ids.extend(self.words.get(word) or self._remember(word))
        return ids

    def _remember(self, word: str) -> list[int]:
        if len(self.words) >= self.WORD_CACHE:
            self.words.clear()
        found = self.words[word] = self._word(word)
        return found

    def _symbols(self, word: str) -> list[int]:
        """A normalised word as single-character tokens (bytes for characters not in the vocabulary)."""
        chars, char_ids, byte_ids = self.chars, self.char_ids, self.byte_ids
        ids = []
        for ch in word:
            c = ord(ch)
            i = bisect_left(chars, c)
            if i < len(chars) and chars[i] == c:
                ids.append(char_ids[i])
            else:
                ids.extend(byte_ids[b] for b in ch.encode("utf-8"))
        return ids

    def _merge(self, a: int, b: int) -> int | None:
        """rank << 32 | merged id of the pair (a, b), or None if the pair never merges."""
        key = a << 32 | b
        i = bisect_left(self.merge_keys, key)
        return self.merge_values[i] if i < len(self.merge_keys) and self.merge_keys[i] == key else None

    def _word(self, word: str) -> list[int]:
        """Merge the symbols of one normalised word: always the lowest-ranked pair present,
        leftmost first. A heap holds (rank, position, merged id); entries made stale by an earlier
        merge are skipped when popped, as in ``tokenizers``' ``Word::merge_all``."""
        ids = self._symbols(word)
        n = len(ids)
        nxt, prv, alive = list(range(1, n + 1)), list(range(-1, n - 1)), [True] * n
        heap = []
        for p in range(n - 1):
            m = self._merge(ids[p], ids[p + 1])
            if m is not None:
                heap.append((m >> 32, p, m & 0xFFFFFFFF))
        heapify(heap)
        while heap:
            rank, p, new = heappop(heap)
            q = nxt[p]
            if not alive[p] or q >= n or self._merge(ids[p], ids[q]) != (rank << 32 | new):
                continue
            ids[p], alive[q] = new, False
            nxt[p] = r = nxt[q]
            if r < n:
                prv[r] = p
                m = self._merge(new, ids[r])
                if m is not None:
                    heappush(heap, (m >> 32, p, m & 0xFFFFFFFF))
            if prv[p] >= 0:
                m = self._merge(ids[prv[p]], new)
                if m is not None:
                    heappush(heap, (m >> 32, prv[p], m & 0xFFFFFFFF))
        return [ids[i] for i in range(n) if alive[i]]
