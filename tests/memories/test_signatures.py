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
