"""`AsyncEngram`: the asyncio client, over one `httpx.AsyncClient`; the same methods as
`Engram` (client.py), awaited, and lists as async iterators."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import IO, Any, Unpack

import httpx

from engram_client import connection
from engram_client import models as m
from engram_client import operations as ops
from engram_client.errors import EngramError, Timeout, TransportError, error_from_response
from engram_client.retry import Retry
from engram_client.version import __version__


class AsyncEngram:
    """An asyncio client of one Engram server with one token.

        async with AsyncEngram("https://engram.example.com", "eng_...") as engram:
            await engram.remember("agent-42", "User prefers tea", topic="user")
            async for memory in engram.memories(namespace="agent-42"): ...

    Every method raises an `ApiError` subclass for an error answer (after retrying 429
    and 503 as `retry` says) and `Timeout` / `TransportError` when no answer came.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: Retry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = connection.api_base(url)
        self.retry = retry or Retry()
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={
                **connection.default_headers(token, f"engram-client/{__version__}"),
                **(headers or {}),
            },
            timeout=timeout,
            transport=transport,
        )

    # Plumbing

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        body: connection.ImportBody | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Send with the retry policy; the response of a success, else the API's error."""
        attempt = 0
        while True:
            if body is not None:
                body.rewind()
            request = self._http.build_request(
                method,
                url,
                json=json,
                params=params,
                content=None if body is None else _async_chunks(body),
                headers=None if body is None else body.headers(),
            )
            try:
                response = await self._http.send(request, stream=stream)
            except httpx.ConnectError as exc:  # nothing was sent: safe to try again
                delay = self._retry_delay(attempt, None, None, body)
                if delay is None:
                    raise TransportError(f"Could not connect to {self.base_url}: {exc}") from exc
            except httpx.TimeoutException as exc:
                if not isinstance(exc, httpx.ConnectTimeout):
                    raise Timeout(f"No answer from {method} {url} in time: {exc!r}") from exc
                delay = self._retry_delay(attempt, None, None, body)
                if delay is None:
                    raise Timeout(f"Could not connect to {self.base_url} in time") from exc
            except httpx.TransportError as exc:
                raise TransportError(f"{method} {url} failed: {exc!r}") from exc
            else:
                if response.status_code < 400:
                    return response
                content = await response.aread()
                await response.aclose()
                delay = self._retry_delay(
                    attempt, response.status_code, response.headers.get("Retry-After"), body
                )
                if delay is None:
                    raise error_from_response(response.status_code, dict(response.headers), content)
            attempt += 1
            await asyncio.sleep(delay)

    def _retry_delay(
        self,
        attempt: int,
        status: int | None,
        retry_after: str | None,
        body: connection.ImportBody | None,
    ) -> float | None:
        if body is not None and not body.replayable:
            return None  # a stream already read cannot be sent again
        return self.retry.delay(attempt, status, retry_after)

    async def _send(self, call: ops.Call) -> Any:
        response = await self._request(call.method, call.path, json=call.json, params=call.params)
        if call.shape == "none":
            return None
        try:
            data = response.json()
        except ValueError as exc:
            raise EngramError(f"{call.method} {call.route} answered no JSON.") from exc
        return call.decode(data)

    async def _pages(self, call: ops.Call) -> AsyncIterator[Any]:
        """Every item of a cursor-paginated list, fetching a page when the last is used up."""
        page: m.Page[Any] = await self._send(call)
        while True:
            for item in page.results:
                yield item
            if not page.next:
                return
            response = await self._request("GET", page.next)
            page = call.decode(response.json())

    # Memories

    async def remember(
        self, namespace: str, content: str, **fields: Unpack[m.CreateFields]
    ) -> m.Memory:
        """Store a memory (or, when the namespace holds the text, get that one back with
        `deduplicated=True`, counted as a use)."""
        return await self._send(ops.remember(namespace, content, fields))

    async def remember_many(
        self, memories: Iterable[Mapping[str, Any] | str], *, namespace: str | None = None
    ) -> list[m.Memory]:
        """Store up to API_BULK_MAX memories, all or nothing; each answer has its
        `deduplicated` flag. Items are dicts of memory fields, or plain content strings
        stored in `namespace`."""
        return await self._send(ops.remember_many(memories, namespace))

    async def get(self, memory_id: int) -> m.Memory:
        """One memory (NotFound outside the token's namespaces and ceiling)."""
        return await self._send(ops.get(memory_id))

    async def update(self, memory_id: int, **changes: Unpack[m.UpdateFields]) -> m.Memory:
        """Change editable fields; the history records before and after."""
        return await self._send(ops.update(memory_id, changes))

    async def forget(self, memory_id: int, reason: str) -> m.Memory:
        """Hide a memory; restorable until purged."""
        return await self._send(ops.forget(memory_id, reason))

    async def restore(self, memory_id: int) -> m.Memory:
        """Bring back a forgotten or archived memory."""
        return await self._send(ops.restore(memory_id))

    async def touch(self, memory_id: int, *, boost_strength: bool = False) -> m.Memory:
        """Count a use (and optionally boost strength x1.1, capped at 2.0)."""
        return await self._send(ops.touch(memory_id, boost_strength))

    async def purge(self, memory_id: int) -> None:
        """Delete a memory for good (its history keeps a 'purged' event)."""
        await self._send(ops.purge(memory_id))

    def memories(self, **filters: Unpack[ops.MemoryFilters]) -> AsyncIterator[m.Memory]:
        """Every memory matching the filters, newest first, page after page (`limit` is
        the page size); pages are fetched as the iteration reaches them."""
        return self._pages(ops.memories(filters))

    def history(self, memory_id: int, *, limit: int | None = None) -> AsyncIterator[m.Event]:
        """A memory's history, newest first."""
        return self._pages(ops.history(memory_id, limit))

    async def reinforce_due(
        self, *, namespace: str | None = None, limit: int | None = None
    ) -> list[m.Reinforce]:
        """What to revisit: the memories decay is about to forget first (soonest first,
        with `forget_at`), then those in the review danger zone; recall or touch them to
        keep them."""
        return await self._send(ops.reinforce_due(namespace, limit))

    async def about_to_forget(
        self, *, namespace: str | None = None, limit: int | None = None
    ) -> m.Forgetting:
        """The about-to-forget digest: how many memories decay will forget within
        FORGET_DIGEST_DAYS unless they are used, and the first `limit` (0: the count
        alone), soonest first."""
        return await self._send(ops.about_to_forget(namespace, limit))

    async def act(
        self,
        action: ops.ActionName,
        ids: Iterable[int],
        *,
        reason: str | None = None,
        topic: str | None = None,
        classification: m.Classification | None = None,
    ) -> m.ActionResult:
        """An action on up to 500 memories, all or nothing: keep (a use with the boost),
        review_now, forget (with `reason`), restore, move (`topic`), classify
        (`classification`) or a card action (suspend, unsuspend, bury, unbury)."""
        return await self._send(ops.act(action, ids, reason, topic, classification))

    # Webhooks

    async def decay_fits(self, slug: str) -> list[m.DecayFit]:
        """The history of the namespace's decay fits, newest first (docs/api.md)."""
        return await self._send(ops.decay_fits(slug))

    async def fit_decay(self, slug: str) -> None:
        """Queue a fit of the namespace's decay to its uses; see decay_fits for the result."""
        await self._send(ops.fit_decay(slug))

    async def webhooks(self, slug: str) -> list[m.Webhook]:
        """The namespace's webhook subscriptions."""
        return await self._send(ops.webhooks(slug))

    async def create_webhook(
        self, slug: str, url: str, **fields: Unpack[m.WebhookFields]
    ) -> m.Webhook:
        """Subscribe `url` to the namespace's events; the answer's `secret` is shown once."""
        return await self._send(ops.create_webhook(slug, url, fields))

    async def webhook(self, webhook_id: int) -> m.Webhook:
        return await self._send(ops.webhook(webhook_id))

    async def update_webhook(self, webhook_id: int, **fields: Unpack[m.WebhookFields]) -> m.Webhook:
        """Change a subscription (enabled=True turns a disabled one back on)."""
        return await self._send(ops.update_webhook(webhook_id, fields))

    async def delete_webhook(self, webhook_id: int) -> None:
        await self._send(ops.delete_webhook(webhook_id))

    def webhook_deliveries(
        self, webhook_id: int, *, limit: int | None = None
    ) -> AsyncIterator[m.WebhookDelivery]:
        """A subscription's delivery log, newest first, every page."""
        return self._pages(ops.webhook_deliveries(webhook_id, limit))

    async def redeliver(self, delivery_id: int) -> m.WebhookDelivery:
        """Send a delivery again, with the same webhook-id."""
        return await self._send(ops.redeliver(delivery_id))

    # Links and the entity graph

    async def link(
        self, source: int, target: int, *, weight: float | None = None, kind: str | None = None
    ) -> m.Association:
        """Associate two memories of one namespace (recall spreads along these links)."""
        return await self._send(ops.link(source, target, weight, kind))

    async def unlink(self, association_id: int) -> None:
        """Remove an association."""
        await self._send(ops.unlink(association_id))

    def associations(
        self, *, memory: int | None = None, limit: int | None = None
    ) -> AsyncIterator[m.Association]:
        """Associations between memories you can see (of one memory, if named)."""
        return self._pages(ops.associations(memory, limit))

    async def relate(
        self,
        namespace: str,
        subject: str,
        predicate: str,
        object: str,
        *,
        memory: int | None = None,
        weight: float | None = None,
    ) -> m.Relation:
        """Record subject -[predicate]-> object in the entity graph."""
        return await self._send(ops.relate(namespace, subject, predicate, object, memory, weight))

    async def unrelate(self, relation_id: int) -> None:
        """Remove a relation."""
        await self._send(ops.unrelate(relation_id))

    def relations(
        self,
        *,
        namespace: str | None = None,
        entity: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.Relation]:
        """Relations (of one entity, if named)."""
        return self._pages(ops.relations(namespace, entity, limit))

    async def declare_entity(
        self, namespace: str, name: str, *, kind: str | None = None
    ) -> m.Entity:
        """An entity of the graph (the existing one if the name is known)."""
        return await self._send(ops.declare_entity(namespace, name, kind))

    def entities(
        self, *, namespace: str | None = None, limit: int | None = None
    ) -> AsyncIterator[m.Entity]:
        """Known entities."""
        return self._pages(ops.entities(namespace, limit))

    def consolidations(
        self,
        *,
        namespace: str | None = None,
        period: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.Consolidation]:
        """Digests of periods' memories."""
        return self._pages(ops.consolidations(namespace, period, limit))

    # Recall

    async def recall(self, query: str, **options: Unpack[ops.RecallOptions]) -> m.RecallResult:
        """Memories for a query, ranked and explained (docs/recall.md)."""
        return await self._send(ops.recall(query, options))

    # Namespaces, export and import

    async def namespaces(self) -> list[m.Namespace]:
        """The namespaces this token may use."""
        return await self._send(ops.namespaces())

    async def namespace(self, slug: str) -> m.Namespace:
        """One namespace and its settings."""
        return await self._send(ops.namespace(slug))

    async def create_namespace(
        self, name: str, *, slug: str | None = None, **settings: Unpack[m.NamespaceSettings]
    ) -> m.Namespace:
        """A new namespace (needs a write token over all namespaces)."""
        return await self._send(ops.create_namespace(name, slug, settings))

    async def update_namespace(
        self, slug: str, *, name: str | None = None, **settings: Unpack[m.NamespaceSettings]
    ) -> m.Namespace:
        """Change a namespace's name or settings."""
        return await self._send(ops.update_namespace(slug, name, settings))

    async def export_namespace(self, slug: str) -> AsyncIterator[dict[str, Any]]:
        """The namespace's export, one record at a time as the server streams it (header,
        memories, links, cards, history..., then `end`); closing the iterator early closes
        the connection."""
        call = ops.export_namespace(slug)
        response = await self._request(call.method, call.path, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.strip():
                    yield connection.record(line)
        finally:
            await response.aclose()

    async def export_namespace_to(self, slug: str, file: IO[bytes]) -> int:
        """Write the export to a binary file as it streams, byte for byte; its size."""
        call = ops.export_namespace(slug)
        response = await self._request(call.method, call.path, stream=True)
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                file.write(chunk)
                size += len(chunk)
        finally:
            await response.aclose()
        return size

    async def import_namespace(
        self, slug: str, source: connection.ImportSource, *, apply_settings: bool = False
    ) -> m.ImportResult | m.ImportJob:
        """Import JSON Lines into the namespace, all or nothing: bytes, a path, a binary
        file, or records (as export_namespace yields them). A body over the server's
        API_MAX_BODY_BYTES is imported by its worker: an `ImportJob` to wait for with
        `wait_for_import`."""
        call = ops.import_namespace(slug, apply_settings)
        body = connection.import_body(source)
        try:
            response = await self._request(call.method, call.path, params=call.params, body=body)
        finally:
            body.close()
        data = response.json()
        if response.status_code == 202:
            return m.decode(m.ImportJob, data)
        return connection.import_result(data)

    async def import_job(self, slug: str, job: int) -> m.ImportJob:
        """The state of a background import."""
        return await self._send(ops.import_job(slug, job))

    async def wait_for_import(
        self, slug: str, job: int, *, poll: float = 1.0, timeout: float = 600.0
    ) -> m.ImportResult:
        """Poll a background import until it ends; its result, or its error raised."""
        deadline = time.monotonic() + timeout
        while True:
            state = await self.import_job(slug, job)
            result = connection.finished_import(state)
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise Timeout(f"Import job {job} still {state.status} after {timeout} s.")
            await asyncio.sleep(poll)

    # Review

    async def review_queue(
        self,
        namespace: str,
        *,
        deck: str | None = None,
        limit: int | None = None,
        tz: str | None = None,
    ) -> m.ReviewQueue:
        """Today's due cards by priority, then new cards within the daily limit."""
        return await self._send(ops.review_queue(namespace, deck, limit, tz))

    async def grade(
        self, card_id: int, grade: m.Grade, *, version: int | None = None
    ) -> m.ReviewLog:
        """Grade a card 0-5 or again/hard/good/easy; a stale `version` is a Conflict."""
        return await self._send(ops.grade(card_id, grade, version))

    async def undo(self, card_id: int) -> m.ReviewLog:
        """Undo a card's last grade."""
        return await self._send(ops.undo(card_id))

    async def suspend(self, card_id: int) -> m.CardState:
        """Suspend a card: review never shows it until it is unsuspended."""
        return await self._send(ops.suspend(card_id))

    async def unsuspend(self, card_id: int, *, clear_leech: bool | None = None) -> m.CardState:
        """Unsuspend a card; `clear_leech` also drops its leech tag and lapses."""
        return await self._send(ops.unsuspend(card_id, clear_leech))

    async def bury(
        self, card_id: int, *, until: datetime | None = None, tz: str | None = None
    ) -> m.CardState:
        """Leave a card out of review until `until` (default: the start of tomorrow in `tz`)."""
        return await self._send(ops.bury(card_id, until, tz))

    async def unbury(self, card_id: int) -> m.CardState:
        """Bring a buried card back now."""
        return await self._send(ops.unbury(card_id))

    async def decks(self, namespace: str, *, tz: str | None = None) -> m.Decks:
        """The namespace's decks with their counts and new cards per day."""
        return await self._send(ops.decks(namespace, tz))

    async def set_deck(
        self, namespace: str, deck: str, new_cards_per_day: int | None, *, tz: str | None = None
    ) -> m.Decks:
        """Set a deck's own new cards per day; None clears it (the namespace's applies)."""
        return await self._send(ops.set_deck(namespace, deck, new_cards_per_day, tz))

    async def optimization(self, namespace: str) -> m.Optimization:
        """The namespace's FSRS parameters and its last fit."""
        return await self._send(ops.optimization(namespace))

    async def optimize(self, namespace: str) -> m.Optimization:
        """Fit FSRS parameters to your reviews in the namespace (a large fit runs in the
        worker: `fit["status"]` is "queued"); too few reviews is a ValidationError."""
        return await self._send(ops.optimize(namespace))

    async def reset_optimization(self, namespace: str) -> m.Optimization:
        """Schedule the namespace with fsrs's default parameters again."""
        return await self._send(ops.reset_optimization(namespace))

    async def review_stats(
        self, namespace: str, *, deck: str | None = None, tz: str | None = None
    ) -> m.ReviewStats:
        """Cards, retention, streak, reviews per day and the forecast."""
        return await self._send(ops.review_stats(namespace, deck, tz))

    async def start_session(
        self,
        namespace: str,
        *,
        deck: str | None = None,
        limit: int | None = None,
        tz: str | None = None,
    ) -> m.StudySession:
        """A study session over today's cards."""
        return await self._send(ops.start_session(namespace, deck, limit, tz))

    async def session(self, session_id: int) -> m.StudySession:
        """A study session and its next card."""
        return await self._send(ops.session(session_id))

    async def session_grade(
        self, session_id: int, card: int, grade: m.Grade, *, version: int | None = None
    ) -> m.StudySession:
        """Grade the session's card (only the first grade schedules)."""
        return await self._send(ops.session_grade(session_id, card, grade, version))

    async def finish_session(self, session_id: int) -> m.StudySession:
        """End a study session now."""
        return await self._send(ops.finish_session(session_id))

    async def start_cram(
        self,
        namespace: str,
        *,
        deck: str | None = None,
        cards: list[int] | None = None,
        seed: int | None = None,
    ) -> m.StudySession:
        """A cram session: random order, scored, never reschedules."""
        return await self._send(ops.start_cram(namespace, deck, cards, seed))

    async def cram(self, session_id: int) -> m.StudySession:
        """A cram session and its score."""
        return await self._send(ops.cram(session_id))

    async def cram_answer(self, session_id: int, card: int, correct: bool) -> m.StudySession:
        """Answer a cram card right or wrong."""
        return await self._send(ops.cram_answer(session_id, card, correct))

    async def finish_cram(self, session_id: int) -> m.StudySession:
        """End a cram session now."""
        return await self._send(ops.finish_cram(session_id))


async def _async_chunks(body: connection.ImportBody) -> AsyncIterator[bytes]:
    """The body's chunks for httpx.AsyncClient, which takes only async streams. The reads
    are a local file's or memory's, short enough not to hand to a thread."""
    for chunk in body.chunks():
        yield chunk
