"""Time Se (recall.stages.embeddings.embedding_search) on a large namespace of synthetic vectors.

The namespace (built once and reused while its parameters are unchanged) and the
measurement are benchmarks.vectors's. Printed: p50/p95 of embedding_search as the
pipeline calls it (limit 3 x --limit), the median over --runs runs of --queries queries;
recall of the two-step search against the exact one; and the exact scan of every vector,
which is what Se did before the codes, for comparison.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from benchmarks import vectors
from config.db import vendor


class Command(BaseCommand):
    help = "Build (once) N synthetic memory vectors and time Se's two-step search on them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--size", type=int, default=100_000, help="memories (100,000)")
        parser.add_argument("--dim", type=int, default=384, help="dimensions (384)")
        parser.add_argument(
            "--clusters", type=int, default=0, help="cluster centres (default: size / 100)"
        )
        parser.add_argument(
            "--noise", type=float, default=1.0, help="noise length relative to a centre (1.0)"
        )
        parser.add_argument(
            "--offset", type=float, default=0.0, help="length of a direction shared by all (0)"
        )
        parser.add_argument("--queries", type=int, default=100, help="queries per run (100)")
        parser.add_argument("--runs", type=int, default=3, help="timed runs; medians (3)")
        parser.add_argument("--limit", type=int, default=10, help="recall limit (10)")
        parser.add_argument(
            "--rerank", type=int, default=None, help="multiplier (RECALL_VECTOR_RERANK)"
        )
        parser.add_argument(
            "--exact-queries", type=int, default=10, help="queries timed on the exact scan (10)"
        )
        parser.add_argument("--rebuild", action="store_true", help="rebuild the namespace")

    def handle(self, *args, **options) -> None:
        size, dim = options["size"], options["dim"]
        clusters = options["clusters"] or max(1, size // 100)
        noise, offset = options["noise"], options["offset"]
        limit = options["limit"]
        rerank = options["rerank"] or settings.RECALL_VECTOR_RERANK
        stamp = {
            "version": vectors.VERSION,
            "size": size,
            "dim": dim,
            "clusters": clusters,
            "noise": noise,
            "offset": offset,
        }
        namespace, built = vectors.corpus(stamp, rebuild=options["rebuild"], progress=self._write)
        self.stdout.write(
            f"{size:,} vectors of {dim} dimensions around {clusters:,} centres "
            f"(noise {noise}, shared offset {offset}) in namespace {namespace.slug} "
            f"on {vendor()}: {built}"
        )
        figures = vectors.measure(
            namespace,
            stamp,
            queries=options["queries"],
            runs=options["runs"],
            limit=limit,
            rerank=rerank,
            exact_queries=options["exact_queries"],
            progress=self._write,
        )
        se_limit = figures["se_limit"]
        self.stdout.write(
            f"two-step (codes -> best {figures['kept']} -> cosine, limit {se_limit}): "
            f"p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms "
            f"(medians of {options['runs']} runs of {figures['queries']} queries)"
        )
        self.stdout.write(
            f"recall of the exact top {limit}: {figures['found_top']:.3f} in the two-step "
            f"top {limit}, {figures['found_list']:.3f} in its {se_limit} results "
            f"(worst query {figures['worst_found_top']:.1f}); mean cosine of its top {limit} = "
            f"{figures['cosine_ratio']:.4f} x the exact top {limit}'s"
        )
        if figures["exact_queries"]:
            self.stdout.write(
                f"exact scan of all {figures['vectors']:,} vectors (SQL + numpy): "
                f"p50 {figures['exact_p50_ms']:.1f} ms, "
                f"p95 {figures['exact_p95_ms']:.1f} ms ({figures['exact_queries']} queries)"
            )

    def _write(self, text: str, ending: str = "\n") -> None:
        self.stdout.write(text, ending=ending)
        self.stdout.flush()
