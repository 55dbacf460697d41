"""Writes to namespaces: create (the slug unique per owner) and update their settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from config.dberrors import unique_or
from memories.models import Namespace
from memories.services.decay_fits import decay_fit_apply_latest


def namespace_validate_new(
    *,
    owner,
    name: str,
    slug: str | None = None,
    mode: str = Namespace.Mode.PERSONAL,
    **fields: Any,
) -> Namespace:
    """The namespace namespace_create would insert, unsaved, or every refusal at once as a
    ValidationError: the slug defaults to the slugified name. Every writer of a new
    namespace (API, dashboard, admin) is checked here."""
    namespace = Namespace(owner=owner, name=name, slug=slug or slugify(name), mode=mode, **fields)
    field, taken = _clash_words(namespace.slug, given=bool(slug))
    errors: dict[str, list[str]] = {}
    try:
        # The one constraint, (owner, slug), is checked below and at the insert.
        namespace.full_clean(validate_constraints=False)
    except ValidationError as error:
        errors = error.message_dict
    if not namespace.slug and name.strip():
        # A name of no a-z or 0-9 ("東京") makes no slug: say what to do, not "blank".
        errors["slug"] = ["Choose a slug (a-z, digits, -): none can be made from this name."]
    elif namespace_slug_taken(owner=owner, name=name, slug=slug):
        # Every mistake at once: a taken slug used to hide the out-of-range settings until
        # the next try.
        errors.setdefault(field, []).append(taken)
    if errors:
        raise ValidationError(errors)
    return namespace


def namespace_create(
    *,
    owner,
    name: str,
    slug: str | None = None,
    mode: str = Namespace.Mode.PERSONAL,
    **fields: Any,
) -> Namespace:
    """Create a namespace for a user; the slug defaults to the slugified name."""
    namespace = namespace_validate_new(owner=owner, name=name, slug=slug, mode=mode, **fields)
    field, taken = _clash_words(namespace.slug, given=bool(slug))
    with unique_or(field, taken):
        namespace.save(force_insert=True)
    return namespace


def _clash_words(slug: str, *, given: bool) -> tuple[str, str]:
    """The field and words of a taken slug: a slug made from the name is the name's
    business, so its clash is said on the name."""
    if given:
        return "slug", "You already have a namespace with this slug."
    return "name", f"You already have a namespace with this name (slug “{slug}”)."


def namespace_slug_taken(*, owner, name: str, slug: str | None) -> tuple[str, str] | None:
    """(field, words) when the owner already has the slug a new namespace would get (the
    given one, or the name's), else None: namespace_create's check, which the dashboard's
    form also says when other fields were refused (so every mistake is said at once)."""
    made = slug or slugify(name)
    if made and Namespace.objects.filter(owner=owner, slug=made).exists():
        return _clash_words(made, given=bool(slug))
    return None


NAMESPACE_EDITABLE_FIELDS = (
    "name",
    "description",
    "mode",
    "weight_similarity",
    "weight_recency",
    "weight_utility",
    "weight_confidence",
    "decay_model",
    "decay_half_life_days",
    "decay_beta",
    "decay_power_alpha",
    "decay_fast_half_life_days",
    "decay_slow_half_life_days",
    "decay_fast_weight",
    "scheduler",
    "sm2_modifiers",
    "desired_retention",
    "new_cards_per_day",
    "card_front",
    "leech_threshold",
    "session_links",
    "dedupe",
    "decay_fit",
)


@transaction.atomic
def namespace_update(*, namespace: Namespace, changes: Mapping[str, Any]) -> Namespace:
    """Change a namespace's name or settings (its slug and owner never change)."""
    unknown = set(changes) - set(NAMESPACE_EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({name: "Unknown or read-only field." for name in sorted(unknown)})
    locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
    for field, value in changes.items():
        setattr(locked, field, value)
    locked.full_clean()
    fields = list(changes)
    if "decay_fit" in changes:  # auto applies the latest accepted fit; other modes none
        decay_fit_apply_latest(locked)
        fields.append("decay_fit_applied")
    if fields:
        locked.save(update_fields=fields)
    return locked
