"""recall.stages.query: a query reduced to the words the stages match on (no database)."""

from __future__ import annotations

from recall.stages.query import MAX_QUERY_TERMS, analyse_query


def test_it_folds_the_words_and_drops_stop_words_single_letters_and_repeats():
    query = analyse_query("What did Zoë say about the Café, the café and x?")
    assert query.terms == ["zoe", "say", "cafe"]
    assert query.all_words[:3] == ["what", "did", "zoe"]
    assert not query.only_common_words


def test_it_keeps_at_most_sixteen_terms_in_query_order():
    query = analyse_query(" ".join(f"word{n}" for n in range(20)))
    assert query.terms == [f"word{n}" for n in range(MAX_QUERY_TERMS)]


def test_it_tells_a_query_of_common_words_from_an_empty_one():
    assert analyse_query("what is the").only_common_words
    assert not analyse_query("  ").only_common_words
