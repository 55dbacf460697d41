"""Namespace export and import endpoints (JSON Lines), and background import jobs."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import error_body
from memories import import_jobs, importer, transfer
from memories.auth import Scope
from memories.models import BackgroundRun


class NamespaceExportView(APIView):
    @extend_schema(
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR},
        tags=["namespaces"],
        summary="Export a namespace as streamed JSON Lines (within this caller's ceiling)",
        description="See docs/api.md for the record types. Ends with an `end` record counting "
        "the lines, so a truncated copy is detected on import.",
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        response = StreamingHttpResponse(
            transfer.namespace_export(namespace=namespace, ceiling=scope.ceiling),
            content_type="application/x-ndjson",
        )
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="{slug}-{stamp}.jsonl"'
        return response


class JSONLinesParser(BaseParser):
    """Leaves the body unread: the import view streams its lines itself."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream


class NamespaceImportView(APIView):
    parser_classes = [JSONLinesParser]

    @extend_schema(
        request={"application/x-ndjson": OpenApiTypes.STR},
        parameters=[
            OpenApiParameter(
                "settings",
                str,
                enum=["keep", "apply"],
                description="`apply` copies the header's namespace settings; default `keep`.",
            )
        ],
        responses={201: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        tags=["namespaces"],
        summary="Import a JSON Lines export into this namespace, all or nothing",
        description="Memories get new ids; the response maps old ids to new (a line whose "
        "text the namespace holds maps to that memory, counted under `deduplicated`). A malformed, "
        "truncated or out-of-scope line writes nothing and the error names the line "
        "(`fields` maps `line N` to its fields' errors). A body over API_MAX_BODY_BYTES is "
        "imported in the background: 202 with a job to poll at `url`.",
        examples=[
            OpenApiExample(
                "Result",
                response_only=True,
                status_codes=["201"],
                value={
                    "counts": {"memory": 2, "deduplicated": 1, "association": 1},
                    "memory_ids": {"17": 301, "18": 302, "19": 77},
                },
            ),
            OpenApiExample(
                "A refused line",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": {
                        "status": 400,
                        "code": "invalid_import",
                        "message": "line 7: keywords.0: Not a valid string.",
                        "fields": {"line 7": ["keywords.0: Not a valid string."]},
                    }
                },
            ),
            OpenApiExample(
                "Queued",
                response_only=True,
                status_codes=["202"],
                value={
                    "job": 12,
                    "status": "running",
                    "url": "https://engram.example.com/api/v1/namespaces/work/import/12",
                },
            ),
        ],
    )
    def post(self, request: Request, slug: str) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        mode = request.query_params.get("settings", "keep")
        if mode not in ("keep", "apply"):
            raise serializers.ValidationError({"settings": ["Either keep or apply."]})
        content_type = request.content_type.split(";")[0].strip()
        if content_type not in ("application/x-ndjson", "application/jsonl", "text/plain"):
            raise UnsupportedMediaType(content_type)
        options = {
            "namespace": namespace,
            "ceiling": scope.ceiling,
            "actor": request.user,
            "apply_settings": mode == "apply",
        }
        # ApiBodyLimitMiddleware has checked the header against API_IMPORT_MAX_BYTES.
        if int(request.META.get("CONTENT_LENGTH") or 0) > settings.API_MAX_BODY_BYTES:
            # More than any other request may send: more than a web worker's timeout
            # allows to import (docs/api.md has the rates), so the worker does it.
            run = import_jobs.import_job_create(body=request._request, **options)
            url = request.build_absolute_uri(
                reverse("api-import-job", kwargs={"slug": slug, "job": run.pk})
            )
            return Response(
                {"job": run.pk, "status": run.status, "url": url},
                status=status.HTTP_202_ACCEPTED,
                headers={"Location": url},
            )
        try:
            result = importer.namespace_import(lines=request._request, **options)
        except importer.ImportFailed as refused:
            fields = {refused.field: refused.messages}
            return Response(error_body(400, refused.api_code, str(refused), fields), status=400)
        return Response(result.as_dict(), status=status.HTTP_201_CREATED)


class NamespaceImportJobView(APIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        tags=["namespaces"],
        summary="The state of a background import: running, ok (counts, ids) or failed",
        examples=[
            OpenApiExample(
                "Refused",
                response_only=True,
                status_codes=["200"],
                value={
                    "job": 12,
                    "status": "failed",
                    "started_at": "2026-11-24T09:00:00Z",
                    "finished_at": "2026-11-24T09:00:41Z",
                    "error": {
                        "status": 400,
                        "code": "invalid_import",
                        "message": "line 70412: embedding: Not valid base64.",
                        "fields": {"line 70412": ["embedding: Not valid base64."]},
                    },
                },
            )
        ],
    )
    def get(self, request: Request, slug: str, job: int) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        jobs = BackgroundRun.objects.filter(kind=import_jobs.IMPORT_KIND, namespace=namespace)
        run = get_object_or_404(jobs, pk=job)
        if not import_jobs.import_job_visible(run, scope.ceiling):
            raise Http404
        return Response(import_jobs.import_job_state(run))
