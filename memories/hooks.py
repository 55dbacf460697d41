"""How review and recall join in what memories does, without memories importing them.

Data flows one way: config <- memories <- review, recall (docs/architecture.md). When
something memories does must cause work in an app above it, memories announces it here and
that app reacts; the app connects its receivers and registers its parts in its
AppConfig.ready(), in one place (review/receivers.py, recall/receivers.py).

- Signals, for reactions. They are sent inside the writer's transaction and receivers run
  synchronously, so a receiver's failure rolls the write back (a memory is never stored
  without the card its namespace promises).
- Namespace transfer parts, for records another app keeps per memory (review's cards and
  review logs): written into a namespace's export after the memories' own records and read
  back by its import (memories.importer), all or nothing with the rest of the file.
- Bulk actions, for what the memory list may do to selected memories in another app's
  tables (review's suspend, unsuspend, bury, review now): memories.services.bulk_actions
  offers them beside its own and runs them in its transaction.

tests/memories/test_hooks.py pins who is connected, so a receiver cannot silently vanish
(tests/memories/test_add_bulk_actions.py pins the bulk actions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from django.db.models import QuerySet
from django.dispatch import Signal

if TYPE_CHECKING:
    from memories.models import Memory, Namespace

# Memories stored by memory_create / memory_bulk_create (agents, people, bulk). Arguments:
# memories (list[Memory], saved, with namespace loaded). Review gives personal namespaces'
# memories their cards.
memories_created = Signal()

# Memories written by a namespace import (their cards, if any, come from the file).
# Arguments: memories (list[Memory], saved). Recall writes their vectors' sign codes.
memories_imported = Signal()

# A tracked recall returned these memories (after memories_track_recall wrote the boost and
# the events). Arguments: memory_ids (list[int], direct hits, best first), token (the API
# token or None), now. Review grades due cards as implicit reviews (seed 000, issue 7).
memories_recalled = Signal()


class ImportContext(Protocol):
    """What a transfer part may use of the running import (memories.importer._Importer)."""

    namespace: Namespace
    line: int
    new_ids: dict[int, int]  # old memory id -> new id, for memories already written
    # Old ids of memory lines not stored: a memory of the namespace holds their text
    # (new_ids maps them to it). Records that describe such a copy are left out.
    deduplicated: set[int]

    def valid(self, shape: type, record: dict[str, Any]) -> dict[str, Any]: ...
    def seen(self, old: int, name: str = "memory") -> int: ...
    def refuse(self, *texts: str) -> Exception: ...
    def write(self, rows: list[tuple[int, Any]], *, ids: bool = False) -> None: ...
    def flush_memories(self) -> None: ...
    def not_written(self, kind: str, count: int = 1) -> None: ...


class PartImport(Protocol):
    def read(self, kind: str, record: dict[str, Any]) -> None:
        """Validate one record of a kind the part owns and buffer it (may write a batch)."""

    def finish(self) -> None:
        """Write what is buffered; called once, after the memories' own records."""


class TransferPart(Protocol):
    """Records another app keeps per memory, carried in a namespace's export."""

    record_types: tuple[str, ...]

    def export(
        self, *, memories: QuerySet[Memory], ceiling: int, encode: Callable[[Any], Any]
    ) -> Iterator[dict[str, Any]]:
        """The records of these memories (the ones the export may show), type included,
        leaving out what was written above `ceiling` (a record that keeps its own level)."""

    def start_import(self, context: ImportContext) -> PartImport: ...


_transfer_parts: list[TransferPart] = []


def transfer_part_register(part: TransferPart) -> None:
    """Add a part to every namespace export and import (from an AppConfig.ready())."""
    taken = {kind for other in _transfer_parts for kind in other.record_types}
    clash = taken.intersection(part.record_types)
    if clash:
        raise ValueError(f"Record types registered twice: {sorted(clash)}")
    _transfer_parts.append(part)


def transfer_parts() -> tuple[TransferPart, ...]:
    return tuple(_transfer_parts)


@dataclass(frozen=True)
class BulkAction:
    """An action on the memories a person selects on the memory list: another app's,
    registered here, or one of memories' own (memories.services.bulk_actions).

    `run(memories=..., user=..., now=...)` acts on the memories of the QuerySet (the
    person's own, within their ceiling: the list resolves the ids) and returns how many
    rows it changed. It runs inside the bulk action's transaction, so an error writes
    nothing. `question` and `done` are formatted with label, count, memories ("memory" or
    "memories", agreeing with count), s ("s" unless count is 1) and, for `done`, selected.
    `parameter` names what the list asks for with the action; only memories' own actions
    take one (memories.services.bulk_actions)."""

    name: str
    label: str
    run: Callable[..., int]
    question: str = "{label} {count} {memories}?"
    done: str = "{label}: {count} of {selected} selected changed."
    parameter: str = ""


_bulk_actions: list[BulkAction] = []


def bulk_action_register(action: BulkAction) -> None:
    """Offer an action on the memory list (from an AppConfig.ready())."""
    if any(other.name == action.name for other in _bulk_actions):
        raise ValueError(f"Bulk action registered twice: {action.name!r}")
    if action.parameter:
        raise ValueError(
            f"Bulk action {action.name!r}: only memories' own actions take a parameter"
        )
    _bulk_actions.append(action)


def bulk_actions() -> tuple[BulkAction, ...]:
    return tuple(_bulk_actions)
