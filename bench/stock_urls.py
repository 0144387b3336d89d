"""The project's routes, with an answer's event stream served by django-eventstream's own view (baseline)."""

from __future__ import annotations

import uuid

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.urls import include, path
from django_eventstream.views import events as eventstream_events
from rest_framework.authentication import TokenAuthentication

from answers import selectors
from answers.sse.channels import channel_for


def stock_answer_events(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """The project's access check, then the package's view as shipped (a sync view; its stream is async)."""
    if request.headers.get("Authorization", "").startswith("Token "):
        authenticated = TokenAuthentication().authenticate(request)  # type: ignore[arg-type]
        if authenticated is not None:
            request.user = authenticated[0]
    access = selectors.answer_access(answer_id=answer_id, user=request.user)
    if access is selectors.Access.SIGN_IN:
        return JsonResponse({"detail": "Sign in to read this answer."}, status=403)
    if access is selectors.Access.MISSING:
        return JsonResponse({"detail": "No answer has this id."}, status=404)
    response: HttpResponseBase = eventstream_events(request, channels=[channel_for(answer_id)])
    return response


urlpatterns = [
    path("answers/<uuid:answer_id>/events/", stock_answer_events),
    path("", include("project.urls")),
]
