from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.signatures import hamming_distance, hamming_similarity, simhash

SENTENCE = (
    "The project stores long-term memories in PostgreSQL and rebuilds the search index "
    "every night, so recall stays fast even when the archive grows past a million rows."
)


def test_it_returns_bits_over_eight_bytes():
    assert len(simhash(SENTENCE)) == 32
    assert len(simhash(SENTENCE, bits=64)) == 8
    assert len(simhash(SENTENCE, bits=1024)) == 128


@pytest.mark.parametrize("bits", [0, 100, -64])
def test_it_rejects_widths_that_are_not_positive_multiples_of_64(bits):
    with pytest.raises(ValueError):
        simhash(SENTENCE, bits=bits)


@pytest.mark.parametrize("text", ["", "   ", "?!.,"])
def test_it_gives_all_zero_bits_for_text_without_words(text):
    assert simhash(text) == bytes(32)


def test_it_uses_the_feature_hash_itself_for_a_one_word_text():
    # One feature wins every vote, so the signature is its BLAKE2b digest.
    digest = hashlib.blake2b(b"u:memory", digest_size=32, person=bytes(16)).digest()

    assert simhash("Memory") == digest


def test_it_ignores_case_accents_and_spacing():
    assert simhash("Café   CRÈME brûlée") == simhash("cafe creme brulee")


def test_it_keeps_near_duplicates_above_the_ss_threshold():
    edited = SENTENCE.replace("every night", "every evening")

    assert hamming_similarity(simhash(SENTENCE), simhash(edited)) >= 0.8


def test_it_keeps_unrelated_text_near_one_half():
    other = "Grandma's apple pie needs cinnamon, cold butter and a very hot oven for the crust."

    assert 0.3 < hamming_similarity(simhash(SENTENCE), simhash(other)) < 0.65


def test_it_distinguishes_word_order_through_bigrams():
    assert simhash("dog bites man") != simhash("man bites dog")


def test_it_is_stable_across_processes_with_different_hash_seeds():
    code = "from memories.signatures import simhash; import sys; print(simhash(sys.argv[1]).hex())"
    root = Path(__file__).resolve().parents[2]
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code, SENTENCE],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(result.stdout.strip())

    assert outputs == {simhash(SENTENCE).hex()}


def test_it_counts_differing_bits():
    assert hamming_distance(b"\x00" * 8, b"\xff" * 8) == 64
    assert hamming_distance(b"\x0f\x01", b"\x00\x00") == 5
    assert hamming_similarity(b"\x0f\x01", b"\x00\x00") == 1 - 5 / 16


def test_it_refuses_to_compare_signatures_of_different_lengths():
    with pytest.raises(ValueError):
        hamming_distance(bytes(32), bytes(8))
    with pytest.raises(ValueError):
        hamming_similarity(bytes(32), bytes(8))


@given(st.text(max_size=300), st.text(max_size=300))
def test_it_is_symmetric_and_one_on_identical_text(a, b):
    sig_a, sig_b = simhash(a), simhash(b)

    assert hamming_similarity(sig_a, sig_b) == hamming_similarity(sig_b, sig_a)
    assert hamming_similarity(sig_a, simhash(a)) == 1.0
    assert 0.0 <= hamming_similarity(sig_a, sig_b) <= 1.0


# --- The numpy implementation against the original pure-Python one -------------------
#
# Stored signatures must stay valid, so the vectorised simhash has to give the very same
# bits as the algorithm it replaced, kept here verbatim as the reference: BLAKE2b per
# feature, one 32-bit vote counter per bit summed as one big integer (bit-sliced addition).


def _reference_spread_table() -> tuple[bytes, ...]:
    table = []
    for value in range(256):
        spread = sum(1 << (32 * bit) for bit in range(8) if value >> bit & 1)
        table.append(spread.to_bytes(8 * 4, "little"))
    return tuple(table)


_REFERENCE_SPREAD = _reference_spread_table()


def _reference_fold(text: str) -> str:
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.split())


def _reference_simhash(text: str, bits: int = 256) -> bytes:
    import re
    from array import array
    from collections import Counter
    from itertools import pairwise

    n_bytes = bits // 8
    tokens = re.findall(r"\w+", _reference_fold(text))
    features = Counter(f"u:{token}" for token in tokens)
    features.update(f"b:{first} {second}" for first, second in pairwise(tokens))
    if not features:
        return bytes(n_bytes)
    votes = 0
    for feature, weight in features.items():
        data = feature.encode("utf-8")
        chunks = []
        for index in range(0, n_bytes, 64):
            size = min(64, n_bytes - index)
            person = (index // 64).to_bytes(16, "little")
            chunks.append(hashlib.blake2b(data, digest_size=size, person=person).digest())
        digest = b"".join(chunks)
        spread = int.from_bytes(b"".join(_REFERENCE_SPREAD[byte] for byte in digest), "little")
        votes += spread * weight
    counters = array("I")
    counters.frombytes(votes.to_bytes(bits * 4, "little"))
    if sys.byteorder == "big":
        counters.byteswap()
    total = sum(features.values())
    signature = 0
    for position, count in enumerate(counters):
        if 2 * count > total:
            signature |= 1 << position
    return signature.to_bytes(n_bytes, "little")


# Repeated words make weights above 1 (the weighted-vote branch); short alphabets make
# many repeats; the full text strategy brings accents, other scripts and odd spacing.
_REPEATING_TEXT = st.lists(
    st.sampled_from(["tea", "Tea", "café", "CAFÉ", "dog", "bites", "man", "ﬁle", "42", "x_y"]),
    max_size=60,
).map(" ".join)


@given(st.one_of(st.text(max_size=400), _REPEATING_TEXT))
def test_it_matches_the_reference_implementation_bit_for_bit(text):
    assert simhash(text) == _reference_simhash(text)


@pytest.mark.parametrize("bits", [64, 128, 512, 576, 1024])
@given(text=st.one_of(st.text(max_size=200), _REPEATING_TEXT))
def test_it_matches_the_reference_at_every_width(bits, text):
    assert simhash(text, bits=bits) == _reference_simhash(text, bits=bits)


def test_it_matches_the_reference_on_many_random_sentences():
    import random

    rng = random.Random(2026)
    vocabulary = ["memory", "Recall", "naïve", "Straße", "東京", "v2_final", "the", "a", "of"]
    vocabulary += [f"w{i}" for i in range(300)]
    for _ in range(500):
        text = " ".join(rng.choices(vocabulary, k=rng.randint(0, 120)))
        assert simhash(text) == _reference_simhash(text)


def test_the_folded_entry_point_gives_the_same_signature():
    from memories.signatures import simhash_folded
    from memories.text import fold

    for text in (SENTENCE, "Café   CRÈME brûlée", "", "dog dog dog bites"):
        assert simhash_folded(fold(text)) == simhash(text)
        assert simhash_folded(fold(text), bits=512) == simhash(text, bits=512)
    with pytest.raises(ValueError):
        simhash_folded("x", bits=100)
