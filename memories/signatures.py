"""SimHash bit signatures for the Ss recall stage (seed 002): similar text, few differing bits.

Features are folded word unigrams plus word bigrams, weighted by how often they occur.
Words rather than character shingles because Ss stands in for embeddings (meaning,
not spelling): typos and substrings are already the trigram index's job in Sf, and
word features keep a 200-character memory at ~60 features instead of ~200. Bigrams add
a little word order, so "dog bites man" and "man bites dog" do not collide.

Each feature is hashed with BLAKE2b, which is stable across processes and machines;
Python's hash() is salted per process and would make stored signatures meaningless.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections import Counter
from itertools import pairwise

from memories.text import words

_BLAKE2B_MAX_BYTES = 64
_COUNTER_BYTES = 4  # one 32-bit vote counter per signature bit


def _spread_table() -> tuple[bytes, ...]:
    """For each byte value, its 8 bits spread into 8 little-endian 32-bit counters."""
    table = []
    for value in range(256):
        spread = sum(1 << (32 * bit) for bit in range(8) if value >> bit & 1)
        table.append(spread.to_bytes(8 * _COUNTER_BYTES, "little"))
    return tuple(table)


_SPREAD = _spread_table()


def _features(text: str) -> Counter[str]:
    tokens = words(text)
    features = Counter(f"u:{token}" for token in tokens)
    features.update(f"b:{first} {second}" for first, second in pairwise(tokens))
    return features


def _feature_digest(feature: str, n_bytes: int) -> bytes:
    """n_bytes of BLAKE2b over the feature; wide signatures chain digests personalised by index."""
    data = feature.encode("utf-8")
    chunks = []
    for index in range(0, n_bytes, _BLAKE2B_MAX_BYTES):
        size = min(_BLAKE2B_MAX_BYTES, n_bytes - index)
        person = (index // _BLAKE2B_MAX_BYTES).to_bytes(16, "little")
        chunks.append(hashlib.blake2b(data, digest_size=size, person=person).digest())
    return b"".join(chunks)


def simhash(text: str, *, bits: int = 256) -> bytes:
    """SimHash of text as bits // 8 bytes; text without words gives all zeros.

    Each signature bit is a weighted vote of the features' hash bits; it is set when
    strictly more than half the total feature weight votes for it. The votes are summed
    as one big integer holding a 32-bit counter per bit (bit-sliced addition), which is
    far faster in Python than looping over every bit of every feature.
    """
    if bits <= 0 or bits % 64:
        raise ValueError(f"bits must be a positive multiple of 64, got {bits}")
    n_bytes = bits // 8
    features = _features(text)
    if not features:
        return bytes(n_bytes)
    votes = 0
    for feature, weight in features.items():
        digest = _feature_digest(feature, n_bytes)
        spread = int.from_bytes(b"".join(_SPREAD[byte] for byte in digest), "little")
        votes += spread * weight
    counters = array("I")
    counters.frombytes(votes.to_bytes(bits * _COUNTER_BYTES, "little"))
    if sys.byteorder == "big":
        counters.byteswap()
    # n words give n unigrams and n - 1 bigrams: the total weight is odd, so no vote ties.
    total = sum(features.values())
    signature = 0
    for position, count in enumerate(counters):
        if 2 * count > total:
            signature |= 1 << position
    return signature.to_bytes(n_bytes, "little")


def hamming_distance(a: bytes, b: bytes) -> int:
    """Number of differing bits between two signatures of the same length."""
    if len(a) != len(b):
        raise ValueError(f"signature lengths differ: {len(a)} and {len(b)} bytes")
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).bit_count()


def hamming_similarity(a: bytes, b: bytes) -> float:
    """1 - distance / bits: 1.0 for identical signatures, about 0.5 for unrelated text."""
    distance = hamming_distance(a, b)
    if not a:
        raise ValueError("cannot compare empty signatures")
    return 1.0 - distance / (8 * len(a))
