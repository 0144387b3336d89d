"""Django's error views for requests Django itself refuses: JSON under /api/, the stock pages elsewhere."""

from __future__ import annotations

from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Requests Django refuses before any view: a disallowed Host, a body over the size limit..."""
    if request.path.startswith(API_PREFIX):
        if isinstance(exception, DisallowedHost):
            detail = "This server does not answer for that Host header."
        elif isinstance(exception, RequestDataTooBig):
            detail = "The request body is too large."
        else:
            detail = "Bad request."
        return JsonResponse({"detail": detail}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return defaults.permission_denied(request, exception)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return defaults.server_error(request)
