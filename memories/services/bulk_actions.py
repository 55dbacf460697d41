"""Actions on many memories at once: the memory list's bulk actions (issue 17, item 6).

memories' own actions (forget with a reason, restore, move to a topic, set a classification,
keep: a use with the boost) are set-based: one UPDATE of the selected rows and one insert of
history events, each event what the single-memory service writes (memory_forget,
memory_restore, memory_update, memory_touch). The about-to-forget digest's Keep all, Review
now and Let go go through them too, and POST /api/v1/memories/actions. The
actions of apps above memories (review's suspend, unsuspend, bury, review now) come from
memories.hooks.bulk_actions(); memories_bulk_apply runs either kind in one transaction, so
an error writes nothing.

The caller hands over the memories to act on as a QuerySet it has already scoped (the
person's memories within their ceiling, by the ids they selected): an id outside it is
never acted on, exactly as an id that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Case, F, QuerySet, Value, When
from django.db.models.functions import Least
from django.utils import timezone

from memories.hooks import BulkAction, bulk_actions
from memories.models import LIVE_STATUSES, Classification, Memory, MemoryEvent, Relation
from memories.services.memories import (
    MAX_STRENGTH,
    STRENGTH_BOOST_FACTOR,
    forget_reason_clean,
    forgotten_fields,
    memory_validate,
    restored_fields,
)
from memories.services.supersede import supersession_release, supersession_resume
from memories.services.uses import uses_reactivate, uses_record
from memories.services.webhooks import memory_events_announce

# At most this many memories in one bulk action (a page of the list is 25).
BULK_ACTION_MAX = 500


def _field_clean(name: str, value: Any) -> Any:
    """`value` checked by the model field's validators, as memory_update's memory_validate
    checks an edit (a probe memory: nothing is written)."""
    probe = Memory(content="-", **{name: value})
    memory_validate(probe, fields=(name,))
    return getattr(probe, name)


def _events(rows: list[dict[str, Any]], *, kind: str, actor, source: str, now: datetime) -> None:
    """One history event per row (memory_ref, namespace_id, classification, before, after),
    inserted in one statement, with their webhooks."""
    events = MemoryEvent.objects.bulk_create(
        MemoryEvent(
            namespace_id=row["namespace_id"],
            memory_id=row["pk"],
            memory_ref=row["pk"],
            kind=kind,
            before=row["before"],
            after=row["after"],
            actor=actor,
            source=source,
            classification=row["classification"],
            created_at=now,
        )
        for row in rows
    )
    memory_events_announce(events)


def _locked(memories: QuerySet[Memory], *fields: str) -> list[dict[str, Any]]:
    """The rows to change, locked until the transaction ends (a concurrent single-memory
    write waits, then finds the change made)."""
    return list(
        memories.order_by("pk")
        .select_for_update()
        .values("pk", "namespace_id", "classification", *fields)
    )


def memories_forget(
    *,
    memories: QuerySet[Memory],
    reason: str,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> int:
    """memory_forget for every memory of `memories` not forgotten yet; how many it forgot."""
    reason = forget_reason_clean(reason)
    now = now or timezone.now()
    rows = _locked(memories.exclude(status=Memory.Status.FORGOTTEN), "status")
    Memory.objects.filter(pk__in=[row["pk"] for row in rows]).update(
        **forgotten_fields(reason=reason, score=None, now=now), updated_at=now
    )
    for row in rows:
        row["before"] = {"status": row["status"]}
        row["after"] = {"status": Memory.Status.FORGOTTEN.value, "reason": reason, "score": None}
    _events(rows, kind=MemoryEvent.Kind.FORGOTTEN, actor=actor, source=source, now=now)
    live = [row["pk"] for row in rows if row["status"] in LIVE_STATUSES]
    supersession_release(successors=live, actor=actor, source=source, now=now)
    return len(rows)


def memories_restore(
    *, memories: QuerySet[Memory], actor=None, source: str = "system", now: datetime | None = None
) -> int:
    """memory_restore for every forgotten or archived memory of `memories`: active again,
    or promoted if its tier is long-term or core, with a fresh decay clock, in hot storage."""
    now = now or timezone.now()
    gone = (Memory.Status.FORGOTTEN, Memory.Status.ARCHIVED)
    rows = _locked(
        memories.filter(status__in=gone), "status", "forgotten_reason", "tier", "storage"
    )
    Memory.objects.filter(pk__in=[row["pk"] for row in rows]).update(
        status=Case(
            When(tier=Memory.Tier.SHORT_TERM, then=Value(Memory.Status.ACTIVE.value)),
            default=Value(Memory.Status.PROMOTED.value),
        ),
        **restored_fields(now=now),
        updated_at=now,
    )
    for row in rows:
        short = row["tier"] == Memory.Tier.SHORT_TERM
        row["before"] = {
            "status": row["status"],
            "forgotten_reason": row["forgotten_reason"],
            "storage": row["storage"],
        }
        status = Memory.Status.ACTIVE if short else Memory.Status.PROMOTED
        row["after"] = {"status": status.value, "storage": Memory.Storage.HOT.value}
    _events(rows, kind=MemoryEvent.Kind.RESTORED, actor=actor, source=source, now=now)
    supersession_resume(successors=[row["pk"] for row in rows], actor=actor, source=source, now=now)
    return len(rows)


def memories_keep(
    *, memories: QuerySet[Memory], actor=None, source: str = "system", now: datetime | None = None
) -> int:
    """memory_touch with the boost (a person's Keep or Boost) for every live memory of
    `memories`: one more use, the decay clock restarted and strength x1.1 (capped), the use
    logged, a cold one back in hot storage and a 'touched' event each, as the single touch
    writes them; how many it kept. A forgotten or archived memory is left alone (restoring
    it is what brings it back)."""
    now = now or timezone.now()
    rows = _locked(memories.filter(status__in=LIVE_STATUSES))
    ids = [row["pk"] for row in rows]
    Memory.objects.filter(pk__in=ids).update(
        use_count=F("use_count") + 1,
        last_used_at=now,
        strength=Least(F("strength") * STRENGTH_BOOST_FACTOR, MAX_STRENGTH),
    )
    uses_record(ids, now=now)
    uses_reactivate(ids, now=now, actor=actor, source=source)
    fresh = {
        pk: (use_count, strength)
        for pk, use_count, strength in Memory.objects.filter(pk__in=ids).values_list(
            "pk", "use_count", "strength"
        )
    }
    for row in rows:
        use_count, strength = fresh[row["pk"]]
        row["before"] = {}
        row["after"] = {"use_count": use_count, "strength": strength, "boost_strength": True}
    _events(rows, kind=MemoryEvent.Kind.TOUCHED, actor=actor, source=source, now=now)
    return len(rows)


def memories_move(
    *,
    memories: QuerySet[Memory],
    topic: str,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> int:
    """memory_update of the topic (the deck) of every memory of `memories` whose topic
    differs; how many moved. An empty topic is the "(no topic)" deck."""
    topic = _field_clean("topic", topic)
    now = now or timezone.now()
    rows = _locked(memories.exclude(topic=topic), "topic")
    Memory.objects.filter(pk__in=[row["pk"] for row in rows]).update(topic=topic, updated_at=now)
    for row in rows:
        row["before"], row["after"] = {"topic": row["topic"]}, {"topic": topic}
    _events(rows, kind=MemoryEvent.Kind.UPDATED, actor=actor, source=source, now=now)
    return len(rows)


def memories_classify(
    *,
    memories: QuerySet[Memory],
    classification: int,
    ceiling: int = Classification.RESTRICTED,
    actor=None,
    source: str = "system",
    now: datetime | None = None,
) -> int:
    """memory_update of the classification of every memory of `memories` at another level;
    how many changed. Relations drawn from a memory rise with it, and each event is written
    at the higher of the two levels, as memory_update does. Never above `ceiling` (the
    caller's): it could not read the memories back."""
    classification = _field_clean("classification", classification)
    if classification > ceiling:
        raise ValidationError({"classification": "Above your classification ceiling."})
    now = now or timezone.now()
    rows = _locked(memories.exclude(classification=classification))
    ids = [row["pk"] for row in rows]
    Memory.objects.filter(pk__in=ids).update(classification=classification, updated_at=now)
    raised = [row["pk"] for row in rows if row["classification"] < classification]
    if raised:
        # What was derived from the memories is as sensitive as they now are.
        Relation.objects.filter(memory_id__in=raised, classification__lt=classification).update(
            classification=classification
        )
    label = Classification(classification).label
    for row in rows:
        row["before"] = {"classification": Classification(row["classification"]).label}
        row["after"] = {"classification": label}
        row["classification"] = max(row["classification"], classification)
    _events(rows, kind=MemoryEvent.Kind.UPDATED, actor=actor, source=source, now=now)
    return len(rows)


# memories' own actions, in the order the list offers them (before other apps' actions).
# Their run takes `actor` and `source` (classify: the caller's `ceiling` too) and the one
# parameter they name.
OWN_ACTIONS: dict[str, BulkAction] = {
    action.name: action
    for action in (
        BulkAction(
            name="forget",
            label="Forget",
            run=memories_forget,
            parameter="reason",
            question="Forget {count} {memories}?",
            done="Forgot {count} {memories}.",
        ),
        BulkAction(
            name="restore",
            label="Restore",
            run=memories_restore,
            question="Restore {count} {memories}?",
            done="Restored {count} {memories}.",
        ),
        BulkAction(
            name="move",
            label="Move to topic",
            run=memories_move,
            parameter="topic",
            question="Move {count} {memories} to the topic “{topic}”?",
            done="Moved {count} {memories} to the topic “{topic}”.",
        ),
        BulkAction(
            name="classify",
            label="Set classification",
            run=memories_classify,
            parameter="classification",
            question="Set the classification of {count} {memories} to {classification}?",
            done="Set {count} {memories} to {classification}.",
        ),
        BulkAction(
            name="keep",
            label="Keep (count a use)",
            run=memories_keep,
            question="Keep {count} {memories}, counting a use of each?",
            done="Kept {count} {memories}: one more use each, strength x1.1 and the decay "
            "clock restarted.",
        ),
    )
}


def bulk_action_choices() -> list[tuple[str, str]]:
    """(name, label) of every action the list offers: memories' own, then other apps'."""
    return [(a.name, a.label) for a in (*OWN_ACTIONS.values(), *bulk_actions())]


def _action(name: str) -> BulkAction:
    found = OWN_ACTIONS.get(name) or next((a for a in bulk_actions() if a.name == name), None)
    if found is None:
        raise ValidationError({"action": "Unknown action."})
    return found


_CLEANERS: dict[str, Callable[[Any], Any]] = {
    "reason": forget_reason_clean,
    "topic": lambda value: _field_clean("topic", (value or "").strip()),
    "classification": lambda value: _field_clean("classification", value),
}


def memories_bulk_check(
    *, action: str, params: Mapping[str, Any], ceiling: int = Classification.RESTRICTED
) -> tuple[BulkAction, dict[str, Any]]:
    """The action named and its parameter, checked by the rules its service applies (before
    a person is asked to confirm): ValidationError naming the field otherwise."""
    found = _action(action)
    if not found.parameter:
        return found, {}
    value = params.get(found.parameter)
    if found.parameter == "classification":
        if value in (None, ""):
            raise ValidationError({"classification": "Choose a classification."})
        value = _CLEANERS["classification"](value)
        if value > ceiling:
            raise ValidationError({"classification": "Above your classification ceiling."})
        return found, {"classification": value}
    return found, {found.parameter: _CLEANERS[found.parameter](value)}


def _words(count: int) -> dict[str, Any]:
    return {"count": count, "memories": "memory" if count == 1 else "memories"}


def bulk_action_text(
    action: BulkAction, values: Mapping[str, Any], *, count: int, selected: int | None = None
) -> str:
    """The action's question (`selected` None) or its outcome, in words."""
    shown = dict(values)
    if "classification" in shown:
        shown["classification"] = Classification(shown["classification"]).label
    if "topic" in shown:
        shown["topic"] = shown["topic"] or "(no topic)"
    if selected is None:
        return action.question.format(label=action.label, **shown, **_words(count))
    text = action.done.format(
        label=action.label, selected=selected, s="" if count == 1 else "s", **shown, **_words(count)
    )
    if action.name in OWN_ACTIONS and count < selected:
        others = selected - count
        text += f" {others} {'memory' if others == 1 else 'memories'} needed no change."
    return text


@transaction.atomic
def memories_bulk_apply(
    *,
    action: str,
    memories: QuerySet[Memory],
    params: Mapping[str, Any],
    actor=None,
    source: str = "system",
    ceiling: int = Classification.RESTRICTED,
    now: datetime | None = None,
) -> tuple[BulkAction, dict[str, Any], int]:
    """Run the action named on `memories` (already scoped by the caller), all or nothing:
    the action, its checked parameter and how many rows it changed."""
    found, values = memories_bulk_check(action=action, params=params, ceiling=ceiling)
    now = now or timezone.now()
    if found.name in OWN_ACTIONS:
        extra: dict[str, Any] = {"actor": actor, "source": source}
        if found.name == "classify":
            extra["ceiling"] = ceiling
        count = found.run(memories=memories, now=now, **extra, **values)
    else:
        count = found.run(memories=memories, user=actor, now=now)
    return found, values, count
