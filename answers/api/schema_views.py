"""The OpenAPI schema and its Swagger UI, with errors and OPTIONS in JSON like every other /api/ URL.

drf-spectacular's views render whatever they answer with their own renderers: a `405` came
back as YAML from the schema and as HTML from Swagger UI, and `OPTIONS` on Swagger UI was a
`500` (its template renderer has nothing to render the metadata with).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response


class JSONErrorsAndOptions:
    """A DRF view whose error responses and `OPTIONS` answer are JSON, whatever it renders otherwise."""

    def finalize_response(
        self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        if isinstance(response, Response) and (response.exception or request.method == "OPTIONS"):
            renderer = JSONRenderer()
            request.accepted_renderer = renderer
            request.accepted_media_type = renderer.media_type
        finalized: HttpResponseBase = super().finalize_response(  # type: ignore[misc]
            request, response, *args, **kwargs
        )
        return finalized


class SchemaView(JSONErrorsAndOptions, SpectacularAPIView):  # type: ignore[misc]
    """GET /api/schema/: the OpenAPI schema (YAML, or JSON with ?format=json)."""


class DocsView(JSONErrorsAndOptions, SpectacularSwaggerSplitView):  # type: ignore[misc]
    """GET /api/docs/: Swagger UI over the schema."""
