"""Reads for review, one module per concept; every public name is re-exported here.

cards: a card's scheduler and state. fronts: what a card asks. queue: the daily queue and
the local day. statistics: deck overviews and statistics. sessions: study and cram
sessions. Each imports only those before it in that list, so the package has no import
cycle.
"""

from __future__ import annotations

from review.selectors.cards import (
    card_cue,
    card_state,
    scheduler_for,
    sm2_config,
)
from review.selectors.fronts import Front, card_front
from review.selectors.queue import (
    DEFAULT_QUEUE_LIMIT,
    QUEUE_WINDOW_FACTOR,
    QueueItem,
    ReviewQueue,
    due_cards,
    local_day_bounds,
    new_card_limits,
    new_cards_for_today,
    new_cards_introduced_today,
    review_queue,
)
from review.selectors.sessions import (
    AnswerTime,
    CramScore,
    Score,
    SessionProgress,
    cram_score,
    session_answer_time,
    session_items,
    study_session_active,
    study_session_first_grades,
    study_session_progress,
    study_sessions_resumable,
    study_sessions_visible,
)
from review.selectors.statistics import (
    AGENT_SOURCES,
    FORECAST_DAYS,
    LEARNED_REPETITIONS,
    PERSON_SOURCE,
    RETENTION_RECENT_DAYS,
    REVIEWS_PER_DAY_DAYS,
    AgentReinforcement,
    DeckStats,
    ReviewStats,
    counted_logs,
    deck_statistics,
    review_statistics,
)

__all__ = [
    "AGENT_SOURCES",
    "DEFAULT_QUEUE_LIMIT",
    "FORECAST_DAYS",
    "LEARNED_REPETITIONS",
    "PERSON_SOURCE",
    "QUEUE_WINDOW_FACTOR",
    "RETENTION_RECENT_DAYS",
    "REVIEWS_PER_DAY_DAYS",
    "AgentReinforcement",
    "AnswerTime",
    "CramScore",
    "DeckStats",
    "Front",
    "QueueItem",
    "ReviewQueue",
    "ReviewStats",
    "Score",
    "SessionProgress",
    "card_cue",
    "card_front",
    "card_state",
    "counted_logs",
    "cram_score",
    "deck_statistics",
    "due_cards",
    "local_day_bounds",
    "new_card_limits",
    "new_cards_for_today",
    "new_cards_introduced_today",
    "review_queue",
    "review_statistics",
    "scheduler_for",
    "session_answer_time",
    "session_items",
    "sm2_config",
    "study_session_active",
    "study_session_first_grades",
    "study_session_progress",
    "study_sessions_resumable",
    "study_sessions_visible",
]
