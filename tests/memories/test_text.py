from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.text import fold, words


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Café Crème", "cafe creme"),
        ("  many\t\nspaces   here ", "many spaces here"),
        ("\uff26\uff35\uff2c\uff2c", "full"),  # fullwidth FULL
        ("Straße", "strasse"),
        ("İstanbul", "istanbul"),
        ("ﬁle", "file"),
        ("Ångström naïve", "angstrom naive"),
        ("", ""),
    ],
)
def test_it_folds_case_accents_compatibility_forms_and_spacing(text, folded):
    assert fold(text) == folded


def test_it_splits_folded_words_and_drops_punctuation():
    assert words("Hello, WORLD! Résumé-writing; v2_final (2024)") == [
        "hello",
        "world",
        "resume",
        "writing",
        "v2_final",
        "2024",
    ]


def test_it_returns_no_words_for_punctuation_only():
    assert words("... !!! ---") == []


@given(st.text())
def test_it_is_idempotent(text):
    assert fold(fold(text)) == fold(text)
    assert words(" ".join(words(text))) == words(text)


def _reference_fold(text: str) -> str:
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.split())


@given(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127))))
def test_the_ascii_shortcut_folds_like_the_full_rule(text):
    assert fold(text) == _reference_fold(text)
