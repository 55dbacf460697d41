"""Dashboard forms for studying and cramming. They only parse the request: grades, session
rules and card scopes are checked by review.services, whose errors the views show."""

from __future__ import annotations

from typing import Any

from django import forms

from memories.forms import DashboardForm
from review.services import MAX_NEW_CARDS_PER_DAY, ReviewError


class StartForm(forms.Form):
    """Which namespace to study or cram, and optionally one deck of it.

    The deck field absent means every deck; present and empty is the "(no topic)" deck, a
    real deck, so the view tells the two apart with `deck in request.POST`.
    """

    namespace = forms.SlugField(max_length=100)
    deck = forms.CharField(required=False, strip=False, max_length=100)


class GradeForm(forms.Form):
    """One grade of one card in a study session, with the card version the page showed."""

    card = forms.IntegerField(min_value=1)
    # again/hard/good/easy or 0-5: review.services.grade_quality decides what is valid.
    grade = forms.CharField(max_length=10)
    version = forms.IntegerField(min_value=0, required=False)
    # When the page showed the card (epoch ms): the answer time runs from it.
    shown_at = forms.IntegerField(min_value=0, required=False)


class CramAnswerForm(forms.Form):
    """Correct or incorrect for one card of a cram session."""

    card = forms.IntegerField(min_value=1)
    correct = forms.TypedChoiceField(
        choices=[("1", "Correct"), ("0", "Incorrect")], coerce=lambda value: value == "1"
    )


class DeckLimitForm(DashboardForm):
    """One deck's new cards per day on the deck options page: the deck (a topic, "" the
    "(no topic)" deck) and a whole number or empty (inherit the namespace's). It only parses
    the number; review.services.deck_options_set checks the range and the deck, and its
    refusal is put on the field. One form per row, each with its own ids."""

    deck = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    new_cards_per_day = forms.IntegerField(
        required=False,
        label="New cards per day",
        error_messages={
            "invalid": (
                "Not a whole number. New cards per day is a whole number from 0 to "
                f"{MAX_NEW_CARDS_PER_DAY}, or empty to use the namespace's."
            )
        },
        widget=forms.NumberInput(
            # The service's range, as hints for the browser (the service decides).
            attrs={
                "min": 0,
                "max": MAX_NEW_CARDS_PER_DAY,
                "inputmode": "numeric",
                "class": "limit-input",
            }
        ),
    )

    def __init__(self, *args: Any, default: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["new_cards_per_day"].widget.attrs["placeholder"] = f"{default} (namespace)"

    def add_review_error(self, error: ReviewError) -> None:
        """A service's refusal on the field it names (else the form's own)."""
        self.add_error(error.field if error.field in self.fields else None, error.message)
