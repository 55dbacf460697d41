from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recall.mmr import jaccard, mmr_rerank


def test_it_measures_jaccard_as_shared_over_all_words():
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(2 / 4)
    assert jaccard({"a"}, {"a"}) == 1.0
    assert jaccard({"a"}, {"b"}) == 0.0


def test_it_treats_two_empty_sets_as_dissimilar():
    assert jaccard(set(), set()) == 0.0


def test_it_puts_the_highest_score_first():
    items = [(1, 0.5, "alpha"), (2, 0.9, "beta"), (3, 0.7, "gamma")]

    assert mmr_rerank(items)[0] == 2


def test_it_demotes_a_near_duplicate_below_a_diverse_result():
    items = [
        (10, 0.90, "the project uses sqlite for storage"),
        (11, 0.88, "the project uses sqlite for storage too"),
        (12, 0.80, "deploys run every friday afternoon"),
    ]

    # After 10: item 11 scores 0.7*0.88 - 0.3*(6/7) = 0.3589, item 12 scores 0.7*0.80 = 0.56.
    assert mmr_rerank(items) == [10, 12, 11]


def test_it_keeps_relevance_order_when_lambda_is_one():
    items = [
        (1, 0.9, "same words"),
        (2, 0.8, "same words"),
        (3, 0.1, "different"),
    ]

    assert mmr_rerank(items, lam=1.0) == [1, 2, 3]


def test_it_breaks_ties_by_input_order():
    items = [(7, 0.5, "x"), (3, 0.5, "y"), (5, 0.5, "z")]

    assert mmr_rerank(items) == [7, 3, 5]


def test_it_stops_at_the_limit():
    items = [(i, 1.0 - i / 10, f"text {i}") for i in range(6)]

    assert mmr_rerank(items, limit=2) == [0, 1]
    assert mmr_rerank(items, limit=0) == []
    assert mmr_rerank(items, limit=99) == mmr_rerank(items)
    with pytest.raises(ValueError):
        mmr_rerank(items, limit=-1)


def test_it_compares_folded_words():
    items = [
        (1, 0.9, "Café CRÈME"),
        (2, 0.85, "cafe creme"),
        (3, 0.6, "something else"),
    ]

    # Item 2 is identical after folding: 0.7*0.85 - 0.3 = 0.295 < 0.7*0.6 = 0.42.
    assert mmr_rerank(items) == [1, 3, 2]


items_strategy = st.lists(
    st.tuples(st.floats(min_value=0, max_value=1), st.text(max_size=40)), max_size=25
)


@given(items_strategy, st.floats(min_value=0, max_value=1))
def test_it_returns_a_permutation_of_the_input_ids(raw, lam):
    items = [(index * 3, score, text) for index, (score, text) in enumerate(raw)]

    ranked = mmr_rerank(items, lam=lam)

    assert sorted(ranked) == sorted(item[0] for item in items)


# --- NaN and infinities are refused, not mapped to a plausible number (issue 13) -------

NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("lam", NOT_FINITE)
def test_it_refuses_a_non_finite_lambda(lam):
    items = [(1, 0.9, "alpha"), (2, 0.8, "beta")]

    with pytest.raises(ValueError, match="lam must be a finite number"):
        mmr_rerank(items, lam=lam)


@pytest.mark.parametrize("score", NOT_FINITE)
def test_it_refuses_a_non_finite_score(score):
    # Before: NaN compares False with everything, so max() kept whichever item it met first.
    items = [(1, 0.9, "alpha"), (2, score, "beta"), (3, 0.5, "gamma")]

    with pytest.raises(ValueError, match="score of item 2 must be a finite number"):
        mmr_rerank(items)
