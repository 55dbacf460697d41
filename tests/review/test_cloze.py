"""Cloze fronts (issue 17, item 1): which words a card hides, how many, and the front a
card gets from its namespace's setting, with the namespace's rarest words counted in the
database (both engines)."""

from __future__ import annotations

import pytest

from memories import services
from memories.term_counts import word_counts
from review.cloze import GAP, cloze, content_words, gap_count
from review.selectors import card_front


def test_numbers_and_dates_go_first_then_names():
    assert cloze("Ada Lovelace wrote the first program in 1843.").answers == ["1843"]
    assert cloze("Call mom every Sunday at 18:00").answers == ["18:00"]
    assert cloze("The meeting moved to 2024-05-01 in Oslo").answers == ["2024-05-01"]
    assert cloze("My sister lives in Oslo with her dog").answers == ["Oslo"]


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("The temple is quiet before 7am on weekdays.", "7am"),
        ("The trail climbs 5km through cedar forest.", "5km"),
        ("Grunge peaked in the 1990s around Seattle.", "1990s"),
        ("Only 40% of the seeds sprouted this spring.", "40%"),
    ],
)
def test_a_number_is_hidden_with_the_unit_written_against_it(text, hidden):
    made = cloze(text)
    assert made is not None
    assert hidden in [segment.text for segment in made.segments if segment.gap]
    assert GAP + hidden[-1] not in made.front and GAP + "am" not in made.front


def test_a_name_of_several_words_is_one_gap_without_the_article_before_it():
    made = cloze("The user moved with family to New York last winter")
    assert made.answers == ["New York"]
    assert made.front == f"The user moved with family to {GAP} last winter"
    # A capitalised opener belongs to the name it starts; "The" never does.
    assert cloze("Ada Lovelace was a mathematician").answers == ["Ada Lovelace"]
    assert cloze("The Beatles formed in Liverpool").answers == ["Liverpool"]


def test_without_numbers_or_names_the_rarest_word_is_hidden_and_stopwords_never():
    text = "prefers green tea in the morning"
    counts = {"prefers": 9, "green": 4, "tea": 1, "morning": 12}
    assert cloze(text, counts).answers == ["tea"]
    # Without counts, the longest content word.
    assert cloze(text).answers == ["prefers"]
    assert cloze("it is what it is") is None  # nothing worth hiding: the first line
    assert "don't" not in content_words("I don't eat meat")


@pytest.mark.parametrize(
    ("words", "gaps"), [(0, 0), (1, 1), (2, 1), (8, 1), (9, 2), (20, 2), (21, 3), (60, 3)]
)
def test_one_to_three_gaps_by_length_never_more_than_half(words, gaps):
    assert gap_count(words) == gaps


def test_a_long_memory_gets_three_gaps_and_the_back_marks_them_in_place():
    text = (
        "In 1969 Neil Armstrong walked on the Moon during Apollo 11, watched by 650 million "
        "people; the lunar module Eagle landed in the Sea of Tranquility after a long and tense "
        "descent "
        "with alarms."
    )
    made = cloze(text)
    assert made.answers == ["1969", "11", "650"]
    assert "".join(s.text for s in made.segments) == text  # the back is the whole memory
    assert made.front.count(GAP) == 3 and "1969" not in made.front


def test_the_choice_is_stable_for_the_same_text_and_counts():
    text = "Uses vim keybindings everywhere and dislikes emacs strongly"
    counts = {"vim": 3, "keybindings": 1, "everywhere": 7, "dislikes": 2, "emacs": 1}
    assert cloze(text, counts) == cloze(text, dict(reversed(counts.items())))


@pytest.mark.django_db
def test_word_counts_are_the_namespaces_and_capped(user):
    mine = services.namespace_create(owner=user, name="Mine")
    other = services.namespace_create(owner=user, name="Other")
    for i in range(4):
        services.memory_create(namespace=mine, content=f"teal kettle number {i}")
    services.memory_create(namespace=mine, content="the saffron kettle")
    for i in range(3):
        services.memory_create(namespace=other, content=f"saffron rice {i}")
    assert word_counts(mine.pk, ["kettle", "saffron", "teal", "absent"]) == {
        "kettle": 5,
        "saffron": 1,
        "teal": 4,
        "absent": 0,
    }
    assert word_counts(mine.pk, ["kettle"], cap=2) == {"kettle": 2}
    assert word_counts(mine.pk, []) == {}


@pytest.mark.django_db
def test_a_cloze_front_hides_the_namespaces_rarest_word(user):
    namespace = services.namespace_create(owner=user, name="Tea")
    for drink in ("coffee", "cocoa", "water"):
        services.memory_create(namespace=namespace, content=f"prefers {drink} in the morning")
    memory = services.memory_create(namespace=namespace, content="prefers jasmine tea mornings")
    front = card_front(memory, namespace)
    assert (front.kind, front.answers) == ("cloze", ["jasmine"])
    assert front.question == f"prefers {GAP} tea mornings"
