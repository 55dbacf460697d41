"""Dashboard forms for studying and cramming. They only parse the request: grades, session
rules and card scopes are checked by review.services, whose errors the views show."""

from __future__ import annotations

from django import forms


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
