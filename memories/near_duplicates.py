"""Near-duplicates: two memories that say the same thing in almost the same words.

Two texts are near-duplicates when they state the same numbers (the words holding a digit:
"room 101" and "room 102" are two facts however alike), both or neither is negated ("uses
X" / "does not use X" contradict each other, which recall's interference warning is for),
and both measures agree (settings NEAR_DUPLICATE_TRIGRAM and NEAR_DUPLICATE_SIGNATURE):
- their character trigram sets (of the folded text, spaces included, so word boundaries
  count) have a Jaccard similarity at or above the trigram threshold: spelling, a word
  added or dropped, punctuation, and
- their SimHash signatures (memories.signatures: word unigrams and bigrams) agree on at
  least the signature threshold's share of bits: the same words, in the same order.

"User lives in Paris." / "The user lives in Paris." is one (0.83 / 0.85); "User lives in
Paris." / "User lives in Berlin." is not (0.46 / 0.77). On the LoCoMo dev file, 8 of its
3.8 million pairs of turns pass both defaults, all of them small talk ("Thanks, Nate! Your
support..." / "Thanks Nate! Your support...").

Finding them without comparing a new memory with every other: a MinHash sketch of the
trigram set, BANDS bands of ROWS minimum hashes each, every band folded into one 64-bit
key. Two texts share at least one key with probability 1 - (1 - J**ROWS)**BANDS for
trigram Jaccard J: 0.95 at J = 0.7, 0.999 at 0.8, 0.00002 at 0.1 (unrelated sentences
mostly sit at 0.05-0.15). The keys are stored (MemorySketch) and looked up in an index;
only the memories sharing a key are compared, exactly, with both measures. Six rows a band
rather than five: text whose words share many trigrams (the benchmark's synthetic corpus,
made of a few dozen syllables) put 300 memories of 20,000 in a new one's buckets with
five, 39 with six, for the same 0.95 at 0.7 (with 24 bands instead of 16).

Pure: no database. Every constant is derived from BLAKE2b, so keys are the same in every
process and on every machine (stored keys must stay comparable with new ones).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from memories.signatures import hamming_similarity
from memories.text import WORD, fold, negated, words

BANDS = 24
ROWS = 6
_HASHES = BANDS * ROWS
_MASK32 = np.uint64(0xFFFFFFFF)


def _constants(label: str, count: int) -> np.ndarray:
    """`count` odd 64-bit constants, the same everywhere."""
    digest = b"".join(
        hashlib.blake2b(f"{label}:{i}".encode(), digest_size=8).digest() for i in range(count)
    )
    return np.frombuffer(digest, dtype="<u8").astype(np.uint64) | np.uint64(1)


# Multiply-shift hashing: h_i(x) = ((a_i * x + b_i) mod 2**64) >> 32.
_A = _constants("engram-near-a", _HASHES)
_B = _constants("engram-near-b", _HASHES)
# A band's key: sum of its minimums times per-row constants, plus a per-band constant.
_ROW_MULTIPLIERS = _constants("engram-near-row", ROWS)
_BAND_OFFSETS = _constants("engram-near-band", BANDS)

# Digests of trigrams: a few tens of thousands cover most text. Cleared when full.
_TRIGRAM_HASHES: dict[str, int] = {}
_TRIGRAM_CACHE_SIZE = 200_000


def trigrams(text: str) -> frozenset[str]:
    """The character trigrams of the folded text padded with a space on each side."""
    return _folded_trigrams(fold(text))


def _folded_trigrams(folded: str) -> frozenset[str]:
    padded = f" {folded} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def numbers(text: str) -> frozenset[str]:
    """The folded words of the text that hold a digit (3, 10am, 2026-05-01's parts)."""
    return frozenset(word for word in words(text) if any(ch.isdigit() for ch in word))


@dataclass(frozen=True)
class Shape:
    """What near-duplicate comparison needs of a text."""

    grams: frozenset[str]
    numbers: frozenset[str]
    negated: bool


def shape(text: str) -> Shape:
    folded = fold(text)  # once: fold is idempotent, so words() of it would fold again
    tokens = WORD.findall(folded)
    return Shape(
        grams=_folded_trigrams(folded),
        numbers=frozenset(t for t in tokens if any(ch.isdigit() for ch in t)),
        negated=negated(tokens),
    )


def trigram_similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two trigram sets (1.0 for equal sets, 0.0 if either is empty)."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def _trigram_hashes(grams: frozenset[str]) -> list[int]:
    cache = _TRIGRAM_HASHES
    if len(cache) > _TRIGRAM_CACHE_SIZE:
        cache.clear()
    get = cache.get
    values = [get(gram) for gram in grams]
    if None in values:
        blake2b = hashlib.blake2b
        for n, gram in enumerate(grams):
            if values[n] is None:
                values[n] = cache[gram] = int.from_bytes(
                    blake2b(gram.encode(), digest_size=8).digest(), "little"
                )
    return values


def sketch_keys(grams: frozenset[str]) -> list[int]:
    """The BANDS keys (signed 64-bit integers, as the database stores them) of a trigram
    set's MinHash sketch; texts with equal trigram sets have equal keys."""
    return sketch_keys_many([grams])[0]


# Sets per pass of array operations: measured fastest (16 short texts' trigram-by-hash
# array stays in the CPU's cache; a whole bulk's does not and is 10 times slower).
_SETS_PER_PASS = 16


def sketch_keys_many(sets: list[frozenset[str]]) -> list[list[int]]:
    """sketch_keys of each set, _SETS_PER_PASS sets at a time."""
    keys: list[list[int]] = []
    for start in range(0, len(sets), _SETS_PER_PASS):
        keys += _sketch_pass(sets[start : start + _SETS_PER_PASS])
    return keys


def _sketch_pass(sets: list[frozenset[str]]) -> list[list[int]]:
    sizes = [len(grams) for grams in sets]
    hashes = [value for grams in sets for value in _trigram_hashes(grams)]
    if not hashes:
        return [[] for _ in sets]
    x = np.array(hashes, dtype=np.uint64)
    starts = np.cumsum([0, *sizes[:-1]])
    nonempty = np.array(sizes) > 0
    with np.errstate(over="ignore"):
        hashed = (x[:, None] * _A + _B) >> np.uint64(32)  # (trigrams, hash functions)
        minimums = np.minimum.reduceat(hashed, starts[nonempty], axis=0) & _MASK32
        banded = minimums.reshape(-1, BANDS, ROWS)
        keys = (banded * _ROW_MULTIPLIERS).sum(axis=2, dtype=np.uint64) + _BAND_OFFSETS
    rows = iter(keys.view(np.int64).tolist())
    return [next(rows) if size else [] for size in sizes]


def similarity(
    a: Shape,
    b: Shape,
    signature_a: bytes | None,
    signature_b: bytes | None,
    *,
    trigram_threshold: float,
    signature_threshold: float,
) -> float | None:
    """The trigram similarity of two texts when they are near-duplicates (the rule above),
    else None. A missing or empty signature (text without words) counts as agreeing only
    with another such signature."""
    if a.numbers != b.numbers or a.negated != b.negated:
        return None
    if signature_a and signature_b and len(signature_a) == len(signature_b):
        if hamming_similarity(signature_a, signature_b) < signature_threshold:
            return None
    elif bool(signature_a and any(signature_a)) != bool(signature_b and any(signature_b)):
        return None
    score = trigram_similarity(a.grams, b.grams)
    return score if score >= trigram_threshold else None
