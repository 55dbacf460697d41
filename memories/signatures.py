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
from itertools import pairwise

import numpy as np

from memories.text import WORD, words

_BLAKE2B_MAX_BYTES = 64
_FIRST_PERSON = bytes(16)


def _check_bits(bits: int) -> int:
    if bits <= 0 or bits % 64:
        raise ValueError(f"bits must be a positive multiple of 64, got {bits}")
    return bits // 8


def _features(tokens: list[str]) -> dict[str, int]:
    """Unigram and bigram features of the folded tokens with their counts (the weights)."""
    features: dict[str, int] = {}
    get = features.get
    for token in tokens:
        key = "u:" + token
        features[key] = get(key, 0) + 1
    for first, second in pairwise(tokens):
        key = "b:" + first + " " + second
        features[key] = get(key, 0) + 1
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


# Digests of word unigrams, by signature width: words recur across memories (a few
# thousand cover most text), bigrams mostly do not, so only unigrams are kept. Cleared
# when full, so it stays within about 10 MB.
_UNIGRAM_DIGESTS: dict[int, dict[str, bytes]] = {}
_UNIGRAM_CACHE_SIZE = 50_000


def _digests(features: dict[str, int], n_bytes: int) -> bytes:
    if n_bytes > _BLAKE2B_MAX_BYTES:
        return b"".join([_feature_digest(feature, n_bytes) for feature in features])
    # One digest per feature: the common, fast case.
    blake2b = hashlib.blake2b
    cache = _UNIGRAM_DIGESTS.get(n_bytes)
    if cache is None or len(cache) > _UNIGRAM_CACHE_SIZE:
        cache = _UNIGRAM_DIGESTS[n_bytes] = {}
    digests = []
    for feature in features:
        digest = cache.get(feature)
        if digest is None:
            digest = blake2b(
                feature.encode("utf-8"), digest_size=n_bytes, person=_FIRST_PERSON
            ).digest()
            if feature[0] == "u":
                cache[feature] = digest
        digests.append(digest)
    return b"".join(digests)


def _simhash_tokens(tokens: list[str], n_bytes: int) -> bytes:
    """Each signature bit is a weighted vote of the features' hash bits; it is set when
    strictly more than half the total feature weight votes for it.

    Bit i of the signature is bit i % 8 (least significant first) of byte i // 8, in the
    digests and in the result alike: numpy's little-endian bit order on both sides.
    """
    features = _features(tokens)
    if not features:
        return bytes(n_bytes)
    hash_bits = np.unpackbits(
        np.frombuffer(_digests(features, n_bytes), dtype=np.uint8), bitorder="little"
    ).reshape(len(features), 8 * n_bytes)
    weights = list(features.values())
    # n words give n unigrams and n - 1 bigrams: the total weight is odd, so no vote ties.
    total = sum(weights)
    if total == len(weights):  # every feature once: a plain column sum
        votes = hash_bits.sum(axis=0, dtype=np.int64)
    else:
        votes = np.array(weights, dtype=np.int64) @ hash_bits
    return np.packbits(2 * votes > total, bitorder="little").tobytes()


def simhash(text: str, *, bits: int = 256) -> bytes:
    """SimHash of text as bits // 8 bytes; text without words gives all zeros."""
    return _simhash_tokens(words(text), _check_bits(bits))


def simhash_folded(folded: str, *, bits: int = 256) -> bytes:
    """simhash() of text already passed through memories.text.fold (which is idempotent):
    the services fold a memory's text for its search field anyway, so it is folded once."""
    return _simhash_tokens(WORD.findall(folded), _check_bits(bits))


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
