"""Writes to review state, one module per concept; every public name is re-exported here.

errors: the domain errors. cards: card creation. decks: deck options. grading: card_grade,
its undo, implicit grades. sessions: study sessions. cram: cram sessions. optimize: FSRS
parameters fitted to a namespace's reviews. Each imports only those before it in that list
(cards, decks and errors import none but errors), so the package has no import cycle.
"""

from __future__ import annotations

from review.services.cards import (
    card_create_for_new_memory,
    card_ensure,
    card_reschedule_now,
    cards_bury,
    cards_create_for_namespace,
    cards_create_for_new_memories,
    cards_suspend,
    cards_unbury,
    cards_unsuspend,
)
from review.services.cram import (
    CRAM_MAX_CARDS,
    cram_answer,
    cram_finish,
    cram_start,
)
from review.services.decks import MAX_NEW_CARDS_PER_DAY, deck_options_set
from review.services.errors import (
    AlreadyAnswered,
    CardNotInSession,
    GradeConflict,
    InvalidGrade,
    InvalidRequest,
    NothingToUndo,
    ReviewError,
    SessionFinished,
)
from review.services.grading import (
    Grade,
    ImplicitReviewSettings,
    card_grade,
    card_grade_implicit,
    card_undo,
    cards_grade_implicit,
    grade_quality,
    implicit_review_settings,
)
from review.services.optimize import (
    OPTIMIZE_IN_REQUEST_MAX_REVIEWS,
    NotEnoughReviews,
    OptimizeFailed,
    OptimizeOutcome,
    fit_pending,
    namespace_fsrs_reset,
    namespace_optimize,
    optimize_reviews,
)
from review.services.sessions import (
    DEFAULT_SESSION_LIMIT,
    SESSION_PASS_QUALITY,
    study_session_begin,
    study_session_finish,
    study_session_grade,
    study_session_open,
    study_session_set_aside,
    study_session_start,
)

__all__ = [
    "CRAM_MAX_CARDS",
    "DEFAULT_SESSION_LIMIT",
    "MAX_NEW_CARDS_PER_DAY",
    "OPTIMIZE_IN_REQUEST_MAX_REVIEWS",
    "SESSION_PASS_QUALITY",
    "AlreadyAnswered",
    "CardNotInSession",
    "Grade",
    "GradeConflict",
    "ImplicitReviewSettings",
    "InvalidGrade",
    "InvalidRequest",
    "NotEnoughReviews",
    "NothingToUndo",
    "OptimizeFailed",
    "OptimizeOutcome",
    "ReviewError",
    "SessionFinished",
    "card_create_for_new_memory",
    "card_ensure",
    "card_grade",
    "card_grade_implicit",
    "card_reschedule_now",
    "card_undo",
    "cards_bury",
    "cards_create_for_namespace",
    "cards_create_for_new_memories",
    "cards_grade_implicit",
    "cards_suspend",
    "cards_unbury",
    "cards_unsuspend",
    "cram_answer",
    "cram_finish",
    "cram_start",
    "deck_options_set",
    "fit_pending",
    "grade_quality",
    "implicit_review_settings",
    "namespace_fsrs_reset",
    "namespace_optimize",
    "optimize_reviews",
    "study_session_begin",
    "study_session_finish",
    "study_session_grade",
    "study_session_open",
    "study_session_set_aside",
    "study_session_start",
]
