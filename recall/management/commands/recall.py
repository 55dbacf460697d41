"""Recall from the command line, printing what seed 002's CLI example prints.

manage.py recall "what database does the project use?" --namespace work --limit 5
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.models import Classification, Memory, Namespace
from recall.services import recall_run
from recall.stages import ALL_STAGES


def render(result, limit: int) -> list[str]:
    """The seed's report: the query, one line per stage, the funnel, then the results."""
    lines = [f'Query: "{result.query}"', ""]
    for name, timing in result.stage_timings.items():
        if timing["skipped"]:
            lines.append(f"Stage {name}: skipped ({timing['reason']})")
            continue
        hits = timing["hits"]
        line = f"Stage {name}: {hits} hit{'s' if hits != 1 else ''} ({timing['ms']:.0f}ms)"
        if timing.get("detail"):
            line += f" — {timing['detail']}"
        lines.append(line)
    lines.append("")
    lines.append(
        f"→ {result.candidates} candidates → MMR rerank → top {len(result.results)} returned"
    )
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    lines.append("")
    for rank, hit in enumerate(result.results, start=1):
        flags = []
        if hit.associative:
            flags.append("associative")
        if hit.review:
            flags.append("review")
        topic = hit.metadata.get("topic") or "-"
        suffix = f" [{', '.join(flags)}]" if flags else ""
        lines.append(
            f"{rank:>2}. {hit.score:.3f}  #{hit.memory_id} ({topic}, {'+'.join(hit.stages)})"
            f"{suffix}"
        )
        lines.append(f"    {hit.content[:160]}")
        for warning in hit.warnings:
            lines.append(f"    {warning}")
    for digest in result.digests:
        lines.append(f"digest {digest.period} {digest.period_start}: {digest.text[:120]}")
    for relation in result.relations:
        lines.append(f"{relation.text} (score: {relation.score:.1f})")
    return lines


class Command(BaseCommand):
    help = "Recall memories for a query, showing each stage's hits and time."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--namespace", required=True, help="namespace slug")
        parser.add_argument("--owner", help="owner's username, when several own the slug")
        parser.add_argument("--topic")
        parser.add_argument("--tier", choices=[t.value for t in Memory.Tier])
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument(
            "--ceiling",
            choices=[c.label for c in Classification],
            default=Classification.RESTRICTED.label,
            help="highest classification to show (default restricted: this is an admin tool)",
        )
        parser.add_argument("--stages", help=f"comma-separated subset of {','.join(ALL_STAGES)}")
        parser.add_argument("--include-expired", action="store_true")
        parser.add_argument(
            "--track", action="store_true", help="count this as a recall (boost and track)"
        )
        parser.add_argument("--session", default="", help="session id recorded when tracking")

    def handle(self, *args: Any, **options: Any) -> None:
        namespaces = Namespace.objects.filter(slug=options["namespace"])
        if options["owner"]:
            namespaces = namespaces.filter(owner__username=options["owner"])
        found = list(namespaces[:2])
        if not found:
            raise CommandError(f"no namespace {options['namespace']!r}")
        if len(found) > 1:
            raise CommandError("several owners have that slug: add --owner")
        stages = [s.strip() for s in options["stages"].split(",")] if options["stages"] else None
        try:
            result = recall_run(
                namespaces=found,
                ceiling=Classification.from_name(options["ceiling"]),
                query=options["query"],
                limit=options["limit"],
                topic=options["topic"],
                tier=options["tier"],
                include_expired=options["include_expired"],
                stages=stages,
                track=options["track"],
                session_id=options["session"],
            )
        except ValidationError as exc:
            messages = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
            raise CommandError(messages) from None
        self.stdout.write("\n".join(render(result, options["limit"])))
