"""Every API operation as a `Call`: method, route, body, query and result type, built
without any I/O.

The sync and async clients send these the same way, so an operation is written once;
and the schema-agreement test (tests/clients/test_python_client.py) builds every one and
checks its route, method, body fields, query parameters and result fields against the
server's OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, TypedDict
from urllib.parse import quote

from engram_client import models as m
from engram_client.errors import EngramError

Shape = Literal["one", "list", "page", "none", "lines"]


@dataclass(frozen=True)
class Call:
    """One request: `route` is the schema's path under /api/v1 ("/memories/{id}"),
    `result` the class the answer decodes to and `shape` how (one object, a JSON list, a
    cursor page of them, no body, or JSON Lines)."""

    method: str
    route: str
    path_params: Mapping[str, Any]
    json: Any = None
    params: Mapping[str, Any] | None = None
    result: type | None = None
    shape: Shape = "one"

    @property
    def path(self) -> str:
        values = {name: quote(str(value), safe="") for name, value in self.path_params.items()}
        return self.route.format(**values)

    def decode(self, data: Any) -> Any:
        """The typed result of the parsed JSON answer."""
        if self.shape == "none":
            return None
        if self.result is None:  # free-form JSON
            return data
        if self.shape == "list":
            if not isinstance(data, list):
                raise EngramError(f"Expected a JSON list from {self.method} {self.route}.")
            return [m.decode(self.result, item) for item in data]
        if self.shape == "page":
            if not isinstance(data, dict) or not isinstance(data.get("results"), list):
                raise EngramError(f"Expected a page from {self.method} {self.route}.")
            return m.Page(
                results=[m.decode(self.result, item) for item in data["results"]],
                next=data.get("next"),
                previous=data.get("previous"),
            )
        return m.decode(self.result, data)


class MemoryFilters(TypedDict, total=False):
    """The memory list's filters (GET /memories); `limit` is the page size."""

    namespace: str
    topic: str
    tier: m.Tier
    status: Literal["active", "promoted", "archived", "forgotten"]
    memory_type: m.MemoryType
    classification: m.Classification
    session_id: str
    created_after: datetime
    created_before: datetime
    as_of: datetime
    include_superseded: bool
    q: str
    limit: int


class RecallOptions(TypedDict, total=False):
    """What narrows or shapes a recall (POST /recall), besides the query."""

    namespaces: list[str]
    limit: int
    topic: str
    tier: m.Tier
    time_start: datetime
    time_end: datetime
    include_expired: bool
    as_of: datetime
    include_superseded: bool
    context: dict[str, Any]
    session_id: str
    track: bool | None
    stages: list[str]


def jsonable(value: Any) -> Any:
    """`value` with datetimes as ISO 8601; a naive datetime is refused, since the server
    would read it in its own time zone, not the caller's."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"A naive datetime ({value!r}): give it a tzinfo.")
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def query(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters: None left out, booleans as the API spells them."""
    found: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        found[key] = jsonable(value)
    return found


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields given (None means "not given": the server's default)."""
    return jsonable({key: value for key, value in fields.items() if value is not None})


# Memories


def remember(namespace: str, content: str, fields: m.CreateFields) -> Call:
    return Call(
        "POST",
        "/memories",
        {},
        json=jsonable({"namespace": namespace, "content": content, **fields}),
        result=m.Memory,
    )


def remember_many(memories: Iterable[Mapping[str, Any] | str], namespace: str | None) -> Call:
    items = [{"content": item} if isinstance(item, str) else dict(item) for item in memories]
    return Call(
        "POST",
        "/memories/bulk",
        {},
        json=body(namespace=namespace, memories=items),
        result=m.Memory,
        shape="list",
    )


def get(memory_id: int) -> Call:
    return Call("GET", "/memories/{id}", {"id": memory_id}, result=m.Memory)


def update(memory_id: int, changes: m.UpdateFields) -> Call:
    return Call(
        "PATCH", "/memories/{id}", {"id": memory_id}, json=jsonable(dict(changes)), result=m.Memory
    )


def purge(memory_id: int) -> Call:
    return Call("DELETE", "/memories/{id}", {"id": memory_id}, shape="none")


def forget(memory_id: int, reason: str) -> Call:
    return Call(
        "POST",
        "/memories/{id}/forget",
        {"id": memory_id},
        json=body(reason=reason),
        result=m.Memory,
    )


def restore(memory_id: int) -> Call:
    return Call("POST", "/memories/{id}/restore", {"id": memory_id}, result=m.Memory)


def touch(memory_id: int, boost_strength: bool) -> Call:
    return Call(
        "POST",
        "/memories/{id}/touch",
        {"id": memory_id},
        json=body(boost_strength=boost_strength),
        result=m.Memory,
    )


def memories(filters: MemoryFilters) -> Call:
    return Call("GET", "/memories", {}, params=query(filters), result=m.Memory, shape="page")


def history(memory_id: int, limit: int | None) -> Call:
    return Call(
        "GET",
        "/memories/{id}/history",
        {"id": memory_id},
        params=query({"limit": limit}),
        result=m.Event,
        shape="page",
    )


def reinforce_due(namespace: str | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/memories/reinforce",
        {},
        params=query({"namespace": namespace, "limit": limit}),
        result=m.Reinforce,
        shape="list",
    )


def about_to_forget(namespace: str | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/memories/forgetting",
        {},
        params=query({"namespace": namespace, "limit": limit}),
        result=m.Forgetting,
    )


ActionName = Literal[
    "keep",
    "review_now",
    "forget",
    "restore",
    "move",
    "classify",
    "suspend",
    "unsuspend",
    "bury",
    "unbury",
]


def act(
    action: ActionName,
    ids: Iterable[int],
    reason: str | None,
    topic: str | None,
    classification: m.Classification | None,
) -> Call:
    return Call(
        "POST",
        "/memories/actions",
        {},
        json=body(
            action=action,
            ids=list(ids),
            reason=reason,
            topic=topic,
            classification=classification,
        ),
        result=m.ActionResult,
    )


# Links and the entity graph


def link(source: int, target: int, weight: float | None, kind: str | None) -> Call:
    return Call(
        "POST",
        "/associations",
        {},
        json=body(source=source, target=target, weight=weight, kind=kind),
        result=m.Association,
    )


def unlink(association_id: int) -> Call:
    return Call("DELETE", "/associations/{id}", {"id": association_id}, shape="none")


def associations(memory: int | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/associations",
        {},
        params=query({"memory": memory, "limit": limit}),
        result=m.Association,
        shape="page",
    )


def relate(
    namespace: str,
    subject: str,
    predicate: str,
    object: str,
    memory: int | None,
    weight: float | None,
) -> Call:
    return Call(
        "POST",
        "/relations",
        {},
        json=body(
            namespace=namespace,
            subject=subject,
            predicate=predicate,
            object=object,
            memory=memory,
            weight=weight,
        ),
        result=m.Relation,
    )


def unrelate(relation_id: int) -> Call:
    return Call("DELETE", "/relations/{id}", {"id": relation_id}, shape="none")


def relations(namespace: str | None, entity: str | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/relations",
        {},
        params=query({"namespace": namespace, "entity": entity, "limit": limit}),
        result=m.Relation,
        shape="page",
    )


def declare_entity(namespace: str, name: str, kind: str | None) -> Call:
    return Call(
        "POST",
        "/entities",
        {},
        json=body(namespace=namespace, name=name, kind=kind),
        result=m.Entity,
    )


def entities(namespace: str | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/entities",
        {},
        params=query({"namespace": namespace, "limit": limit}),
        result=m.Entity,
        shape="page",
    )


def consolidations(namespace: str | None, period: str | None, limit: int | None) -> Call:
    return Call(
        "GET",
        "/consolidations",
        {},
        params=query({"namespace": namespace, "period": period, "limit": limit}),
        result=m.Consolidation,
        shape="page",
    )


# Recall


def recall(text: str, options: RecallOptions) -> Call:
    return Call(
        "POST", "/recall", {}, json=jsonable({"query": text, **options}), result=m.RecallResult
    )


# Namespaces, export and import


def namespaces() -> Call:
    return Call("GET", "/namespaces", {}, result=m.Namespace, shape="list")


def namespace(slug: str) -> Call:
    return Call("GET", "/namespaces/{slug}", {"slug": slug}, result=m.Namespace)


def create_namespace(name: str, slug: str | None, settings: m.NamespaceSettings) -> Call:
    return Call(
        "POST",
        "/namespaces",
        {},
        json=jsonable({**body(name=name, slug=slug), **settings}),
        result=m.Namespace,
    )


def update_namespace(slug: str, name: str | None, settings: m.NamespaceSettings) -> Call:
    return Call(
        "PATCH",
        "/namespaces/{slug}",
        {"slug": slug},
        json=jsonable({**body(name=name), **settings}),
        result=m.Namespace,
    )


def decay_fits(slug: str) -> Call:
    return Call(
        "GET", "/namespaces/{slug}/decay-fits", {"slug": slug}, result=m.DecayFit, shape="list"
    )


def fit_decay(slug: str) -> Call:
    return Call("POST", "/namespaces/{slug}/decay-fits", {"slug": slug})


def webhooks(slug: str) -> Call:
    return Call(
        "GET", "/namespaces/{slug}/webhooks", {"slug": slug}, result=m.Webhook, shape="list"
    )


def create_webhook(slug: str, url: str, fields: m.WebhookFields) -> Call:
    return Call(
        "POST",
        "/namespaces/{slug}/webhooks",
        {"slug": slug},
        json=jsonable({"url": url, **fields}),
        result=m.Webhook,
    )


def webhook(webhook_id: int) -> Call:
    return Call("GET", "/webhooks/{id}", {"id": webhook_id}, result=m.Webhook)


def update_webhook(webhook_id: int, fields: m.WebhookFields) -> Call:
    return Call(
        "PATCH", "/webhooks/{id}", {"id": webhook_id}, json=jsonable(dict(fields)), result=m.Webhook
    )


def delete_webhook(webhook_id: int) -> Call:
    return Call("DELETE", "/webhooks/{id}", {"id": webhook_id}, shape="none")


def webhook_deliveries(webhook_id: int, limit: int | None) -> Call:
    return Call(
        "GET",
        "/webhooks/{id}/deliveries",
        {"id": webhook_id},
        params=query({"limit": limit}),
        result=m.WebhookDelivery,
        shape="page",
    )


def redeliver(delivery_id: int) -> Call:
    return Call(
        "POST",
        "/webhooks/deliveries/{id}/redeliver",
        {"id": delivery_id},
        result=m.WebhookDelivery,
    )


def export_namespace(slug: str) -> Call:
    return Call("GET", "/namespaces/{slug}/export", {"slug": slug}, shape="lines")


def import_namespace(slug: str, apply_settings: bool) -> Call:
    """The import's route and query; the body (JSON Lines) is the client's to stream."""
    return Call(
        "POST",
        "/namespaces/{slug}/import",
        {"slug": slug},
        params={"settings": "apply" if apply_settings else "keep"},
        shape="none",
    )


def import_job(slug: str, job: int) -> Call:
    return Call(
        "GET", "/namespaces/{slug}/import/{job}", {"slug": slug, "job": job}, result=m.ImportJob
    )


# Review


def review_queue(namespace: str, deck: str | None, limit: int | None, tz: str | None) -> Call:
    return Call(
        "GET",
        "/review/queue",
        {},
        params=query({"namespace": namespace, "deck": deck, "limit": limit, "tz": tz}),
        result=m.ReviewQueue,
    )


def grade(card_id: int, grade: m.Grade, version: int | None) -> Call:
    return Call(
        "POST",
        "/review/cards/{id}/grade",
        {"id": card_id},
        json=body(grade=grade, version=version),
        result=m.ReviewLog,
    )


def undo(card_id: int) -> Call:
    return Call("POST", "/review/cards/{id}/undo", {"id": card_id}, result=m.ReviewLog)


def suspend(card_id: int) -> Call:
    return Call("POST", "/review/cards/{id}/suspend", {"id": card_id}, result=m.CardState)


def unsuspend(card_id: int, clear_leech: bool | None) -> Call:
    return Call(
        "DELETE",
        "/review/cards/{id}/suspend",
        {"id": card_id},
        json=body(clear_leech=clear_leech),
        result=m.CardState,
    )


def bury(card_id: int, until: datetime | None, tz: str | None) -> Call:
    return Call(
        "POST",
        "/review/cards/{id}/bury",
        {"id": card_id},
        json=body(until=until, tz=tz),
        result=m.CardState,
    )


def unbury(card_id: int) -> Call:
    return Call("DELETE", "/review/cards/{id}/bury", {"id": card_id}, result=m.CardState)


def decks(namespace: str, tz: str | None) -> Call:
    return Call(
        "GET", "/review/decks", {}, params=query({"namespace": namespace, "tz": tz}), result=m.Decks
    )


def set_deck(namespace: str, deck: str, new_cards_per_day: int | None, tz: str | None) -> Call:
    # new_cards_per_day is sent even when None: null clears the deck's own limit.
    fields = body(namespace=namespace, deck=deck, tz=tz)
    fields["new_cards_per_day"] = new_cards_per_day
    return Call("PUT", "/review/decks", {}, json=fields, result=m.Decks)


def optimization(namespace: str) -> Call:
    return Call(
        "GET", "/review/optimize", {}, params=query({"namespace": namespace}), result=m.Optimization
    )


def optimize(namespace: str) -> Call:
    return Call(
        "POST", "/review/optimize", {}, json=body(namespace=namespace), result=m.Optimization
    )


def reset_optimization(namespace: str) -> Call:
    return Call(
        "POST", "/review/optimize/reset", {}, json=body(namespace=namespace), result=m.Optimization
    )


def review_stats(namespace: str, deck: str | None, tz: str | None) -> Call:
    return Call(
        "GET",
        "/review/stats",
        {},
        params=query({"namespace": namespace, "deck": deck, "tz": tz}),
        result=m.ReviewStats,
    )


def start_session(namespace: str, deck: str | None, limit: int | None, tz: str | None) -> Call:
    return Call(
        "POST",
        "/review/sessions",
        {},
        json=body(namespace=namespace, deck=deck, limit=limit, tz=tz),
        result=m.StudySession,
    )


def session(session_id: int) -> Call:
    return Call("GET", "/review/sessions/{id}", {"id": session_id}, result=m.StudySession)


def session_grade(session_id: int, card: int, grade: m.Grade, version: int | None) -> Call:
    return Call(
        "POST",
        "/review/sessions/{id}/grade",
        {"id": session_id},
        json=body(card=card, grade=grade, version=version),
        result=m.StudySession,
    )


def finish_session(session_id: int) -> Call:
    return Call("POST", "/review/sessions/{id}/finish", {"id": session_id}, result=m.StudySession)


def start_cram(namespace: str, deck: str | None, cards: list[int] | None, seed: int | None) -> Call:
    return Call(
        "POST",
        "/review/cram",
        {},
        json=body(namespace=namespace, deck=deck, cards=cards, seed=seed),
        result=m.StudySession,
    )


def cram(session_id: int) -> Call:
    return Call("GET", "/review/cram/{id}", {"id": session_id}, result=m.StudySession)


def cram_answer(session_id: int, card: int, correct: bool) -> Call:
    return Call(
        "POST",
        "/review/cram/{id}/answer",
        {"id": session_id},
        json=body(card=card, correct=correct),
        result=m.StudySession,
    )


def finish_cram(session_id: int) -> Call:
    return Call("POST", "/review/cram/{id}/finish", {"id": session_id}, result=m.StudySession)
