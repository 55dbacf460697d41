"""Grade histories for the scheduling properties, long enough to reach the far states.

Hypothesis keeps a plain st.lists short (a handful of elements on average, whatever its
max_size), and random 0-5 grades fail half the time, so a plain list of grades stays near
a new card. A history here is one to three blocks of 1 to BLOCK_SIZE grades, each block's
length drawn first: any grades, passes only, or one grade repeated. That reaches the
easiness floor (repeated failures), a ceiling of 4.0 (27 fives in a row from the floor),
the interval cap (12 passes in a row at EF 2.5, about 36 at 1.3) and failures after it.
"""

from __future__ import annotations

from hypothesis import strategies as st

BLOCK_SIZE = 100
MAX_BLOCKS = 3
ANY_GRADE = st.integers(min_value=0, max_value=5)
PASSING_GRADE = st.integers(min_value=3, max_value=5)
BLOCK_LENGTH = st.integers(min_value=1, max_value=BLOCK_SIZE)


def _block(grade: st.SearchStrategy[int]) -> st.SearchStrategy[list[int]]:
    return BLOCK_LENGTH.flatmap(lambda n: st.lists(grade, min_size=n, max_size=n))


def _repeated() -> st.SearchStrategy[list[int]]:
    # 5 half the time: only long runs of 5 lift easiness to a high ceiling.
    grade = st.one_of(st.just(5), ANY_GRADE)
    return st.tuples(grade, BLOCK_LENGTH).map(lambda pair: [pair[0]] * pair[1])


def grade_histories() -> st.SearchStrategy[list[int]]:
    """1 to MAX_BLOCKS * BLOCK_SIZE grades (0-5) in blocks: any grades, passes, one repeated."""
    block = st.one_of(_block(ANY_GRADE), _block(PASSING_GRADE), _repeated())
    return st.lists(block, min_size=1, max_size=MAX_BLOCKS).map(
        lambda blocks: [grade for grades in blocks for grade in grades]
    )


def timed_histories(
    when: st.SearchStrategy[float | None],
) -> st.SearchStrategy[list[tuple[int, float | None]]]:
    """A grade history with a `when` drawn for each grade (its delay, as the test reads it)."""
    return grade_histories().flatmap(
        lambda grades: st.lists(when, min_size=len(grades), max_size=len(grades)).map(
            lambda delays: list(zip(grades, delays, strict=True))
        )
    )
