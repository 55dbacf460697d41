"""Dashboard forms for memories, namespaces and tokens.

Fields come from the models (fields_for_model), so choices, lengths and formats are the
models' own; the rules (ranges, required reasons, unique slugs, token scopes) are checked
once, by the services, whose ValidationError is put back on the form with
add_service_errors.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.forms.models import fields_for_model
from django.utils import timezone
from rest_framework import serializers

from config.serializers import INT64_MAX
from memories import substring
from memories.models import (
    SESSION_ID_LENGTH,
    WEBHOOK_EVENTS,
    ApiToken,
    Classification,
    Memory,
    Namespace,
)
from memories.selectors import SESSION_ORDER
from memories.serializers import validate_memory_input
from memories.services import (
    BULK_ACTION_MAX,
    EDITABLE_FIELDS,
    NAMESPACE_EDITABLE_FIELDS,
    bulk_action_choices,
)

DATETIME_LOCAL = "%Y-%m-%dT%H:%M"


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format=DATETIME_LOCAL, **kwargs)


class DashboardForm(forms.Form):
    """A form whose labels have no trailing colon (the dashboard's style)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def add_error(self, field: str | None, error: Any) -> None:
        """Every error, the form's own or a service's, moves the autofocus to the first
        field at fault, on every page (an error below the fold was shown with the focus
        left on the page itself)."""
        super().add_error(field, error)
        self.focus_first_error()

    def error_summary(self) -> list[tuple[str, str, str]]:
        """(label, field id, message) for every error, non-field ones first with no label:
        what a summary above a region that htmx swaps shows (the fields themselves are not
        swapped), by the labels a person sees and linked to the fields."""
        rows = [("", "", str(message)) for message in self.non_field_errors()]
        for name, errors in self.errors.items():
            if name in self.fields:
                bound = self[name]
                label = str(bound.label or name)
                rows += [(label, bound.id_for_label, str(message)) for message in errors]
        return rows

    def focus_first_error(self, default: str | None = None) -> None:
        """Autofocus the first field with an error (else `default`): the page that shows the
        errors (or the section htmx swaps in) puts a keyboard user on the mistake. Only that
        field: a field declared with autofocus would otherwise win, being first."""
        first = next((name for name in self.fields if name in self.errors), default)
        if first is None:
            return
        for field in self.fields.values():
            field.widget.attrs.pop("autofocus", None)
        self.fields[first].widget.attrs["autofocus"] = True


class NamespaceChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Namespace) -> str:
        return obj.name


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Show a service's ValidationError on the form: on the named field when the form has
    it, otherwise at the top, after the field's name in words. The services speak the API's
    field names ("Must not be before valid_from."); a page says the labels a person sees."""
    if hasattr(error, "error_dict"):
        for field, messages in error.message_dict.items():
            messages = [in_labels(form, message) for message in messages]
            if field in form.fields:
                form.add_error(field, messages)
            elif field == NON_FIELD_ERRORS:
                form.add_error(None, messages)
            else:
                form.add_error(None, [f"{_label(form, field)}: {m}" for m in messages])
    else:
        form.add_error(None, [in_labels(form, message) for message in error.messages])


_FIELD_NAME = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


def _label(form: forms.Form, name: str) -> str:
    field = form.fields.get(name)
    label = field.label if field is not None and field.label else name.replace("_", " ")
    return str(label)[:1].upper() + str(label)[1:]


def in_labels(form: forms.Form, message: str) -> str:
    """`message` with every API field name in it (snake_case words) put as its label, quoted."""
    return _FIELD_NAME.sub(lambda m: f"“{_label(form, m.group())}”", str(message))


def _model_fields(model, names: tuple[str, ...]) -> dict[str, forms.Field]:
    widgets = {}
    for name in names:
        field = model._meta.get_field(name)
        if field.get_internal_type() == "DateTimeField":
            widgets[name] = DateTimeLocalInput()
        elif field.get_internal_type() == "TextField":
            attrs: dict[str, Any] = {"rows": 6}
            if name in ("content", "content_original"):
                # The service's limit, so the browser stops there rather than the page
                # answering with an error that names a setting.
                attrs["maxlength"] = settings.API_MAX_CONTENT_LENGTH
            widgets[name] = forms.Textarea(attrs=attrs)
    fields = fields_for_model(model, fields=list(names), widgets=widgets)
    for name, form_field in fields.items():
        # The model's validators on the form field too (a model field's form field carries
        # only some of them), so every field's mistake is said in the same answer: the
        # service's own check, run only once the form was valid, said the rest a round later.
        if not isinstance(form_field, forms.ChoiceField):  # choices are their own rule
            form_field.validators = [
                *form_field.validators,
                *(
                    v
                    for v in model._meta.get_field(name).validators
                    if v not in form_field.validators
                ),
            ]
        # The model's range, as min and max, so the browser says so before sending (the
        # service still decides: the model's validators are the rule).
        if isinstance(form_field.widget, forms.NumberInput):
            for validator in model._meta.get_field(name).validators:
                if isinstance(validator, MinValueValidator):
                    form_field.widget.attrs.setdefault("min", validator.limit_value)
                elif isinstance(validator, MaxValueValidator):
                    form_field.widget.attrs.setdefault("max", validator.limit_value)
    return fields


class KeywordsField(forms.CharField):
    """Keywords typed as a comma-separated line, handed on as a list of strings."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(value)
        return value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [part.strip() for part in text.split(",") if part.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return list(initial or []) != self.to_python(data)


def _newlines(value: Any) -> Any:
    """Browsers send textarea lines as CRLF; memories keep LF."""
    return value.replace("\r\n", "\n") if isinstance(value, str) else value


# The edit form's fields: the editable ones (memories.services.EDITABLE_FIELDS) but four
# signals the dashboard does not show (the admin edits them); the text, topic, cue and
# keywords first, the source-language text last, the rest in their declared order.
_FORM_FIRST = ("content", "topic", "cue", "keywords")
_FORM_LAST = ("content_original", "language")
_NOT_ON_FORM = frozenset({"emotion_score", "emotion_tags", "relevance_score", "importance_flags"})
MEMORY_FORM_FIELDS = (
    *_FORM_FIRST,
    *(name for name in EDITABLE_FIELDS if name not in {*_FORM_FIRST, *_FORM_LAST, *_NOT_ON_FORM}),
    *_FORM_LAST,
)


class MemoryEditForm(DashboardForm):
    """The editable fields of a memory; the view hands changed_data to memory_update."""

    FIELDS = MEMORY_FORM_FIELDS

    def __init__(self, *args: Any, memory: Memory, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {name: getattr(memory, name) for name in self.FIELDS})
        expires = kwargs["initial"].get("expires_at")
        if expires is not None:
            kwargs["initial"]["expires_at"] = timezone.localtime(expires)
        super().__init__(*args, **kwargs)
        names = tuple(name for name in self.FIELDS if name != "keywords")
        generated = _model_fields(Memory, names)
        generated["keywords"] = KeywordsField(
            required=False, help_text="Separated by commas.", strip=True
        )
        self.fields = {name: generated[name] for name in self.FIELDS}
        self.fields["content_original"].help_text = "The source-language text, if not English."

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name in ("content", "content_original"):
            data[name] = _newlines(data.get(name))
        return data

    def changes(self) -> dict[str, Any]:
        """Only what the person changed, so history records no phantom edits (a field the
        form trimmed of surrounding whitespace, or a CRLF textarea, is not a change)."""
        changed = {}
        for name, value in self.cleaned_data.items():
            if name not in EDITABLE_FIELDS:
                continue
            before = self.initial.get(name)
            if isinstance(before, str) and isinstance(value, str):
                if value == _newlines(before).strip():
                    continue
            elif isinstance(before, datetime) and isinstance(value, datetime):
                # datetime-local inputs carry minutes only.
                if value == before.replace(second=0, microsecond=0):
                    continue
            elif value == before or (value in (None, "") and before in (None, "")):
                continue
            changed[name] = value
        return changed


class ForgetForm(DashboardForm):
    # No required=True: the reason rule lives in memory_forget, and its message shows here.
    reason = forms.CharField(
        required=False,
        # The column's length: the browser stops the typing there instead of the server
        # refusing the whole text after the page is left.
        max_length=Memory._meta.get_field("forgotten_reason").max_length,
        widget=forms.TextInput(attrs={"placeholder": "Why forget it? (for example: outdated)"}),
    )


class SupersedeForm(DashboardForm):
    """The older memory that the memory of the URL replaces (recall's conflict button)."""

    old = forms.IntegerField(min_value=1, max_value=INT64_MAX, label="Memory it replaces")


class SupersededByForm(DashboardForm):
    """The newer memory that replaces the memory of the URL (typed on the memory's page)."""

    new = forms.IntegerField(
        min_value=1,
        max_value=INT64_MAX,
        label="Superseded by memory #",
        widget=forms.NumberInput(attrs={"inputmode": "numeric", "placeholder": "id"}),
    )


NAMESPACE_CREATE_FIELDS = (
    "name",
    "slug",
    *(name for name in NAMESPACE_EDITABLE_FIELDS if name != "name"),
)


DECAY_FIELDS = {
    "decay_half_life_days": "half_life_days",
    "decay_beta": "beta",
    "decay_power_alpha": "power_alpha",
    "decay_fast_half_life_days": "fast_half_life_days",
    "decay_slow_half_life_days": "slow_half_life_days",
    "decay_fast_weight": "fast_weight",
}


def _default_hints(fields: dict[str, forms.Field], mode: str | None) -> None:
    """Empty weight and decay fields mean "the default": show it as the placeholder."""
    defaults = Namespace(mode=mode or Namespace.Mode.PERSONAL)
    decay = Namespace().decay_params()
    for name, attribute in DECAY_FIELDS.items():
        if name in fields:
            fields[name].widget.attrs["placeholder"] = f"{getattr(decay, attribute):g} (default)"
    if "decay_model" in fields:
        fields["decay_model"].choices = [
            ("", f"Default ({decay.model.replace('_', ' ')})"),
            *[c for c in fields["decay_model"].choices if c[0]],
        ]
    for key, value in defaults.ranking_weights().items():
        name = f"weight_{key}"
        if name in fields:
            hint = f"{value:g} (mode default)" if mode else "the mode's default"
            fields[name].widget.attrs["placeholder"] = hint


class NamespaceCreateForm(DashboardForm):
    """Name, optional slug, mode and every setting a namespace has."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields = _model_fields(Namespace, NAMESPACE_CREATE_FIELDS)
        self.fields["slug"].required = False
        self.fields["slug"].help_text = "Used in the API; made from the name when left empty."
        _default_hints(self.fields, None)

    def values(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        if not data.get("slug"):
            data.pop("slug", None)
        return data


class NamespaceSettingsForm(DashboardForm):
    """Everything namespace_update may change."""

    def __init__(self, *args: Any, namespace: Namespace, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial", {name: getattr(namespace, name) for name in NAMESPACE_EDITABLE_FIELDS}
        )
        super().__init__(*args, **kwargs)
        self.fields = _model_fields(Namespace, NAMESPACE_EDITABLE_FIELDS)
        _default_hints(self.fields, namespace.mode)

    def changes(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.changed_data}


class TokenForm(DashboardForm):
    """A new API token: name, namespaces (or all), access, ceiling and an optional expiry."""

    def __init__(self, *args: Any, owner, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        generated = _model_fields(
            ApiToken, ("name", "all_namespaces", "access", "ceiling", "expires_at")
        )
        namespaces = NamespaceChoiceField(
            queryset=Namespace.objects.filter(owner=owner).order_by("name"),
            required=False,
            to_field_name="slug",
            widget=forms.CheckboxSelectMultiple,
            help_text="The namespaces this token may use.",
        )
        generated["expires_at"].help_text = "Leave empty for a token that does not expire."
        self.fields = {
            "name": generated["name"],
            "namespaces": namespaces,
            "all_namespaces": generated["all_namespaces"],
            "access": generated["access"],
            "ceiling": generated["ceiling"],
            "expires_at": generated["expires_at"],
        }

    def values(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data["namespaces"] = list(data.get("namespaces") or [])
        return data


SORTS = {
    "new": ("-created_at", "-id"),
    "old": ("created_at", "id"),
    "used": ("-last_used_at", "-id"),
    "uses": ("-use_count", "-id"),
    "strength": ("-strength", "-id"),
    "utility": ("-utility", "-id"),
    "topic": ("topic", "-created_at", "-id"),
    "turns": SESSION_ORDER,
}
SORT_CHOICES = [
    ("new", "Newest"),
    ("old", "Oldest"),
    ("used", "Recently used"),
    ("uses", "Most used"),
    ("strength", "Strongest"),
    ("utility", "Most useful"),
    ("topic", "Topic"),
    ("turns", "Conversation order"),
]
ANY = [("", "Any")]


class MemoryFilterForm(DashboardForm):
    """The memory list's filters and sort, read from the query string."""

    q = forms.CharField(
        required=False,
        max_length=200,
        label="Text",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words in the memory"}),
    )
    namespace = forms.ChoiceField(required=False)
    topic = forms.CharField(required=False, max_length=100)
    status = forms.ChoiceField(
        required=False,
        choices=[("", "Not forgotten"), *Memory.Status.choices, ("any", "Any status")],
    )
    tier = forms.ChoiceField(required=False, choices=ANY + Memory.Tier.choices)
    memory_type = forms.ChoiceField(
        required=False, choices=ANY + Memory.MemoryType.choices, label="Type"
    )
    classification = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[
            ("", "Any"),
            *((str(v), label) for v, label in Memory._meta.get_field("classification").choices),
        ],
    )
    session_id = forms.CharField(
        required=False,
        max_length=SESSION_ID_LENGTH,
        label="Session",
        help_text="The memories written in one conversation.",
    )
    include_superseded = forms.BooleanField(
        required=False, label="Superseded too", help_text="Facts a newer memory replaced."
    )
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES)

    def __init__(self, *args: Any, namespaces: list[Namespace], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["namespace"].choices = [("", "All namespaces")] + [
            (ns.slug, ns.name) for ns in namespaces
        ]

    def clean_q(self) -> str:
        q = self.cleaned_data["q"]
        if q and substring.too_short(q):  # no index could serve it: a scan of every memory
            raise ValidationError(substring.TOO_SHORT)
        return q

    def filters(self) -> dict[str, Any]:
        """The valid filters only: a bad value in one field does not empty the list."""
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in ("", None)}


class WebhookForm(DashboardForm):
    """A new webhook subscription of a namespace (the services check the URL). Its ids
    are its own: it shares the namespace page with the settings form, which also has a
    description."""

    url = forms.URLField(
        label="URL", max_length=2000, assume_scheme="https", help_text="Where events are POSTed."
    )
    events = forms.MultipleChoiceField(
        choices=[(name, name) for name in WEBHOOK_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        initial=list(WEBHOOK_EVENTS),
        help_text="The events sent to it.",
    )
    ceiling = forms.TypedChoiceField(
        choices=Classification.choices,
        coerce=int,
        initial=Classification.INTERNAL,
        help_text="Nothing above this level is ever sent.",
    )
    description = forms.CharField(max_length=200, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_webhook_%s")
        super().__init__(*args, **kwargs)


def _classification_choices(ceiling: int) -> list[tuple[int, str]]:
    """The levels a caller may write: at or below their ceiling (a memory above it could
    not be read back)."""
    return [(value, label) for value, label in Classification.choices if value <= ceiling]


def _messages(detail: Any) -> list[str]:
    """A DRF error detail (list, dict of item errors, string) as flat messages."""
    if isinstance(detail, dict):
        return [message for value in detail.values() for message in _messages(value)]
    if isinstance(detail, list | tuple):
        return [message for value in detail for message in _messages(value)]
    return [str(detail)]


class MemoryAddForm(DashboardForm):
    """A new memory from the dashboard: what a person writes, its namespace and its
    conversation. The fields come from the model; the API's input rules
    (memories.serializers.MemoryCreateInput: lengths, list sizes) then check it as they
    check an agent's, so `memory_fields` is what memory_create takes with prevalidated."""

    FIELDS = ("content", "cue", "topic", "classification", "memory_type", "session_id", "position")

    def __init__(
        self, *args: Any, namespaces: list[Namespace], ceiling: int, **kwargs: Any
    ) -> None:
        kwargs.setdefault("initial", {})
        kwargs["initial"].setdefault("classification", Classification.default_for(ceiling))
        super().__init__(*args, **kwargs)
        generated = _model_fields(Memory, self.FIELDS)
        generated["classification"].choices = _classification_choices(ceiling)
        generated["session_id"].label = "Session"
        generated["session_id"].help_text = (
            "The conversation it comes from (any id of yours, up to 100 characters): it is "
            "linked to the session's earlier memories."
        )
        generated["position"].help_text = "Its turn in the session; empty: after the last."
        self.fields = {
            "namespace": forms.ChoiceField(choices=[(ns.slug, ns.name) for ns in namespaces]),
            "content": generated["content"],
            "cue": generated["cue"],
            "topic": generated["topic"],
            "keywords": KeywordsField(required=False, help_text="Separated by commas.", strip=True),
            "classification": generated["classification"],
            "memory_type": generated["memory_type"],
            "session_id": generated["session_id"],
            "position": generated["position"],
        }
        self.fields["topic"].help_text = "Its deck in review."
        self.memory_fields: dict[str, Any] = {}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["content"] = _newlines(data.get("content"))
        if self.errors:
            return data
        wire = {
            "namespace": data["namespace"],
            "content": data["content"],
            "cue": data["cue"],
            "topic": data["topic"],
            "keywords": data["keywords"],
            "classification": Classification(data["classification"]).label,
            "memory_type": data["memory_type"],
            "session_id": data["session_id"],
            "position": data["position"],
        }
        try:
            self.memory_fields = validate_memory_input(wire)
        except serializers.ValidationError as error:
            for name, detail in error.detail.items():
                self.add_error(name if name in self.fields else None, _messages(detail))
        return data


class IdsField(forms.Field):
    """Memory ids, posted as repeated values (checkboxes, hidden inputs): a list of
    distinct positive integers, in the order posted."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {
        "invalid": "Memories are named by their numbers.",
        "too_many": f"At most {BULK_ACTION_MAX} memories at once.",
    }

    def to_python(self, value: Any) -> list[int]:
        values = value if isinstance(value, list | tuple) else ([value] if value else [])
        ids: dict[int, None] = {}
        for item in values:
            try:
                number = int(str(item).strip())
            except ValueError:
                raise ValidationError(self.error_messages["invalid"], code="invalid") from None
            if not 1 <= number <= INT64_MAX:
                raise ValidationError(self.error_messages["invalid"], code="invalid")
            ids[number] = None
        if len(ids) > BULK_ACTION_MAX:
            raise ValidationError(self.error_messages["too_many"], code="too_many")
        return list(ids)


class BulkActionForm(DashboardForm):
    """An action on the memories selected on the list: their ids (or every memory the page
    showed, with "select all", which works without JavaScript), the action and its one
    parameter. The services check the parameter (memories.services.memories_bulk_check);
    `confirmed` is set by the confirmation step."""

    ids = IdsField(required=False)
    shown = IdsField(required=False)
    all_shown = forms.BooleanField(required=False, label="Select all on this page")
    action = forms.ChoiceField(label="Action")
    # No rules here: memory_forget's, memory_update's field rules and the ceiling are
    # checked by the services, whose messages show on the field.
    reason = forms.CharField(
        required=False,
        label="Reason to forget",
        widget=forms.TextInput(attrs={"placeholder": "for example: outdated"}),
    )
    topic = forms.CharField(required=False, label="Topic to move to")
    classification = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Classification to set"
    )
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, ceiling: int, **kwargs: Any) -> None:
        # Its own ids: the list's filter form has a topic and a classification too.
        kwargs.setdefault("auto_id", "bulk_%s")
        super().__init__(*args, **kwargs)
        self.fields["action"].choices = [("", "Choose an action"), *bulk_action_choices()]
        levels = _classification_choices(ceiling)
        self.fields["classification"].choices = [("", "Choose a level"), *levels]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        selected = list(data.get("ids") or [])
        if data.get("all_shown"):
            selected = list(dict.fromkeys([*selected, *(data.get("shown") or [])]))
        if "ids" in self.errors or "shown" in self.errors:
            return data
        if not selected:
            self.add_error("ids", "Select at least one memory.")
        elif len(selected) > BULK_ACTION_MAX:
            self.add_error("ids", IdsField.default_error_messages["too_many"])
        data["selected"] = selected
        return data

    def params(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in ("reason", "topic", "classification")}
