"""recall@k of the recall pipeline on a LoCoMo-format file: `manage.py eval_recall FILE`.

The evaluation itself is benchmarks.locomo (how the conversations are loaded and the
questions scored); this command reads the options and prints the figures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.api_client import ApiClient
from benchmarks.locomo import evaluate, read_locomo
from recall.pipeline import RecallConfig
from recall.stages import ALL_STAGES


class Command(BaseCommand):
    help = "recall@k of the recall pipeline on a LoCoMo-format JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="LoCoMo-format JSON (a list of conversations)")
        parser.add_argument("--k", default="1,5,10", help="comma-separated k values")
        parser.add_argument("--fusion", choices=("penalty", "rrf"), help="override RECALL_FUSION")
        parser.add_argument(
            "--stages", help=f"comma-separated subset of {','.join(ALL_STAGES)} (default all)"
        )
        parser.add_argument(
            "--embed",
            action="store_true",
            help="embed the turns with EMBEDDING_PROVIDER and turn Se on",
        )
        parser.add_argument("--provider", help="embedding provider for --embed")
        parser.add_argument(
            "--captions", action="store_true", help="append shared images' captions to turns"
        )
        parser.add_argument(
            "--no-associations", action="store_true", help="do not link neighbouring turns"
        )
        parser.add_argument("--mmr-lambda", type=float, help="override RECALL_MMR_LAMBDA")
        parser.add_argument("--keyword-boost", type=float)
        parser.add_argument("--association-spread", type=float)
        parser.add_argument("--episode-boost", type=float)
        parser.add_argument("--temporal-boost", type=float)
        parser.add_argument("--candidate-cap", type=int)
        parser.add_argument(
            "--no-short-circuit",
            action="store_true",
            help="run Se and Ss even when Sf fills the limit (to measure what they add)",
        )
        parser.add_argument("--conversations", type=int, help="only the first N conversations")
        parser.add_argument("--json", dest="json_out", help="write the figures to this file")
        parser.add_argument(
            "--floor-file",
            help="fail (exit 1) when recall at the largest k is below the number in this file "
            "(the regression gate: .recall-floor)",
        )
        parser.add_argument("--keep", action="store_true", help="keep the namespaces")
        parser.add_argument(
            "--http",
            metavar="URL",
            help="go through the REST API of the server at URL (e.g. http://127.0.0.1:8000): "
            "the same loading and questions, over real HTTP; its settings rule recall, and "
            "its namespaces stay (the API deletes none)",
        )
        parser.add_argument(
            "--token",
            help="with --http: a write token for all namespaces (default: $ENGRAM_TOKEN)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Latency is reported as production would see it: without the query log.
        settings.DEBUG = False
        path = Path(options["file"])
        data = read_locomo(path, options["conversations"])
        try:
            ks = sorted({int(k) for k in options["k"].split(",") if k.strip()})
        except ValueError:
            raise CommandError("--k takes comma-separated integers, e.g. 1,5,10") from None
        if not ks or ks[0] < 1:
            raise CommandError("--k values must be positive")
        stages = None
        if options["stages"]:
            stages = [s.strip() for s in options["stages"].split(",") if s.strip()]
            unknown = [s for s in stages if s not in ALL_STAGES]
            if unknown:
                raise CommandError(f"unknown stages {unknown}")
        overrides: dict[str, Any] = {}
        for option, key in (
            ("fusion", "fusion"),
            ("mmr_lambda", "mmr_lambda"),
            ("keyword_boost", "keyword_boost"),
            ("association_spread", "association_spread"),
            ("episode_boost", "episode_boost"),
            ("temporal_boost", "temporal_boost"),
            ("candidate_cap", "candidate_cap"),
        ):
            if options[option] is not None:
                overrides[key] = options[option]
        if options["no_short_circuit"]:
            overrides["short_circuit"] = False
        if options["embed"]:
            overrides["embedding_enabled"] = True
            if options["provider"]:
                overrides["embedding_provider"] = options["provider"]
        config = RecallConfig.from_settings(**overrides)
        floor = _floor(options["floor_file"]) if options["floor_file"] else None
        http = None
        if options["http"]:
            if overrides:
                raise CommandError(
                    "--http evaluates the server as it is configured: recall options "
                    "(--fusion, --embed, --mmr-lambda, ...) are the server's settings"
                )
            token = options["token"] or os.environ.get("ENGRAM_TOKEN", "")
            if not token:
                raise CommandError("--http needs --token (or ENGRAM_TOKEN)")
            http = ApiClient(options["http"], token)
        elif options["token"]:
            raise CommandError("--token goes with --http")
        figures = evaluate(
            data,
            file=str(path),
            ks=ks,
            config=config,
            stages=stages,
            captions=options["captions"],
            associations=not options["no_associations"],
            embed=options["embed"],
            keep=options["keep"],
            http=http,
        )
        self._print(figures, ks)
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, default=str))
        if floor is not None:
            figure = figures["recall"][ks[-1]]
            if round(figure, 3) < floor:  # the figure as printed
                raise CommandError(
                    f"recall@{ks[-1]} {figure:.3f} is below the floor {floor:.3f} "
                    f"({options['floor_file']}): recall got worse"
                )
            self.stdout.write(f"recall@{ks[-1]} {figure:.3f} is at or above the floor {floor:.3f}")

    def _print(self, figures: dict, ks: list[int]) -> None:
        out = self.stdout.write
        conf = figures["configuration"]
        out(f"LoCoMo evaluation of {figures['file']}")
        if conf["server"]:
            out(f"through the REST API of {conf['server']} (the server's recall settings)")
        out(
            f"{figures['conversations']} conversations, {figures['memories']} memories, "
            f"{figures['questions']} questions (categories 1-4)"
        )
        if figures["ignored_evidence"]:
            out(
                f"{figures['ignored_evidence']} evidence ids name no turn of their "
                "conversation and are not scored"
            )
        if not conf["server"]:
            out(
                f"fusion={conf['fusion']} stages={','.join(conf['stages'])} "
                f"embeddings={conf['embeddings']} captions={conf['captions']} "
                f"associations={conf['associations']} mmr_lambda={conf['mmr_lambda']} "
                f"short_circuit={conf['short_circuit']}"
            )
        out("overall     " + "  ".join(f"recall@{k} {figures['recall'][k]:.3f}" for k in ks))
        for category, row in figures["by_category"].items():
            out(
                f"category {category} (n={row['questions']}) "
                + "  ".join(f"recall@{k} {row[k]:.3f}" for k in ks)
            )
        lat = figures["latency_ms"]
        out(f"latency ms  p50 {lat['p50']:.1f}  p95 {lat['p95']:.1f}  mean {lat['mean']:.1f}")
        if figures["embedding_seconds"]:
            out(f"document embedding took {figures['embedding_seconds']} s")


def _floor(path: str) -> float:
    """The number in the floor file; CommandError when it is missing or not a fraction."""
    try:
        floor = float(Path(path).read_text().split()[0])
    except (OSError, IndexError, ValueError) as exc:
        raise CommandError(f"cannot read a recall floor from {path}: {exc}") from exc
    if not 0.0 <= floor <= 1.0:
        raise CommandError(f"the recall floor in {path} must be between 0 and 1, not {floor}")
    return floor
