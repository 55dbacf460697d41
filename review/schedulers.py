"""Two interchangeable review schedulers, SM-2 (seeds 000 and 004) and FSRS, over one card state.

Both read and write CardState, so a deck can switch algorithm without a migration: the
SM-2 fields stay meaningful under FSRS (next_review, interval_days, repetitions) and FSRS
keeps its own memory model in the JSON-safe `fsrs` dict.
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import fsrs

from memories.decay import require_finite
from review import sm2
from review.sm2 import Button, SM2Config, SM2State

logger = logging.getLogger(__name__)

# FSRS-6's parameter vector, as fsrs 6.x takes it: 21 numbers, each within fsrs's bounds.
FSRS_DEFAULT_PARAMETERS: tuple[float, ...] = tuple(fsrs.scheduler.DEFAULT_PARAMETERS)
FSRS_PARAMETER_BOUNDS: tuple[tuple[float, float], ...] = tuple(
    zip(fsrs.scheduler.LOWER_BOUNDS_PARAMETERS, fsrs.scheduler.UPPER_BOUNDS_PARAMETERS, strict=True)
)
# 0-2 are all failures in SM-2; FSRS has one failing rating.
_RATING_FOR_QUALITY = {
    0: fsrs.Rating.Again,
    1: fsrs.Rating.Again,
    2: fsrs.Rating.Again,
    3: fsrs.Rating.Hard,
    4: fsrs.Rating.Good,
    5: fsrs.Rating.Easy,
}


def fsrs_rating(quality: int) -> int:
    """The FSRS rating (1 Again, 2 Hard, 3 Good, 4 Easy) of a 0-5 grade."""
    return int(_RATING_FOR_QUALITY[sm2.validate_quality(quality)])


def fsrs_parameters_problem(values: Any) -> str | None:
    """Why `values` is not an FSRS-6 parameter vector fsrs 6.x accepts, or None if it is:
    a list of 21 finite numbers, each within fsrs's bounds."""
    count = len(FSRS_DEFAULT_PARAMETERS)
    if not isinstance(values, list | tuple):
        return f"expected a list of {count} numbers, got {type(values).__name__}"
    if len(values) != count:
        return f"expected {count} parameters, got {len(values)}"
    for index, (value, (low, high)) in enumerate(zip(values, FSRS_PARAMETER_BOUNDS, strict=True)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"parameter {index} is not a number: {value!r}"
        if not math.isfinite(value):
            return f"parameter {index} is not finite: {value!r}"
        if not low <= value <= high:
            return f"parameter {index} = {value} is outside fsrs's bounds [{low}, {high}]"
    return None


# A stored FSRS memory state's bounds: fsrs's own floor for stability (days) and a ceiling
# far above any reachable value (fsrs caps intervals at 36,500 days); its difficulty scale.
FSRS_STABILITY_BOUNDS = (float(fsrs.scheduler.STABILITY_MIN), 1e9)
FSRS_DIFFICULTY_BOUNDS = (1.0, 10.0)
_FSRS_KEYS = ("stability", "difficulty", "state", "step", "due", "last_review")


def _number_in(value: Any, low: float, high: float) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and low <= value <= high
    )


def _aware_iso(value: Any) -> bool:
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return moment.tzinfo is not None and moment.utcoffset() is not None


def fsrs_state_problem(data: Any) -> tuple[str, str] | None:
    """(key, what is wrong) when `data` is not an FSRS state fsrs 6 can read back (as
    _card_to_dict writes it), else None. fsrs itself fails on such a state with
    ZeroDivisionError, complex numbers or assertions; the import refuses it by this rule, and
    a read that meets one anyway (written by an older version, or by hand) does not fail:
    _to_card treats the card as SM-2's."""
    if not isinstance(data, dict):
        return "fsrs_state", "Must be an object."
    for key in _FSRS_KEYS:
        if key not in data:
            return key, "This field is required."
    state = data["state"]
    if isinstance(state, bool) or state not in (1, 2, 3):
        return "state", "Must be 1 (learning), 2 (review) or 3 (relearning)."
    for key, (low, high) in (
        ("stability", FSRS_STABILITY_BOUNDS),
        ("difficulty", FSRS_DIFFICULTY_BOUNDS),
    ):
        value = data[key]
        if value is None:
            if state != fsrs.State.Learning:
                return key, "Required once a card has been reviewed (state 2 or 3)."
        elif not _number_in(value, low, high):
            return key, f"Must be a number between {low:g} and {high:g}."
    if (data["stability"] is None) != (data["difficulty"] is None):
        return "difficulty", "Stability and difficulty are both set or both null."
    step = data["step"]
    if step is None:
        if state != fsrs.State.Review:
            return "step", "Required in learning and relearning (state 1 or 3)."
    elif isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return "step", "Must be a whole number, 0 or more."
    if not _aware_iso(data["due"]):
        return "due", "Must be an ISO 8601 datetime with its offset."
    if data["last_review"] is not None and not _aware_iso(data["last_review"]):
        return "last_review", "Must be an ISO 8601 datetime with its offset, or null."
    return None


@dataclass(frozen=True)
class CardState:
    """Scheduling state of one card, whichever scheduler writes it."""

    easiness: float = sm2.INITIAL_EASINESS
    interval_days: int = 0
    repetitions: int = 0
    next_review: datetime | None = None
    last_quality: int | None = None
    last_reviewed_at: datetime | None = None
    fsrs: dict[str, Any] | None = field(default=None, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (datetimes as ISO 8601 strings)."""
        return {
            "easiness": self.easiness,
            "interval_days": self.interval_days,
            "repetitions": self.repetitions,
            "next_review": _iso(self.next_review),
            "last_quality": self.last_quality,
            "last_reviewed_at": _iso(self.last_reviewed_at),
            "fsrs": dict(self.fsrs) if self.fsrs is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CardState:
        """Inverse of to_dict; missing keys take their defaults."""
        return cls(
            easiness=float(data.get("easiness", sm2.INITIAL_EASINESS)),
            interval_days=int(data.get("interval_days", 0)),
            repetitions=int(data.get("repetitions", 0)),
            next_review=_parse(data.get("next_review")),
            last_quality=data.get("last_quality"),
            last_reviewed_at=_parse(data.get("last_reviewed_at")),
            fsrs=dict(data["fsrs"]) if data.get("fsrs") is not None else None,
        )


class Scheduler(Protocol):
    """What the review services need from a scheduling algorithm."""

    name: str

    def initial_state(self) -> CardState: ...

    def grade(self, state: CardState, quality: int, *, now: datetime) -> CardState: ...

    def is_due(self, state: CardState, now: datetime) -> bool: ...

    def priority(self, state: CardState, now: datetime) -> float: ...

    def preview(self, state: CardState, *, now: datetime) -> dict[Button, timedelta]: ...


class SM2Scheduler:
    """SM-2 as implemented in review.sm2."""

    name = "sm2"

    def __init__(self, config: SM2Config | None = None) -> None:
        self.config = config or SM2Config()

    def initial_state(self) -> CardState:
        return CardState()

    def grade(self, state: CardState, quality: int, *, now: datetime) -> CardState:
        updated = sm2.sm2_update(_to_sm2(state), quality, now=now, config=self.config)
        return CardState(
            easiness=updated.easiness,
            interval_days=updated.interval_days,
            repetitions=updated.repetitions,
            next_review=updated.next_review,
            last_quality=updated.last_quality,
            last_reviewed_at=now,
            fsrs=state.fsrs,
        )

    def is_due(self, state: CardState, now: datetime) -> bool:
        return _is_due(state, now)

    def priority(self, state: CardState, now: datetime) -> float:
        return sm2.priority_score(_to_sm2(state), now, config=self.config)

    def preview(self, state: CardState, *, now: datetime) -> dict[Button, timedelta]:
        days = sm2.preview_intervals(_to_sm2(state), now=now, config=self.config)
        return {button: timedelta(days=n) for button, n in days.items()}


class FSRSScheduler:
    """FSRS through the `fsrs` package; fuzzing is off by default so runs are reproducible.

    `parameters`: a fitted FSRS-6 vector (review.optimizer), None for fsrs's defaults. They
    are usually read from a namespace row, so an unusable vector (wrong length, not finite,
    out of bounds) never makes a read fail: it is logged and the defaults are used, and
    `fitted` says which happened.
    """

    name = "fsrs"

    def __init__(
        self,
        desired_retention: float = 0.9,
        *,
        enable_fuzzing: bool = False,
        parameters: list[float] | tuple[float, ...] | None = None,
    ) -> None:
        # fsrs takes any retention; NaN would only fail later, as an unnamed rounding error.
        if not 0 < require_finite("desired_retention", desired_retention) < 1:
            raise ValueError(f"desired_retention must be between 0 and 1, got {desired_retention}")
        self.parameters = FSRS_DEFAULT_PARAMETERS
        if parameters is not None:
            problem = fsrs_parameters_problem(parameters)
            if problem is None:
                self.parameters = tuple(float(value) for value in parameters)
            else:
                logger.warning("Unusable FSRS parameters (%s); using the defaults", problem)
        self.fitted = self.parameters != FSRS_DEFAULT_PARAMETERS
        self._scheduler = fsrs.Scheduler(
            parameters=self.parameters,
            desired_retention=desired_retention,
            enable_fuzzing=enable_fuzzing,
        )

    def initial_state(self) -> CardState:
        return CardState()

    def grade(self, state: CardState, quality: int, *, now: datetime) -> CardState:
        """Review the FSRS card; SM-2 fields are kept in step (repetitions reset on failure)."""
        quality = sm2.validate_quality(quality)
        now_utc = _utc(now)
        card = self._review(_to_card(state, now_utc), _RATING_FOR_QUALITY[quality], now_utc)
        passed = quality >= sm2.PASSING_QUALITY
        return CardState(
            easiness=state.easiness,
            interval_days=math.ceil((card.due - now_utc) / timedelta(days=1)),
            repetitions=state.repetitions + 1 if passed else 0,
            next_review=card.due,
            last_quality=quality,
            last_reviewed_at=now,
            fsrs=_card_to_dict(card),
        )

    def is_due(self, state: CardState, now: datetime) -> bool:
        return _is_due(state, now)

    def priority(self, state: CardState, now: datetime) -> float:
        """1 - FSRS retrievability now: the likelier it is forgotten, the more urgent.

        A card never reviewed has retrievability 0, hence priority 1.0 (it is not due, so
        due-card queues never see it).
        """
        now_utc = _utc(now)
        retrievability = self._scheduler.get_card_retrievability(
            _to_card(state, now_utc), current_datetime=now_utc
        )
        return min(1.0, max(0.0, 1.0 - retrievability))

    def preview(self, state: CardState, *, now: datetime) -> dict[Button, timedelta]:
        now_utc = _utc(now)
        card = _to_card(state, now_utc)
        preview = {}
        for button in Button:
            reviewed = self._review(card, _RATING_FOR_QUALITY[int(button)], now_utc)
            preview[button] = reviewed.due - now_utc
        return preview

    def _review(self, card: fsrs.Card, rating: fsrs.Rating, now_utc: datetime) -> fsrs.Card:
        """fsrs's review, its due date held at sm2.LATEST_DUE as SM-2's is.

        fsrs adds up to maximum_interval days to `now` itself, which overflows near the
        end of the calendar, so the cap shrinks to the days left before LATEST_DUE.
        """
        scheduler = self._scheduler
        days_left = (sm2.due_after(now_utc, scheduler.maximum_interval) - now_utc).days
        if days_left < scheduler.maximum_interval:
            scheduler = copy.copy(scheduler)
            scheduler.maximum_interval = max(1, days_left)
        reviewed, _log = scheduler.review_card(card, rating, review_datetime=now_utc)
        if reviewed.due > sm2.LATEST_DUE:
            # A one-day interval or a learning step from the last day of the calendar.
            reviewed.due = sm2.LATEST_DUE
        return reviewed


def get_scheduler(
    name: str,
    *,
    sm2_config: SM2Config | None = None,
    desired_retention: float = 0.9,
    fsrs_parameters: list[float] | tuple[float, ...] | None = None,
) -> Scheduler:
    """Scheduler by name: "sm2" or "fsrs" (with `fsrs_parameters`, None for the defaults)."""
    if name == SM2Scheduler.name:
        return SM2Scheduler(sm2_config)
    if name == FSRSScheduler.name:
        return FSRSScheduler(desired_retention, parameters=fsrs_parameters)
    raise ValueError(f"unknown scheduler {name!r}; expected 'sm2' or 'fsrs'")


def _is_due(state: CardState, now: datetime) -> bool:
    """Due once next_review has passed; a card never graded (None) is new, not due."""
    return state.next_review is not None and state.next_review <= now


def _to_sm2(state: CardState) -> SM2State:
    return SM2State(
        easiness=state.easiness,
        interval_days=state.interval_days,
        repetitions=state.repetitions,
        next_review=state.next_review,
        last_quality=state.last_quality,
    )


def _utc(moment: datetime) -> datetime:
    """fsrs insists on UTC-aware datetimes; a naive one has no defined instant."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("datetimes must be timezone-aware")
    return moment.astimezone(UTC)


def _to_card(state: CardState, now_utc: datetime) -> fsrs.Card:
    # card_id is fixed: fsrs would otherwise read the clock (and sleep) to invent one.
    data = state.fsrs
    if data is None:
        return _from_sm2(state, now_utc)
    problem = fsrs_state_problem(data)
    if problem is not None:
        # Stored data never makes a read fail: the card is read as its SM-2 fields say.
        logger.warning("Unusable FSRS state (%s: %s); reading the card's SM-2 fields", *problem)
        return _from_sm2(state, now_utc)
    return fsrs.Card(
        card_id=0,
        state=fsrs.State(int(data["state"])),
        step=data["step"],
        stability=data["stability"],
        difficulty=data["difficulty"],
        due=_utc(datetime.fromisoformat(data["due"])),
        last_review=_utc(datetime.fromisoformat(data["last_review"]))
        if data["last_review"]
        else None,
    )


def _from_sm2(state: CardState, now_utc: datetime) -> fsrs.Card:
    """An FSRS card for a card with no FSRS state: new if it was never graded; else, for a
    card SM-2 scheduled (a namespace switched to FSRS), a card in review whose stability is
    its last interval (SM-2 set the interval at about the retention FSRS aims at, 90 %) and
    whose difficulty follows its easiness (2.5, SM-2's start, is FSRS's middle, 5; 1.3, its
    floor, is 10), due when SM-2 said. Switching keeps what was learned: a card fifteen days
    apart is not asked again in ten minutes."""
    if state.last_reviewed_at is None or state.next_review is None:
        return fsrs.Card(card_id=0, due=now_utc)
    low, high = FSRS_DIFFICULTY_BOUNDS
    difficulty = min(high, max(low, 5.0 + (sm2.INITIAL_EASINESS - state.easiness) * 5.0 / 1.2))
    return fsrs.Card(
        card_id=0,
        state=fsrs.State.Review,
        step=None,
        stability=max(float(state.interval_days), 1.0),
        difficulty=difficulty,
        due=_utc(state.next_review),
        last_review=_utc(state.last_reviewed_at),
    )


def _card_to_dict(card: fsrs.Card) -> dict[str, Any]:
    return {
        "stability": card.stability,
        "difficulty": card.difficulty,
        "state": int(card.state),
        "step": card.step,
        "due": card.due.isoformat(),
        "last_review": _iso(card.last_review),
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None
