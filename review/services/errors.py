"""Review's domain errors: a rule said no, and the API maps each to one 4xx answer."""

from __future__ import annotations


class ReviewError(Exception):
    """A review rule said no; `code` and `field` let the API map it to a 4xx answer.

    `field` is the name of the request field at fault, as clients send it (`cards`, not
    the keyword `card_ids`), or None when the fault is the object in the URL (the session,
    the card to undo) or something no request sets.
    """

    code = "review_error"
    api_status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidGrade(ReviewError):
    """The grade is not 0-5 nor one of Again/Hard/Good/Easy."""

    code = "invalid_grade"


class InvalidRequest(ReviewError):
    """Some other input is wrong: unknown source, cards from another namespace, wrong mode."""

    code = "invalid"


class GradeConflict(ReviewError):
    """The card changed since the caller read it; reload it and grade again."""

    code = "grade_conflict"
    api_status = 409


class NothingToUndo(ReviewError):
    """The card has no grade that is still its latest change."""

    code = "nothing_to_undo"
    api_status = 409


class SessionFinished(ReviewError):
    """The session is over; start a new one."""

    code = "session_finished"
    api_status = 409


class CardNotInSession(ReviewError):
    """The card is not part of that session."""

    code = "card_not_in_session"


class AlreadyAnswered(ReviewError):
    """The card is already done in that session."""

    code = "already_answered"
    api_status = 409
