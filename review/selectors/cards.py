"""One card as the services and pages read it: its scheduler, its scheduler-facing state and
its cue."""

from __future__ import annotations

from django.conf import settings

from memories.models import Memory, Namespace
from review.models import Card
from review.schedulers import CardState, Scheduler, fsrs_parameters_problem, get_scheduler
from review.sm2 import SM2Config


def sm2_config(*, modifiers: bool = False) -> SM2Config:
    """SM-2 bounds from settings, read here so the pure module never reads settings;
    `modifiers`: the namespace's choice of Anki's Hard and Easy (Namespace.sm2_modifiers)."""
    return SM2Config(
        ef_ceiling=settings.SM2_EF_CEILING,
        ef_on_failure=settings.SM2_EF_ON_FAILURE,
        max_interval_days=settings.SM2_MAX_INTERVAL_DAYS,
        modifiers=modifiers,
    )


def scheduler_for(namespace: Namespace) -> Scheduler:
    """The scheduler that grades this namespace's cards (SM-2 unless it chose FSRS), FSRS
    with the parameters fitted to the namespace's reviews once it has some (review.optimizer)."""
    return get_scheduler(
        namespace.scheduler,
        sm2_config=sm2_config(modifiers=namespace.sm2_modifiers),
        desired_retention=namespace.desired_retention,
        fsrs_parameters=namespace.fsrs_parameters,
    )


def card_cue(memory: Memory) -> str:
    """What a review card asks: the memory's own cue, else its topic and first line."""
    if memory.cue.strip():
        return memory.cue.strip()
    text = memory.content.strip()
    first_line = text.splitlines()[0][:120] if text else ""
    return f"{memory.topic}: {first_line}" if memory.topic else first_line


def card_state(card: Card) -> CardState:
    """The scheduler-facing state of a Card row."""
    return CardState(
        easiness=card.easiness,
        interval_days=card.interval_days,
        repetitions=card.repetitions,
        next_review=card.next_review,
        last_quality=card.last_quality,
        last_reviewed_at=card.last_reviewed_at,
        fsrs=card.fsrs_state,
    )


def fsrs_parameters_in_use(namespace: Namespace) -> list[float] | None:
    """The fitted FSRS parameters the namespace schedules with; None: fsrs's defaults
    (never fitted, reset, or a stored vector FSRSScheduler would not use)."""
    parameters = namespace.fsrs_parameters
    if parameters is None or fsrs_parameters_problem(parameters) is not None:
        return None
    return [float(value) for value in parameters]
